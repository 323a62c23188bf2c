"""``trimtab shed``: what a Pulsar load shedder would move now, and where it leaves the loads.

Inputs are the inventory (each broker's cores and NIC), ``node_metrics`` (each broker's usage
history, folded into its load data) and ``bundle_metrics`` (each bundle's latest owner and
rates). The time of the snapshot is the latest row's ``ts`` unless ``--now`` says otherwise.
Output: the decisions of each cycle, the transfers, and per broker the load before and the
settled load after (see :mod:`trimtab.shedding.plan`); ``--json`` for machines,
``--format pulsar-admin`` for the commands that make the moves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from trimtab._format import human_bps, plural, rejected_json
from trimtab.cli._common import (
    ConfigOption,
    JsonFlag,
    app,
    configured_strategy,
    err,
    load_config,
    out,
    print_json,
    print_rejected,
    print_warnings,
    progress_bar,
    report_input_problems,
    select_clusters,
    user_errors,
    writable_output,
)
from trimtab.cli.plan_output import (
    PlanOption,
    check_plan_output,
    command_argv,
    write_plan_document,
)
from trimtab.cli.shed_json import broker_rows, iso_time, plan_json
from trimtab.cli.shed_reports import check_sources, follow_reports, plan_reports
from trimtab.cluster import ClusterState, Role
from trimtab.config import Config, SheddingConfig, Strategy
from trimtab.contract import RejectedRow, timestamp
from trimtab.errors import InputError, TrimtabError
from trimtab.plans.pulsar import shed_plan_document
from trimtab.plans.source import created_now, plan_source
from trimtab.readers.inventory import read_inventory
from trimtab.readers.metrics import read_bundle_metrics, read_node_metrics
from trimtab.readers.table_files import Parsed
from trimtab.shedding import LoadModel, Plan, advise, breakdown
from trimtab.shedding.plain import plain_reasons
from trimtab.shedding.recommend import Recommendation
from trimtab.shedding.telemetry import Built, NodeRow, build_snapshot, left_out_sentence
from trimtab.systems.pulsar.admin import unload_script
from trimtab.systems.pulsar.isolation import read_policies

__all__ = ["Format", "ShedOptions", "Strategy", "shed"]


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"
    PULSAR_ADMIN = "pulsar-admin"


#: The most shedding cycles one run plans (a cycle is a minute of Pulsar's time: ten weeks).
MAX_CYCLES = 100_000


def _check_format(fmt: Format, *, as_json: bool) -> None:
    """--json prints the JSON document, --format pulsar-admin the commands: not both."""
    if as_json and fmt is Format.PULSAR_ADMIN:
        raise TrimtabError(
            "--json and --format pulsar-admin cannot be combined: choose one "
            "(--format json is --json)"
        )


# The options of ``trimtab shed``, each declared once (the command's signature stays short).
_Inventory = Annotated[
    Path | None, typer.Option("--inventory", "-i", help="Inventory file or directory.")
]
_Brokers = Annotated[
    Path | None,
    typer.Option("--brokers", help="node_metrics rows: each broker's usage history."),
]
_Bundles = Annotated[
    Path | None, typer.Option("--bundles", help="bundle_metrics rows: owner and rates.")
]
_Strategy = Annotated[
    Strategy | None,
    typer.Option("--strategy", help="Shedder (default: the config's if set, else balanced)."),
]
_Cycles = Annotated[int, typer.Option("--cycles", help="Cycles to run.", min=1, max=MAX_CYCLES)]
_UntilBalanced = Annotated[
    bool,
    typer.Option("--until-balanced", help="Run until the strategy has nothing left to do."),
]
_MaxCycles = Annotated[
    int, typer.Option("--max-cycles", help="Cap for --until-balanced.", min=1, max=MAX_CYCLES)
]
_Cluster = Annotated[
    str | None, typer.Option("--cluster", help="The cluster, if there are several.")
]
_Now = Annotated[
    str | None,
    typer.Option("--now", help="Snapshot time (ISO 8601 or epoch s; default: latest ts)."),
]
_Seed = Annotated[int, typer.Option("--seed", help="Seed for placing unload-only moves.")]
_IsolationPolicies = Annotated[
    Path | None,
    typer.Option(
        "--isolation-policies", help="pulsar-admin ns-isolation-policy list CLUSTER JSON."
    ),
]
_AntiAffinity = Annotated[
    Path | None,
    typer.Option(
        "--anti-affinity", help="Anti-affinity groups: {group: \\[namespace]} JSON or CSV."
    ),
]
_Format = Annotated[Format, typer.Option("--format", help="table, json or pulsar-admin.")]
_Zk = Annotated[
    str | None,
    typer.Option("--zk", help="ZooKeeper HOST:PORT\\[/chroot]: /loadbalance/brokers reports."),
]
_LoadReports = Annotated[
    Path | None,
    typer.Option("--load-reports", help="LocalBrokerData JSON files, one per broker."),
]
_Follow = Annotated[
    bool, typer.Option("--follow", help="Run one cycle per interval until stopped.")
]
_Interval = Annotated[
    float | None, typer.Option("--interval", help="--follow period, s (default: config).")
]
_Out = Annotated[
    Path | None,
    typer.Option("--out", help="Write the unload commands and REST calls (--follow: append)."),
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShedOptions:
    """The options of one ``trimtab shed`` run, as given."""

    inventory: Path | None
    brokers: Path | None
    bundles: Path | None
    strategy: Strategy | None
    cycles: int
    until_balanced: bool
    max_cycles: int
    cluster: str | None
    now: str | None
    seed: int
    isolation_policies: Path | None
    anti_affinity: Path | None
    fmt: Format
    config: Path | None
    as_json: bool
    zk: str | None
    load_reports: Path | None
    follow: bool
    interval: float | None
    out_path: Path | None
    plan_path: Path | None = None
    argv: tuple[str, ...] | list[str] = ()

    @property
    def machine(self) -> bool:
        """Whether the output is the JSON document (or a JSON line per cycle)."""
        return self.as_json or self.fmt is Format.JSON


@app.command()
def shed(
    ctx: typer.Context,
    inventory: _Inventory = None,
    brokers: _Brokers = None,
    bundles: _Bundles = None,
    strategy: _Strategy = None,
    cycles: _Cycles = 1,
    until_balanced: _UntilBalanced = False,
    max_cycles: _MaxCycles = 500,
    cluster: _Cluster = None,
    now: _Now = None,
    seed: _Seed = 0,
    isolation_policies: _IsolationPolicies = None,
    anti_affinity: _AntiAffinity = None,
    fmt: _Format = Format.TABLE,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
    zk: _Zk = None,
    load_reports: _LoadReports = None,
    follow: _Follow = False,
    interval: _Interval = None,
    out_path: _Out = None,
    plan_path: PlanOption = None,
) -> None:
    """Run shedding cycles on a load snapshot and print the decisions and projected loads."""
    options = ShedOptions(
        inventory=inventory,
        brokers=brokers,
        bundles=bundles,
        strategy=strategy,
        cycles=cycles,
        until_balanced=until_balanced,
        max_cycles=max_cycles,
        cluster=cluster,
        now=now,
        seed=seed,
        isolation_policies=isolation_policies,
        anti_affinity=anti_affinity,
        fmt=fmt,
        config=config,
        as_json=as_json,
        zk=zk,
        load_reports=load_reports,
        follow=follow,
        interval=interval,
        out_path=out_path,
        plan_path=plan_path,
        argv=command_argv(ctx),
    )
    with user_errors():
        if out_path is not None:
            writable_output("--out", out_path, directory=False, parents=False)
        if plan_path is not None and follow:
            raise TrimtabError("--plan writes one plan: it cannot be combined with --follow")
        check_plan_output(plan_path)
        if _reports_given(options):
            _shed_reports(options)
            return
    _shed_tables(options)


def _reports_given(o: ShedOptions) -> bool:
    """Whether Pulsar's load reports are the input (options that do not go together refused)."""
    given = {
        "--now": o.now is not None,
        "--cycles": o.cycles != 1,
        "--until-balanced": o.until_balanced,
        "--format pulsar-admin": o.fmt is Format.PULSAR_ADMIN,
    }
    return check_sources(
        zk=o.zk,
        load_reports=o.load_reports,
        tables={"--inventory": o.inventory, "--brokers": o.brokers, "--bundles": o.bundles},
        follow=o.follow,
        interval=o.interval,
        one_shot=[option for option, yes in given.items() if yes],
    )


def _write_plan(o: ShedOptions, advice: Recommendation, cluster: str, cfg: Config) -> None:
    """Write the plan document of the recommendation's net moves (``--plan``)."""
    assert o.plan_path is not None
    result = advice.plan
    inputs: dict[str, Path | str | None] = {
        "inventory": o.inventory,
        "brokers": o.brokers,
        "bundles": o.bundles,
        "load_reports": o.load_reports,
        "zk": o.zk,
        "isolation_policies": o.isolation_policies,
        "anti_affinity": o.anti_affinity,
        "config": o.config,
    }
    settings = {"strategy": result.strategy, "cycles": o.cycles, "seed": o.seed, "now": o.now}
    settings |= {"until_balanced": o.until_balanced, "max_cycles": o.max_cycles}
    document = shed_plan_document(
        result,
        cluster=cluster,
        created=created_now(),
        source=plan_source("trimtab shed", inputs, settings, o.argv),
        cooldown_s=cfg.shedding.shedding_delay_seconds,
        recommended=advice.apply,
    )
    write_plan_document(o.plan_path, document)


def _shed_reports(o: ShedOptions) -> None:
    """``shed`` on Pulsar's load reports: one plan, or the live loop with ``--follow``."""
    _check_format(o.fmt, as_json=o.as_json)
    cfg = load_config(o.config)
    if o.strategy is not None:
        cfg = replace(cfg, shedding=replace(cfg.shedding, strategy=o.strategy))
    if o.follow:
        follow_reports(
            zk=o.zk,
            load_reports=o.load_reports,
            cfg=cfg,
            cluster=o.cluster,
            interval=o.interval,
            out_path=o.out_path,
            seed=o.seed,
            as_json=o.machine,
            policies=read_policies(o.isolation_policies, o.anti_affinity),
        )
        return
    advice, state, built, at, refused = plan_reports(
        zk=o.zk,
        load_reports=o.load_reports,
        cfg=cfg,
        cluster=o.cluster,
        now=_parse_now(o.now) if o.now is not None else None,
        cycles=o.cycles,
        until_balanced=o.until_balanced,
        max_cycles=o.max_cycles,
        seed=o.seed,
        policies=read_policies(o.isolation_policies, o.anti_affinity),
        explicit=o.strategy or configured_strategy(o.config),
    )
    if not _print_result(advice, state, built, at, cfg, o, refused):
        for row in refused:
            err.print(f"[yellow]refused:[/] {row.source}: {row.reason}", highlight=False)


def _shed_tables(o: ShedOptions) -> None:
    """``shed`` on the inventory, node_metrics and bundle_metrics tables."""
    assert o.inventory is not None and o.brokers is not None and o.bundles is not None
    with user_errors(), progress_bar(quiet=o.machine) as bar:
        # reading a day of bundle_metrics takes a while (1.2 million rows: about 20 s)
        _check_format(o.fmt, as_json=o.as_json)
        phase = bar.add_task(f"reading the inventory {o.inventory}", total=None)
        cfg = load_config(o.config)
        explicit = o.strategy or configured_strategy(o.config)
        policies = read_policies(o.isolation_policies, o.anti_affinity)
        inv = read_inventory(o.inventory)
        reference = _parse_now(o.now) if o.now is not None else None
        # Samples after the reference (or the wall clock) are refused, as the pipeline does.
        clock = datetime.now(UTC) if reference is None else datetime.fromtimestamp(reference, UTC)
        bar.update(phase, description=f"reading node_metrics {o.brokers}")
        nodes = read_node_metrics(o.brokers, now=clock)
        bar.update(phase, description=f"reading bundle_metrics {o.bundles}")
        rows = read_bundle_metrics(o.bundles, now=clock)
        whole = _one_cluster(select_clusters(inv, o.cluster), nodes, rows, o.cluster)
        state = whole.for_role(Role.BROKER)
        bar.update(phase, description="building the load snapshot")
        built = _broker_snapshot(whole, nodes, rows, cfg.shedding)
        at = reference if reference is not None else built.now
        bar.update(phase, description="running the shedders")
        advice = advise(
            built.snapshot,
            cfg.shedding,
            now=at,
            cycles=o.cycles,
            until_balanced=o.until_balanced,
            max_cycles=o.max_cycles,
            seed=o.seed,
            policies=policies,
            explicit=explicit,
            refused=[str(r) for r in nodes.rejected],
        )
        if advice.recommendation is None:
            raise InputError(f"cluster {state.name}: nothing to shed: {advice.nothing_to_shed}")
    rejected = [*inv.rejected, *nodes.rejected, *rows.rejected, *built.rejected]
    stale = _stale_bundles(built, cfg.shedding)
    warnings = [*inv.warnings, *nodes.warnings, *rows.warnings, *stale]
    if _print_result(advice.recommendation, state, built, at, cfg, o, rejected, warnings):
        return
    report_input_problems(inv)
    _report_rejected(nodes, rows, built.rejected, [*nodes.warnings, *rows.warnings, *stale])


def _stale_bundles(built: Built, config: SheddingConfig) -> list[str]:
    """The warning for bundles left out of the snapshot as no longer reported, if any."""
    if not built.left_out:
        return []
    count, ttl = len(built.left_out), config.load_data_ttl_seconds
    return [left_out_sentence(count, built.left_out[:3], ttl)]


def _print_result(
    advice: Recommendation,
    state: ClusterState,
    built: Built,
    at: float,
    cfg: Config,
    options: ShedOptions,
    rejected: list[RejectedRow],
    warnings: list[str] | None = None,
) -> bool:
    """Print the recommended plan (``--json``, pulsar-admin lines or tables) and write its
    commands to ``--out``; True when JSON was printed, which says all (the refused rows too).
    Otherwise the plan's warning goes to stderr, so pulsar-admin output stays runnable."""
    result, fmt, out_path = advice.plan, options.fmt, options.out_path
    net = [(cycle, move) for cycle, move, _ in result.net_transfers]
    interval_s, cooldown_s = cfg.shedding.interval_minutes * 60, cfg.shedding.shedding_delay_seconds
    commands = unload_script(net, interval_s=interval_s, cooldown_s=cooldown_s)
    if options.plan_path is not None:
        _write_plan(options, advice, state.name, cfg)
    if out_path is not None:
        lines = unload_script(net, interval_s=interval_s, cooldown_s=cooldown_s, rest=True)
        out_path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    if options.machine:
        doc = plan_json(result, state, built, at) | advice.as_json()
        doc["rejected"] = [rejected_json(r) for r in rejected]
        doc["warnings"] = warnings or []
        print_json(doc)
        return True
    if fmt is Format.PULSAR_ADMIN:
        for line in commands:
            out.print(line, highlight=False, soft_wrap=True, markup=False)
    else:
        _print_plan(result, state, built, at, cfg)
        _print_advice(advice)
    if result.warning:
        err.print(f"[yellow]warning:[/] {state.name}: {result.warning}", highlight=False)
    return False


def _broker_snapshot(
    state: ClusterState, nodes: Parsed[NodeRow], rows: Parsed[Any], config: SheddingConfig
) -> Built:
    """The snapshot of the cluster's brokers (:meth:`ClusterState.for_role`): bookies'
    samples are left out, and only writable brokers are available to take bundles; a bundle
    not reported within the load data TTL of the newest sample is left out."""
    brokers = state.for_role(Role.BROKER)
    samples = [(r, o) for r, o in _with_origin(nodes) if r.node in brokers or r.node not in state]
    return build_snapshot(
        brokers,
        samples,
        _with_origin(rows),
        LoadModel.of(config),
        stale_after_s=config.load_data_ttl_seconds,
    )


def _with_origin(parsed: Parsed[Any]) -> list[tuple[Any, RejectedRow]]:
    return [
        (row, RejectedRow(raw.source, raw.line, "", raw.data or {})) for row, raw in parsed.accepted
    ]


def _one_cluster(
    clusters: list[ClusterState], nodes: Parsed[Any], rows: Parsed[Any], name: str | None
) -> ClusterState:
    if len(clusters) == 1:
        return clusters[0]
    with_bundles = {r.cluster for r, _ in rows.accepted} & {c.name for c in clusters}
    if name is None and len(with_bundles) == 1:
        (only,) = with_bundles
        return next(c for c in clusters if c.name == only)
    names = ", ".join(sorted(with_bundles or {c.name for c in clusters})) or "none"
    raise TrimtabError(f"the inputs hold clusters {names}: choose one with --cluster")


#: 9999-12-31T23:59:59Z, the last moment a datetime holds.
_LAST_SECOND = 253_402_300_799


def _parse_now(text: str) -> float:
    moment = timestamp(text)
    if moment is None:
        raise TrimtabError(f"--now {text!r} is neither epoch seconds nor ISO 8601")
    if not 0 <= moment <= _LAST_SECOND:
        raise TrimtabError(f"--now {text!r} must lie between 1970 and the year 9999")
    return moment


def _print_plan(result: Plan, state: ClusterState, built: Built, now: float, cfg: Config) -> None:
    mark = "[green]reached[/]" if result.reached else "[yellow]not reached[/]"
    out.print(
        f"[bold]{state.name}[/]  {result.strategy} shedder, {plural(len(result.results), 'cycle')} "
        f"from {iso_time(now)}; std {_std(result.std_before)} → {_std(result.std_after)} "
        f"(target {result.target_std:g}: {mark})",
        highlight=False,
    )
    table = Table(title="brokers (load = smoothed weighted max; after = once the moves settle)")
    for column in ("broker", "cores", "NIC", "bundles", "load", "after", "throughput", "after "):
        table.add_column(column, justify="left" if column == "broker" else "right")
    for row in broker_rows(result, state):
        table.add_row(
            row["broker"],
            str(row["cores"]),
            human_bps(row["nic_bps"]),
            f"{row['bundles_before']} → {row['bundles_after']}",
            _pct(row["load_before"]),
            _pct(row["load_after"]),
            _mbps(row["throughput_before"]),
            _mbps(row["throughput_after"]),
        )
    out.print(table)
    _print_transfers(result, f"{plural(len(result.transfers), 'transfer')}")
    _print_outcomes(result)


def _print_transfers(result: Plan, title: str) -> None:
    if not result.transfers:
        out.print("no transfers", highlight=False)
        return
    moves = Table(title=title)
    for column in ("cycle", "bundle", "from", "to", "throughput", "reason", "why"):
        moves.add_column(column, justify="right" if column in ("cycle", "throughput") else "left")
    for (k, m, reason), why in zip(result.transfers, plain_reasons(result), strict=True):
        moves.add_row(
            str(k),
            m.bundle,
            m.source,
            m.destination or "(next lookup)",
            _mbps(m.throughput),
            str(reason),
            why,
        )
    out.print(moves)


def _print_advice(advice: Recommendation) -> None:
    """Upstream's plan beside the recommended one, then the sentence saying which to run."""
    up = advice.upstream
    if up is not advice.plan:
        out.print(
            f"upstream's {up.strategy} shedder on the same snapshot: std "
            f"{_std(up.std_before)} → {_std(up.std_after)}",
            highlight=False,
        )
        _print_transfers(up, f"upstream's {up.strategy}: {plural(len(up.transfers), 'transfer')}")
    out.print(f"[bold]recommendation:[/] {advice.sentence}", highlight=False)


def _print_outcomes(result: Plan) -> None:
    table = Table(title="decisions")
    for column in ("cycle", "label", "reason", "broker", "note"):
        table.add_column(column)
    shown = 0
    for k, r in enumerate(result.results, start=1):
        for d in r.decisions:
            if d.move is not None:
                continue
            if shown < 40:
                table.add_row(str(k), str(d.label), str(d.reason), d.broker or "(cycle)", d.note)
            shown += 1
    if shown:
        out.print(table)
    if shown > 40:
        out.print(f"... and {shown - 40} more; --json has them all", highlight=False)
    counts = ", ".join(
        f"{label}/{reason} {n}" for (label, reason), n in sorted(breakdown(result.results).items())
    )
    out.print(f"counts: {counts}", highlight=False)


def _pct(value: float | None) -> str:
    # a broken counter (1e308 bits/s) gives a load of 1e298: shown in 3 digits, not 300
    return "-" if value is None else f"{value:.1%}" if abs(value) < 1e4 else f"{value:.3g}×"


def _std(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 1e6 else f"{value:.3g}"


def _mbps(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:.1f} MB/s"


def _report_rejected(
    nodes: Parsed[Any], rows: Parsed[Any], extra: tuple[RejectedRow, ...], warnings: list[str]
) -> None:
    print_warnings(warnings)
    for name, parsed in (("node_metrics", nodes), ("bundle_metrics", rows)):
        refused = [*parsed.rejected, *(r for r in extra if _table_of(r) == name)]
        print_rejected(refused, parsed.rows_read, name)


def _table_of(row: RejectedRow) -> str:
    return "bundle_metrics" if "bundle" in row.row else "node_metrics"
