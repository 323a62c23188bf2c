"""What ``trimtab execute`` shows people: the dry run's table, the live progress bar, the end.

Tables go to stdout, the progress bar and notes to stderr; with ``--json`` none of this is
used (the dry run prints one JSON document, a run one event per line).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from trimtab._format import human_bytes, plural
from trimtab.cli._common import err, figures_table, out, printable, progress_bar
from trimtab.execute.dryrun import DryRun
from trimtab.execute.outcome import Outcome
from trimtab.execute.rates import format_rate
from trimtab.execute.stats import RunStats
from trimtab.plans.target import Check

__all__ = ["ProgressView", "duration", "print_dry_run", "print_outcome"]

SHOWN = 20  # READY/DONE rows a dry run lists (CHANGED and MOVING rows are always listed)


def duration(seconds: float | None) -> str:
    """``1h 02m``, ``3m 20s``, ``12s``; ``unknown`` for None."""
    if seconds is None:
        return "unknown"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


PRIMARY = ("replicas", "owner")  # the key a state is about: shown bare, the others as key=value


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if value is None:
        return "(next lookup)"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _short(state: Mapping[str, Any]) -> str:
    """A state as people read it in a narrow terminal: ``5,1,3 isr=5,1``, ``broker-1:8080``;
    the exact JSON is in ``--json``."""
    if not state:
        return "-"
    parts = [_value(state[k]) for k in PRIMARY if k in state]
    parts += [f"{k}={_value(v)}" for k, v in state.items() if k not in PRIMARY]
    return printable(" ".join(parts))


def _actions_table(dry: DryRun) -> Table:
    """The dry run's actions, with only the columns that say something: the kind when it
    varies, the live state when some action is no longer ready (ready means as planned)."""
    pulsar = dry.plan.system == "pulsar"
    shown = []
    quiet = 0  # READY/DONE rows listed so far: one pass, a plan may hold 10,000 actions
    for action, seen in dry.seen:
        if seen.check in (Check.READY, Check.DONE):
            if quiet >= SHOWN:
                continue
            quiet += 1
        shown.append((action, seen))
    kinds = {(a.kind, a.required) for a, _ in shown}
    with_kind = len(kinds) > 1 or any(not required for _, required in kinds)
    with_live = any(seen.check is not Check.READY for _, seen in shown)
    columns = ["bundle" if pulsar else "partition"] + (["kind"] if with_kind else [])
    columns += ["check", "planned"] + (["live"] if with_live else [])
    columns += ["target", "throughput" if pulsar else "bytes"]
    table = figures_table(
        columns,
        text=("bundle", "partition", "kind", "check", "planned", "live", "target"),
        title=f"{dry.plan.system} plan for {printable(dry.plan.cluster)}",
    )
    for action, seen in shown:
        moved = float(action.effect.get("throughput", 0) or 0)
        row = [printable(action.item)]
        if with_kind:
            row.append(action.kind if action.required else f"{action.kind} (optional)")
        row += [
            seen.check.value + (f": {printable(seen.why)}" if seen.why else ""),
            _short(action.precondition),
        ]
        if with_live:
            row.append("=" if seen.check is Check.READY else _short(seen.live))
        row += [
            _short(action.target),
            f"{human_bytes(moved)}/s" if pulsar else human_bytes(action.bytes),
        ]
        table.add_row(*row)
    return table


def print_dry_run(dry: DryRun, plan_arg: str) -> None:
    """The dry run for people: the actions, then the digest, counts and estimate."""
    pulsar = dry.plan.system == "pulsar"
    table = _actions_table(dry)
    out.print(table)
    counts = dry.counts()
    hidden = counts["ready"] + counts["done"] - SHOWN  # the rows _actions_table left out
    if hidden > 0:
        out.print(f"… and {plural(hidden, 'more action')} ready or done (--json lists all)")
    est = dry.estimate
    batches = f"{est.batches} batch" + ("" if est.batches == 1 else "es")
    out.print(
        f"would run {counts['ready']}, already done {counts['done']}, moving {counts['moving']}, "
        f"no longer holding {counts['changed']}; {batches} of at most {dry.limits.max_in_flight}"
    )
    if pulsar:
        cooldown = float(dry.plan.settings.get("broker_cooldown_s", 0) or 0)
        out.print(f"estimated duration ({cooldown:g} s between cycles): {duration(est.seconds)}")
    elif est.seconds is None and any(a.bytes == 0 for a in dry.plan.actions):
        out.print("estimated duration: unknown, the plan has no partition sizes (--log-dirs)")
    elif dry.rate is None and est.seconds is None:
        out.print("estimated duration: unknown without --throttle (give the rate the run will use)")
    else:
        out.print(f"estimated duration at {format_rate(dry.rate)}: {duration(est.seconds)}")
    out.print(f"digest: {dry.plan.digest}", soft_wrap=True)
    if counts["changed"]:
        out.print("some preconditions no longer hold: re-plan (--replan) before approving")
    else:
        out.print(
            f"to run it: trimtab execute {printable(plan_arg)} --approve {dry.plan.digest}",
            soft_wrap=True,  # one line to copy, however narrow the terminal
        )


def print_outcome(
    outcome: Outcome, stats: RunStats, warnings: list[str], *, bytes_moved: bool = True
) -> None:
    """The end of a run: figures, then the diff when a precondition no longer held.
    ``bytes_moved`` False for a system whose actions copy no data (Pulsar's unloads)."""
    counts = stats.by_state()
    by_state: dict[str, int] = {}
    for (state, _), n in counts.items():
        by_state[state] = by_state.get(state, 0) + n
    columns = ["outcome", "done", "failed", "cancelled", "left"]
    table = figures_table(columns + (["bytes moved"] if bytes_moved else []), text=("outcome",))
    left = stats.actions_total - by_state.get("done", 0)
    row = [
        printable(outcome.reason),
        str(by_state.get("done", 0)),
        str(by_state.get("failed", 0)),
        str(by_state.get("cancelled", 0)),
        str(left),
    ]
    table.add_row(*row, *([human_bytes(stats.bytes_moved)] if bytes_moved else []))
    out.print(table)
    if outcome.diffs:
        diff = figures_table(
            ("action", "item", "planned", "live", "why"),
            text=("action", "item", "planned", "live", "why"),
            title="no longer holds",
        )
        for d in outcome.diffs:
            diff.add_row(
                printable(d.action_id),
                printable(d.item),
                _short(d.planned),
                _short(d.live),
                printable(d.why),
            )
        out.print(diff)
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {printable(warning)}", highlight=False)


class _Eta(ProgressColumn):
    """The ETA from the observed rate (the run's stats), not rich's own estimate."""

    def __init__(self, stats: RunStats) -> None:
        super().__init__()
        self.stats = stats

    def render(self, task: Task) -> Text:
        return Text(f"ETA {duration(self.stats.eta())}")


class ProgressView:
    """A listener drawing actions and bytes done on stderr (only on a terminal)."""

    def __init__(self, stats: RunStats, *, quiet: bool) -> None:
        self.stats = stats
        self.bar: Progress = progress_bar(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[moved]}"),
            _Eta(stats),
            TimeElapsedColumn(),
            quiet=quiet,
        )
        self.task = self.bar.add_task("actions", total=stats.actions_total, moved="")

    def __call__(self, rec: Mapping[str, Any]) -> None:
        s = self.stats
        moved = f"{s.bytes_moved:,}/{s.bytes_total:,} B" if s.bytes_total else ""
        self.bar.update(self.task, completed=s.actions_done, moved=moved)

    def __enter__(self) -> ProgressView:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()
