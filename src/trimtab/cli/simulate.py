"""``trimtab simulate``: simulators, one subcommand each (``shedding`` and ``diskfill`` here).

To add one, define ``@simulate_app.command("name")`` in a module of this package and list the
module in :mod:`trimtab.cli` (``_COMMANDS``); the group itself is registered here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table

from trimtab._format import human_bytes, plural
from trimtab.cli._common import (
    ConfigOption,
    JsonFlag,
    app,
    load_config,
    out,
    print_json,
    progress_bar,
    select_clusters,
    user_errors,
    writable_output,
)
from trimtab.cluster import Role
from trimtab.config import (
    PLACEMENT_POLICIES,
    SAMPLING,
    SHEDDERS,
    WEIGHT_CAPS,
    WEIGHTS_MODES,
    CapBasis,
    Choice,
    PolicyName,
    Sampling,
    Strategy,
    WeightsMode,
    spelled,
)
from trimtab.errors import TrimtabError
from trimtab.readers.inventory import read_inventory
from trimtab.sim.convergence import StaticRow, experiment_config, static_experiment
from trimtab.sim.diskfill import (
    SCENARIOS,
    DiskFillResult,
    DiskFillRun,
    Workload,
    nodes_of,
    run_diskfill,
)
from trimtab.sim.shedding_cluster import ClusterRun, ClusterScenario, run_cluster, with_target
from trimtab.sim.sweep import DiskFillSetting

__all__ = [
    "BundlesPerBrokerOption",
    "PairsPerCycleOption",
    "TargetStdOption",
    "TimersOption",
    "diskfill",
    "diskfill_base",
    "parse_sizes",
    "parse_strategies",
    "shedding",
    "simulate_app",
]

simulate_app = typer.Typer(
    name="simulate",
    help="Simulators: how the engines behave over many runs or over time.",
    no_args_is_help=True,
)
app.add_typer(simulate_app, name="simulate")

_SPARK = "▁▂▃▄▅▆▇█"

# PIP-220's static experiment, as `simulate shedding` and `sweep shedding` both run it.
TargetStdOption = Annotated[
    float,
    typer.Option("--target-std", help="Std to reach (the PIP's table: 0.15).", min=0.0, max=10.0),
]
PairsPerCycleOption = Annotated[
    int | None,
    typer.Option(
        "--pairs-per-cycle",
        help="TransferShedder pairs per cycle (default: config).",
        min=1,
        max=100_000,
    ),
]
TimersOption = Annotated[
    bool,
    typer.Option("--timers", help="Keep upstream's hit count and cooldown (a cycle = 1 min)."),
]
BundlesPerBrokerOption = Annotated[
    int,
    typer.Option("--bundles-per-broker", help="Random split of each load.", min=2, max=10_000),
]


@simulate_app.command("shedding")
def shedding(
    brokers: Annotated[
        str, typer.Option("--brokers", help="Cluster sizes, comma-separated: 10,100,1000.")
    ],
    trials: Annotated[
        int, typer.Option("--trials", help="Runs per size and strategy.", min=1, max=100_000)
    ] = 20,
    strategy: Annotated[
        str, typer.Option("--strategy", help="Strategies, comma-separated.")
    ] = "transfer,balanced",
    target_std: TargetStdOption = 0.15,
    pairs_per_cycle: PairsPerCycleOption = None,
    timers: TimersOption = False,
    bundles_per_broker: BundlesPerBrokerOption = 10,
    dynamic: Annotated[
        bool,
        typer.Option("--dynamic", help="Run the living-cluster scenario instead (first size)."),
    ] = False,
    hours: Annotated[
        float, typer.Option("--hours", help="Length of the --dynamic run.", min=0.1, max=8760)
    ] = 12.0,
    seed: Annotated[
        int, typer.Option("--seed", help="Random seed (same seed, same table).", min=0)
    ] = 0,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
) -> None:
    """PIP-220's static experiment (epochs to reach the target), or --dynamic: a living cluster."""
    with user_errors():
        cfg = load_config(config).shedding
        sizes = parse_sizes(brokers)
        names = parse_strategies(strategy)
        if dynamic:
            scenario = ClusterScenario(brokers=sizes[0], hours=hours, seed=seed or 1)
            minutes = int(scenario.hours * 60)
            runs = []
            with progress_bar(quiet=as_json) as bar:
                task = bar.add_task("simulating", total=minutes * len(names))
                for name in names:
                    bar.update(task, description=f"simulating {name}: {minutes:,} minutes")
                    runs.append(
                        run_cluster(
                            name,
                            with_target(cfg, target_std),
                            scenario,
                            on_minute=lambda: bar.advance(task),
                        )
                    )
        else:
            setup = experiment_config(
                cfg, target_std=target_std, pairs_per_cycle=pairs_per_cycle, timers=timers
            )
            total = len(sizes) * len(names) * trials
            with progress_bar(quiet=as_json) as bar:
                task = bar.add_task(f"simulating {plural(total, 'run')}", total=total)
                rows = static_experiment(
                    sizes,
                    names,
                    trials=trials,
                    config=setup,
                    seed=seed,
                    bundles_per_broker=bundles_per_broker,
                    on_trial=lambda: bar.advance(task),
                )
    if dynamic:
        _show_dynamic(runs, scenario, target_std, as_json)
        return
    if as_json:
        print_json(
            {
                "target_std": target_std,
                "pairs_per_cycle": setup.max_broker_shedding_per_cycle,
                "timers": timers,
                "seed": seed,
                "rows": [_row_json(r) for r in rows],
            }
        )
        return
    out.print(_table(rows, target_std, setup.max_broker_shedding_per_cycle, timers))


#: The largest simulated cluster (PIP-220's table stops at 1,000 brokers).
MAX_BROKERS = 100_000


def parse_sizes(text: str) -> list[int]:
    """``"10,100,1000"`` -> cluster sizes (each at least 2); shared with ``trimtab sweep``."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise TrimtabError(
            f"--brokers {text!r}: expected whole numbers separated by commas"
        ) from None
    if not sizes or any(not 2 <= n <= MAX_BROKERS for n in sizes):
        raise TrimtabError(f"--brokers {text!r}: every size must be from 2 to {MAX_BROKERS:,}")
    return sizes


def parse_strategies(text: str, option: str = "--strategy") -> list[Strategy]:
    """``"transfer,balanced"`` -> known strategies, in the order written."""
    names = [spelled(SHEDDERS, part) for part in text.split(",") if part.strip()]
    known = [n for n in names if n is not None]
    if len(known) < len(names) or not names:
        raise TrimtabError(f"{option} {text!r}: choose from {', '.join(Strategy)}")
    return known


_C = TypeVar("_C", bound=Choice)


def _choose(option: str, text: str, table: Mapping[str, _C], allowed: str) -> _C:
    """The value ``text`` names in the config's alias ``table``, or a user error."""
    value = spelled(table, text)
    if value is None:
        raise TrimtabError(f"{option} {text!r}: choose {allowed}")
    return value


def _row_json(row: StaticRow) -> dict[str, Any]:
    return asdict(row)


def _table(rows: list[StaticRow], target: float, pairs: int, timers: bool) -> Table:
    mode = "upstream timers" if timers else "no timers"
    table = Table(
        title=f"epochs to reach std ≤ {target:g} (transfer: {pairs} pair(s)/cycle, {mode}; means)"
    )
    columns = (
        "brokers",
        "strategy",
        "transfers",
        "cycles",
        "bundles",
        "traffic moved",
        "reached",
        "PIP",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for r in rows:
        table.add_row(
            str(r.brokers),
            r.strategy,
            f"{r.transfers_mean:.1f}",
            f"{r.cycles_mean:.1f}",
            f"{r.bundles_mean:.1f}",
            f"{r.moved_share_mean:.1%}",
            f"{r.reached_share:.0%}",
            "-" if r.pip_epochs is None else str(r.pip_epochs),
        )
    return table


def _show_dynamic(
    runs: list[ClusterRun], scenario: ClusterScenario, target: float, as_json: bool
) -> None:
    if as_json:
        print_json(
            {
                "scenario": asdict(scenario),
                "target_std": target,
                "runs": [_run_json(r) for r in runs],
            }
        )
        return
    table = Table(
        title=(
            f"{scenario.brokers} brokers for {scenario.hours:g} h: one joins at minute "
            f"{scenario.join_at_minute}, one leaves at {scenario.leave_at_minute}; "
            f"target std {target:g}"
        )
    )
    for column in (
        "strategy",
        "unloads",
        "per hour",
        "traffic moved",
        "balanced after (min)",
        "above target",
        "std by hour",
    ):
        table.add_column(
            column, justify="left" if column in ("strategy", "std by hour") else "right"
        )
    for r in runs:
        settle = ", ".join(
            f"{k} {'-' if v is None else f'{v:.0f}'}" for k, v in r.balance_minutes.items()
        )
        table.add_row(
            r.strategy,
            str(r.unloads),
            f"{r.unloads_per_hour:.1f}",
            f"{r.moved_bytes_per_s / 1e6:,.0f} MB/s",
            settle,
            f"{r.above_target_share:.0%}",
            _sparkline(r.std),
        )
    out.print(table)


def _run_json(run: ClusterRun) -> dict[str, Any]:
    return {
        "strategy": run.strategy,
        "unloads": run.unloads,
        "unloads_per_hour": run.unloads_per_hour,
        "moved_bytes_per_s": run.moved_bytes_per_s,
        "balance_minutes": dict(run.balance_minutes),
        "above_target_share": run.above_target_share,
        "outcomes": dict(run.outcomes),
        "std": list(run.std),
    }


def _sparkline(values: tuple[float, ...]) -> str:
    hourly = [max(values[h : h + 60]) for h in range(0, len(values), 60)]
    top = max(hourly, default=0.0) or 1.0
    return (
        "".join(_SPARK[min(len(_SPARK) - 1, int(v / top * (len(_SPARK) - 1)))] for v in hourly)
        + f" (max {top:.2f})"
    )


@simulate_app.command("diskfill")
def diskfill(
    scenario: Annotated[
        str | None,
        typer.Option("--scenario", help="Built-in cluster: seed, fleet or uneven-fleet."),
    ] = None,
    inventory: Annotated[
        Path | None,
        typer.Option("--inventory", "-i", help="Inventory file (writable nodes, disk columns)."),
    ] = None,
    cluster: Annotated[
        str | None, typer.Option("--cluster", help="Cluster of the inventory to use.")
    ] = None,
    policy: Annotated[
        str | None, typer.Option("--policy", help="default, rackaware, regionaware or zoneaware.")
    ] = None,
    weights: Annotated[
        str, typer.Option("--weights", help="off, disk or disk+load.")
    ] = WeightsMode.DISK,
    sampling: Annotated[
        str, typer.Option("--sampling", help="successive (upstream) or proportional.")
    ] = Sampling.PROPORTIONAL,
    cap_mode: Annotated[
        str, typer.Option("--cap-mode", help="Cap basis: median or min.")
    ] = CapBasis.MEDIAN,
    cap: Annotated[int, typer.Option("--cap", help="Cap multiple; <= 0 = no cap.")] = 3,
    refresh: Annotated[
        float,
        typer.Option(
            "--refresh",
            help="getBookieInfoIntervalSeconds; 0 = every ledger.",
            min=0,
            max=365 * 86_400,
        ),
    ] = 86_400.0,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.", min=0)] = 1,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Write the fill time series (Parquet) here.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Fill a cluster with ledgers until its first node turns read-only; print the figures."""
    with user_errors():
        if out_dir is not None:
            writable_output("--out", out_dir, directory=True, parents=True)
        run = diskfill_base(scenario, inventory, cluster, policy)
        setting = DiskFillSetting(
            weights=_choose("--weights", weights, WEIGHTS_MODES, "off, disk or disk+load"),
            sampling=_choose("--sampling", sampling, SAMPLING, "successive or proportional"),
            cap=cap,
            cap_mode=_choose("--cap-mode", cap_mode, WEIGHT_CAPS, "median or min"),
            refresh=refresh,
        )
        run = setting.apply(run, seed=seed)
        where = (
            f"scenario {scenario}" if scenario is not None else _inventory_name(inventory, cluster)
        )
        with progress_bar(quiet=as_json) as bar:
            task = bar.add_task("filling to the first read-only node", total=1.0)

            def show(ledgers: int, fill: float) -> None:
                text = f"filling: {ledgers:,} ledgers, fullest node {fill:.0%} of the way"
                bar.update(task, completed=fill, description=text)

            result = run_diskfill(run, progress=show)
        if out_dir is not None:
            _write_series(result, out_dir)
    if as_json:
        print_json({**result.figures(), "setting": _setting_json(run, where)})
        return
    out.print(_diskfill_table(result, run, where))


def diskfill_base(
    scenario: str | None, inventory: Path | None, cluster: str | None, policy: str | None
) -> DiskFillRun:
    """The cluster, workload and policy of ``--scenario`` or ``--inventory`` (+ ``--cluster``);
    shared with ``trimtab sweep diskfill``."""
    if (scenario is None) == (inventory is None):
        raise TrimtabError("give exactly one of --scenario NAME or --inventory FILE")
    if scenario is not None:
        if scenario not in SCENARIOS:
            raise TrimtabError(f"--scenario {scenario!r}: choose {', '.join(SCENARIOS)}")
        nodes, workload, default_policy = SCENARIOS[scenario]
    else:
        assert inventory is not None
        inv = read_inventory(inventory)
        states = select_clusters(inv, cluster)
        if len(states) != 1:
            raise TrimtabError("the inventory holds several clusters: choose one with --cluster")
        bookies = states[0].for_role(Role.BOOKIE)
        nodes, workload, default_policy = nodes_of(bookies), Workload(), PolicyName.RACKAWARE
        if not nodes:
            raise TrimtabError("the inventory cluster has no writable node")
    if policy is not None:
        allowed = "default, rackaware, regionaware or zoneaware"
        default_policy = _choose("--policy", policy, PLACEMENT_POLICIES, allowed)
    return DiskFillRun(nodes=nodes, workload=workload, policy=default_policy, sample_every=100)


def _inventory_name(inventory: Path | None, cluster: str | None) -> str:
    name = inventory.name if inventory is not None else "inventory"
    return name + (f", cluster {cluster}" if cluster else "")


def _setting_json(run: DiskFillRun, where: str) -> dict[str, Any]:
    """The cluster and the options a diskfill run used (``--json``'s ``setting``)."""
    return {
        "cluster": where,
        "nodes": len(run.nodes),
        "raw_bytes": sum(n.capacity for n in run.nodes),
        "policy": run.policy,
        "weights": run.weights,
        "sampling": run.sampling,
        "cap": run.cap,
        "cap_mode": run.cap_basis,
        "refresh_seconds": run.refresh_seconds,
        "threshold": run.threshold,
        "seed": run.seed,
    }


def _duration(seconds: float) -> str:
    """``2_548_800`` -> ``'29.5 d'``, ``86_400`` -> ``'24 h'``, ``90`` -> ``'90 s'``."""
    for unit, size in (("d", 172_800), ("h", 7_200)):
        if seconds >= size:
            return f"{seconds / (size / 2):.1f}".removesuffix(".0") + f" {unit}"
    return f"{seconds:.0f} s"


def _diskfill_table(result: DiskFillResult, run: DiskFillRun, where: str) -> Table:
    """What ran (policy, weighting, refresh, seed), then the run's figures, one per row."""
    refresh = (
        "before every ledger"
        if run.refresh_seconds is None
        else f"every {_duration(run.refresh_seconds)}"
    )
    raw = sum(n.capacity for n in run.nodes)
    table = Table(
        title=f"{where}: {plural(len(run.nodes), 'writable node')}, {human_bytes(raw)} raw",
        caption=(
            f"usable capacity: bytes stored when the first node turns read-only (those already "
            f"on the disks included) ÷ ({run.threshold:.0%} × raw capacity); 100% is the "
            "physical limit"
        ),
        show_header=False,
    )
    table.add_column("what")
    table.add_column("value", overflow="fold")
    table.add_row("policy", run.policy)
    if run.weights == "off":
        table.add_row("weights", "off")
    else:
        table.add_row("weights", f"{run.weights}, {run.sampling} sampling")
        table.add_row(
            "cap", "none" if run.cap <= 0 else f"{run.cap}× the {_CAP_BASIS[run.cap_basis]}"
        )
    table.add_row("disk info", refresh)
    table.add_row("seed", str(run.seed), end_section=True)
    usable = result.usable_fraction_at_first_readonly
    table.add_row(
        "usable capacity at first read-only",
        "-" if usable is None else f"[bold]{usable:.2%}[/]",
    )
    if result.first_readonly_node is None or result.first_readonly_time is None:
        table.add_row("first read-only node", "none: the run ended first")
    else:
        table.add_row(
            "first read-only node",
            f"{result.first_readonly_node} after {_duration(result.first_readonly_time)}",
        )
    table.add_row("ledgers placed", f"{result.ledgers:,}")
    table.add_row("bytes stored", _stored(result))
    table.add_row("largest write share (hot spot)", f"{result.max_write_share:.1%}")
    return table


def _stored(result: DiskFillResult) -> str:
    """All bytes stored, and how many of them the disks already held."""
    stored = human_bytes(result.stored_bytes)
    if not result.initial_bytes:
        return stored
    return f"{stored} ({human_bytes(result.initial_bytes)} already on the disks)"


_CAP_BASIS = {CapBasis.MEDIAN: "median weight", CapBasis.MINIMUM: "smallest weight"}


def _write_series(result: DiskFillResult, out_dir: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(dict(result.series)), out_dir / "diskfill_series.parquet")
