"""``trimtab shed`` on Pulsar's own load reports: ``--load-reports DIR``, ``--zk HOST:PORT``,
and the live loop ``--follow``.

Without ``--follow`` the reports are one snapshot, planned and printed exactly as the tables
are (:func:`trimtab.cli.shed_json.plan_json`). With ``--follow`` one cycle runs per interval
(``loadBalancerSheddingIntervalMinutes``, or ``--interval`` seconds) on the reports as they
are then, with the shedder's state and the load history kept between cycles
(:mod:`trimtab.systems.pulsar.follow`); each cycle prints one JSON line (``--json``) or a table,
and its unload commands, with the REST call each stands for, are appended to ``--out``.
SIGINT and SIGTERM end the loop after the cycle under way; the exit status is then 0.
"""

from __future__ import annotations

import json
import math
import random
import signal
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from types import FrameType

from rich.live import Live
from rich.table import Table

from trimtab.cli._common import err, out
from trimtab.cli.shed_json import iso_time
from trimtab.cluster import ClusterState
from trimtab.config import Config
from trimtab.contract import RejectedRow
from trimtab.errors import TrimtabError
from trimtab.shedding import LoadModel, advise, shedder_for
from trimtab.shedding.filters import Policies
from trimtab.shedding.recommend import Recommendation
from trimtab.shedding.telemetry import Built
from trimtab.systems.pulsar.admin import unload_command, unload_rest
from trimtab.systems.pulsar.cycle_json import tick_json
from trimtab.systems.pulsar.follow import DirReports, Follower, Reading, Tick
from trimtab.systems.pulsar.load_reports import LoadReport
from trimtab.systems.pulsar.snapshots import check_report, report_cluster, report_snapshot
from trimtab.systems.pulsar.watcher import ZkReports
from trimtab.systems.zookeeper import zk_security

__all__ = ["check_sources", "follow_reports", "plan_reports"]

#: Cycles the live table shows on a terminal.
LIVE_ROWS = 20
#: The cluster name reports are given when ``--cluster`` names none (a report holds none).
DEFAULT_CLUSTER = "pulsar"


def check_sources(
    *,
    zk: str | None,
    load_reports: Path | None,
    tables: dict[str, Path | None],
    follow: bool,
    interval: float | None,
    one_shot: Sequence[str] = (),
) -> bool:
    """Whether the reports are the input; refuses options that do not go together
    (``one_shot``: the options given that only a single plan reads, refused with --follow)."""
    if zk is not None and load_reports is not None:
        raise TrimtabError("give either --zk or --load-reports, not both")
    reports = zk is not None or load_reports is not None
    given = [name for name, path in tables.items() if path is not None]
    if reports and given:
        raise TrimtabError(
            f"{', '.join(given)} cannot be combined with --zk or --load-reports: the reports "
            "hold the loads, and the brokers' limits are their limit fields"
        )
    if not reports:
        missing = [name for name, path in tables.items() if path is None]
        if missing:
            raise TrimtabError(
                f"missing {', '.join(missing)}: give --inventory, --brokers and --bundles, "
                "or Pulsar's load reports with --load-reports DIR or --zk HOST:PORT"
            )
    if follow and not reports:
        raise TrimtabError("--follow needs live reports: --zk HOST:PORT or --load-reports DIR")
    if follow and one_shot:
        raise TrimtabError(
            f"{', '.join(one_shot)} cannot be combined with --follow, which runs one cycle per "
            "interval on the wall clock (--out FILE gets each cycle's commands)"
        )
    if interval is not None and not follow:
        raise TrimtabError("--interval is the period of --follow: give --follow too")
    if interval is not None and not (math.isfinite(interval) and 0.01 <= interval <= 86_400):
        raise TrimtabError(f"--interval must be from 0.01 to 86400 seconds, got {interval}")
    return reports


def _refuse_all(load_reports: Path, refused: list[RejectedRow]) -> None:
    """Saved reports of which none could be read: the first reason, said directly (what the
    file seems to be and how to make a report), not as a cluster with nothing to shed."""
    first = refused[0]
    if load_reports.is_dir():
        raise TrimtabError(
            f"--load-reports {load_reports}: none of its {len(refused)} file(s) is a usable "
            f"load report; the first, {first.source}: {first.reason}"
        )
    raise TrimtabError(f"{first.source}: {first.reason}")


def _source(zk: str | None, load_reports: Path | None, cfg: Config) -> DirReports | ZkReports:
    if load_reports is not None:
        if not load_reports.exists():
            raise TrimtabError(f"--load-reports {load_reports}: no such file or directory")
        return DirReports(load_reports)
    assert zk is not None
    source = ZkReports(
        zk, session_timeout=cfg.bookie_info.zk_timeout_ms / 1000.0, security=zk_security(cfg)
    )
    source.start(timeout=cfg.bookie_info.zk_timeout_ms / 1000.0)
    return source


def plan_reports(
    *,
    zk: str | None,
    load_reports: Path | None,
    cfg: Config,
    cluster: str | None,
    now: float | None,
    cycles: int,
    until_balanced: bool,
    max_cycles: int,
    seed: int,
    policies: Policies | None = None,
    explicit: str | None = None,
) -> tuple[Recommendation, ClusterState, Built, float, list[RejectedRow]]:
    """One snapshot of the reports, planned as the tables are: (recommendation, cluster
    state, snapshot, time, refused). The time is ``now``, else the wall clock for ZooKeeper
    and the newest ``lastUpdate`` for saved reports (as the tables' newest ``ts``)."""
    source = _source(zk, load_reports, cfg)
    try:
        reading = source.read()
    finally:
        source.close()
    name = cluster or DEFAULT_CLUSTER
    reports = [e for e in reading.entries.values() if isinstance(e, LoadReport)]
    refused = [
        RejectedRow(e.source, 1, e.reason, {})
        for e in reading.entries.values()
        if not isinstance(e, LoadReport)
    ]
    if not reports and not refused:
        raise TrimtabError(f"no load reports under {zk or load_reports}")
    if not reports and load_reports is not None:
        _refuse_all(load_reports, refused)
    state = report_cluster(reports, name, silent=reading.entries)
    checked = [check_report(r, name) for r in reports]
    built = report_snapshot(state, checked, LoadModel.of(cfg.shedding))
    rejected = [*refused, *built.rejected]
    at = now if now is not None else time.time() if zk is not None else built.now
    advice = advise(
        built.snapshot,
        cfg.shedding,
        now=at,
        cycles=cycles,
        until_balanced=until_balanced,
        max_cycles=max_cycles,
        seed=seed,
        policies=policies,
        explicit=explicit,
        refused=[f"{r.source}: {r.reason}" for r in rejected],
    )
    if advice.recommendation is None:
        raise TrimtabError(f"cluster {name}: nothing to shed: {advice.nothing_to_shed}")
    return advice.recommendation, state, built, at, rejected


def follow_reports(
    *,
    zk: str | None,
    load_reports: Path | None,
    cfg: Config,
    cluster: str | None,
    interval: float | None,
    out_path: Path | None,
    seed: int,
    as_json: bool,
    policies: Policies | None = None,
) -> None:
    """The live loop until SIGINT or SIGTERM (see the module docstring)."""
    period = interval if interval is not None else cfg.shedding.interval_minutes * 60.0
    if period <= 0:
        raise TrimtabError("loadBalancerSheddingIntervalMinutes is 0: give --interval SECONDS")
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    source = _source(zk, load_reports, cfg)
    follower = Follower(
        shedder_for(cfg.shedding),
        LoadModel.of(cfg.shedding),
        cluster=cluster or DEFAULT_CLUSTER,
        rng=random.Random(seed),
        policies=policies,
    )
    shown: list[Tick] = []  # the cycles a terminal's live table shows
    live = Live(console=out, auto_refresh=False) if not as_json and out.is_terminal else None
    try:
        with live if live is not None else nullcontext():
            while not stop.is_set():
                started = time.monotonic()
                tick = follower.cycle(_read(source), time.time())
                if as_json:  # one line per cycle, flushed: a pipe reads each cycle as it ends
                    print(json.dumps(tick_json(tick, follower, cfg)), flush=True)
                elif live is not None:
                    shown = [*shown, tick][-LIVE_ROWS:]
                    live.update(_live_table(shown, follower, cfg), refresh=True)
                else:
                    _print_tick(tick, follower, cfg)
                for row in tick.rejected:
                    err.print(f"[yellow]refused:[/] {row.source}: {row.reason}", highlight=False)
                if out_path is not None:
                    _append_commands(out_path, tick)
                stop.wait(max(0.0, period - (time.monotonic() - started)))
    finally:
        source.close()
        for s, handler in previous.items():
            signal.signal(s, handler)


def _read(source: DirReports | ZkReports) -> Reading:
    """The source's reading; a directory that cannot be read is an unreadable registry."""
    try:
        return source.read()
    except TrimtabError:
        return Reading({}, ok=False)


def _print_tick(tick: Tick, follower: Follower, cfg: Config) -> None:
    doc = tick_json(tick, follower, cfg)
    outcome = doc["outcome"]
    timers = doc["timers"]
    head = (
        f"[bold]cycle {tick.number}[/] {doc['now']}  {len(doc['brokers'])} brokers  "
        f"{outcome['label']}/{outcome['reason']}  hit {timers['hit_count']}/"
        f"{timers['hit_count_threshold']}"
    )
    changes = [f"joined {', '.join(doc['joined'])}"] if doc["joined"] else []
    changes += [f"left {', '.join(doc['left'])}"] if doc["left"] else []
    changes += [f"stale {', '.join(doc['stale'])}"] if doc["stale"] else []
    out.print("  ".join([head, *changes]), highlight=False)
    if doc["transfers"]:
        table = Table(show_edge=False)
        for column in ("bundle", "from", "to", "MB/s", "reason"):
            table.add_column(column)
        for t in doc["transfers"]:
            table.add_row(
                t["bundle"],
                t["source"],
                t["destination"] or "(next lookup)",
                f"{t['throughput'] / 1e6:.1f}",
                t["reason"],
            )
        out.print(table)
    elif outcome["note"]:
        out.print(f"  {outcome['note']}", highlight=False)


def _live_table(ticks: list[Tick], follower: Follower, cfg: Config) -> Table:
    """The last cycles as one table, redrawn in place on a terminal."""
    table = Table(title=f"trimtab shed --follow: {follower.shedder.name} shedder, last cycles")
    for column in ("cycle", "time", "brokers", "outcome", "hit", "transfers", "changes", "note"):
        table.add_column(column, justify="right" if column in ("cycle", "brokers") else "left")
    for tick in ticks:
        doc = tick_json(tick, follower, cfg)
        moves = [f"{t['bundle']} {t['source']} → {t['destination']}" for t in doc["transfers"]]
        changes = [f"{k} {', '.join(doc[k])}" for k in ("joined", "left", "stale") if doc[k]]
        table.add_row(
            str(tick.number),
            doc["now"][11:19],
            str(len(doc["brokers"])),
            f"{doc['outcome']['label']}/{doc['outcome']['reason']}",
            f"{doc['timers']['hit_count']}/{doc['timers']['hit_count_threshold']}",
            "\n".join(moves) or "-",
            "\n".join(changes),
            "" if moves else doc["outcome"]["note"],
        )
    return table


def _append_commands(path: Path, tick: Tick) -> None:
    """The cycle's unloads, each command followed by the REST call it stands for."""
    moves = tick.result.moves
    if not moves:
        return
    lines = [f"# cycle {tick.number} at {iso_time(tick.now)}: {len(moves)} unload(s)"]
    for move in moves:
        lines += [unload_command(move), f"#   {unload_rest(move)}"]
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
