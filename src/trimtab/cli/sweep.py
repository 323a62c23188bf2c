"""``trimtab sweep``: the simulators over many parameter sets and seeds, as Spark tasks.

The same runs as ``trimtab simulate`` for the same seeds (:mod:`trimtab.sim.sweep`), spread one
task per (parameter set, seed) over the Spark master (:mod:`trimtab.pipeline.sweeps`), with the
results as Parquet tables and ``sweep.html`` under ``--output``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from trimtab._format import plural
from trimtab.cli._common import (
    ConfigOption,
    ConfOption,
    JsonFlag,
    MasterOption,
    app,
    load_config,
    out,
    owned_output,
    print_json,
    progress_bar,
    user_errors,
    writable_output,
)
from trimtab.cli._spark import interruptible, start_spark
from trimtab.cli.simulate import (
    BundlesPerBrokerOption,
    PairsPerCycleOption,
    TargetStdOption,
    TimersOption,
    diskfill_base,
    parse_sizes,
    parse_strategies,
)
from trimtab.errors import TrimtabError
from trimtab.sim.convergence import PIP_EPOCHS, experiment_config
from trimtab.sim.sweep import DiskFillSweep, SheddingSweep, Sweep, parse_grid

if TYPE_CHECKING:
    from trimtab.pipeline.sweeps import SweepResult, SweepStep

__all__ = ["DEFAULT_GRID", "diskfill", "shedding", "sweep_app"]

sweep_app = typer.Typer(
    name="sweep",
    help="What-if sweeps of the simulators on Spark: one task per parameter set and seed.",
    no_args_is_help=True,
)
app.add_typer(sweep_app, name="sweep")

#: docs/benchmarks.md's disk-fill table: off, successive/proportional without and with a 3x cap.
DEFAULT_GRID = "weights=off,disk;sampling=successive,proportional;cap=0,3"

OutputOption = Annotated[
    str,
    typer.Option("--output", help="Directory for runs/, summary/, sweep.json, sweep.html."),
]
TrialsOption = Annotated[
    int, typer.Option("--trials", help="Seeds per parameter set.", min=1, max=100_000)
]

_PHASES = {"simulate": "simulating", "summarise": "summarising", "publish": "writing the page"}


@sweep_app.command("shedding")
def shedding(
    output: OutputOption,
    brokers: Annotated[
        str, typer.Option("--brokers", help="Cluster sizes, comma-separated (default: PIP-220's).")
    ] = ",".join(str(n) for n in PIP_EPOCHS),
    strategies: Annotated[
        str,
        typer.Option("--strategies", "--strategy", help="Strategies, comma-separated."),
    ] = "transfer,balanced",
    trials: TrialsOption = 20,
    target_std: TargetStdOption = 0.15,
    pairs_per_cycle: PairsPerCycleOption = None,
    timers: TimersOption = False,
    bundles_per_broker: BundlesPerBrokerOption = 10,
    seed: Annotated[
        int, typer.Option("--seed", help="As simulate shedding's: same seed, same runs.", min=0)
    ] = 0,
    master: MasterOption = None,
    conf: ConfOption = None,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
) -> None:
    """PIP-220's static experiment for every size × strategy × trial: the epochs table."""
    with user_errors():
        setup = experiment_config(
            load_config(config).shedding,
            target_std=target_std,
            pairs_per_cycle=pairs_per_cycle,
            timers=timers,
        )
        sweep = SheddingSweep(
            sizes=tuple(parse_sizes(brokers)),
            strategies=tuple(parse_strategies(strategies, "--strategies")),
            trials=trials,
            config=setup,
            seed=seed,
            bundles_per_broker=bundles_per_broker,
            timers=timers,
        )
        result = _run(sweep, output, master, conf, quiet=as_json)
    if as_json:
        print_json(result.as_json())
        return
    table = Table(
        title=(
            f"transfers to reach std ≤ {target_std:g} ({plural(trials, 'trial')} per row; "
            f"transfer: {plural(setup.max_broker_shedding_per_cycle, 'pair')}/cycle)"
        )
    )
    columns = ("brokers", "strategy", "transfers", "p10–p90", "PIP", "cycles", "moved", "reached")
    for column in columns:
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for r in result.summary:
        table.add_row(
            str(r["brokers"]),
            r["strategy"],
            _mean_std(r["transfers_mean"], r["transfers_std"]),
            f"{r['transfers_p10']:g}–{r['transfers_p90']:g}",
            "-" if r["pip_epochs"] is None else str(r["pip_epochs"]),
            f"{r['cycles_mean']:.1f}",
            f"{r['moved_share_mean']:.1%}",
            f"{r['reached_share']:.0%}",
        )
    out.print(table)
    _footer(result)


@sweep_app.command("diskfill")
def diskfill(
    output: OutputOption,
    grid: Annotated[
        str,
        typer.Option(
            "--grid",
            help="key=v1,v2;key=... over weights, sampling, cap, cap-mode, policy, refresh.",
        ),
    ] = DEFAULT_GRID,
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
    trials: TrialsOption = 5,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of trial 0; trial t uses seed + t.", min=0)
    ] = 1,
    master: MasterOption = None,
    conf: ConfOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Fill a cluster to its first read-only node under every grid setting × trial."""
    with user_errors():
        base = diskfill_base(scenario, inventory, cluster, None)
        parsed = parse_grid(grid)
        if scenario is not None:
            name = f"scenario {scenario}"
        else:
            assert inventory is not None
            name = f"{inventory.name}" + (f", cluster {cluster}" if cluster else "")
        sweep = DiskFillSweep(base=base, grid=parsed, trials=trials, seed=seed, cluster=name)
        result = _run(sweep, output, master, conf, quiet=as_json)
    if as_json:
        print_json(result.as_json())
        return
    table = Table(
        title=(
            f"{name}: usable capacity at first read-only ({plural(trials, 'trial')} per row, "
            f"seeds {seed}…{seed + trials - 1})"
        )
    )
    table.add_column("setting", overflow="fold")
    for column in ("usable", "p10–p90", "hot spot", "first read-only", "reached"):
        table.add_column(column, justify="right", overflow="fold")
    for r in result.summary:
        p10, p90 = (
            r["usable_fraction_at_first_readonly_p10"],
            r["usable_fraction_at_first_readonly_p90"],
        )
        days = r["first_readonly_time_mean"]
        table.add_row(
            r["label"],
            _mean_std(
                r["usable_fraction_at_first_readonly_mean"],
                r["usable_fraction_at_first_readonly_std"],
                percent=True,
            ),
            "-" if p10 is None else f"{p10:.1%}–{p90:.1%}",
            f"{r['max_write_share_mean']:.1%}",
            "-" if days is None else f"{days / 86_400:.1f} d",
            f"{r['readonly_share']:.0%}",
        )
    out.print(table)
    if parsed.combinations != len(parsed.settings):
        out.print(
            f"{parsed.combinations} grid combinations, {len(parsed.settings)} distinct settings:"
            " with weights=off the cap and the sampling mode do not apply.",
            highlight=False,
        )
    _footer(result)


def _run(
    sweep: Sweep, output: str, master: str | None, conf: list[str] | None, *, quiet: bool
) -> SweepResult:
    """Start (or join) the Spark session and run the sweep under a progress display."""
    from trimtab.pipeline.session import parse_conf
    from trimtab.pipeline.sweeps import run_sweep

    try:
        settings = parse_conf(conf or [])
    except ValueError as exc:
        raise TrimtabError(str(exc)) from None
    owned_output(output, marker="sweep.json")
    writable_output("--output", output, directory=True, parents=True, replaced=True)
    tasks = len(sweep.tasks())
    with _progress(quiet=quiet, tasks=tasks) as show:
        show_step: Callable[[SweepStep], None] = show
        name = f"trimtab sweep {sweep.kind}"
        spark = start_spark(master=master, conf=settings, app_name=name)
        with interruptible(spark) as stop_if_asked:

            def step(done: SweepStep) -> None:
                if done.stage is None:  # a phase starts (on this thread: stages are watched
                    stop_if_asked()  # from another), and none does after a Ctrl-C
                show_step(done)

            return run_sweep(spark, sweep, output, progress=step)


@contextmanager
def _progress(*, quiet: bool, tasks: int) -> Iterator[Callable[[SweepStep], None]]:
    """A phase line and one bar per Spark stage (tasks done of total), on stderr."""
    bar = progress_bar(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        quiet=quiet,
    )
    phase = bar.add_task("starting Spark", total=None)
    stages: dict[int, TaskID] = {}

    def show(step: SweepStep) -> None:
        label = _PHASES.get(step.phase, step.phase)
        if step.stage is None:  # a new phase: the last one's stages are done
            for task in stages.values():
                bar.remove_task(task)
            stages.clear()
            what = f"{label} {plural(tasks, 'run')}" if step.phase == "simulate" else label
            bar.update(phase, description=what)
            return
        s = step.stage
        failed = f", {s.failed} failed" if s.failed else ""
        text = f"  {label}: Spark stage {s.stage}{failed}"
        if s.stage not in stages:
            stages[s.stage] = bar.add_task(text, total=s.total)
        bar.update(stages[s.stage], description=text, completed=s.done, total=s.total)
        if s.done >= s.total and s.total == 1:  # one-task stages only flicker: drop when done
            bar.remove_task(stages.pop(s.stage))

    with bar:
        yield show


def _mean_std(mean: float | None, std: float | None, *, percent: bool = False) -> str:
    if mean is None:
        return "-"
    shown = f"{mean:.1%}" if percent else f"{mean:.1f}"
    if std is None:
        return shown
    return shown + (f" ± {std:.1%}" if percent else f" ± {std:.1f}")


def _footer(result: SweepResult) -> None:
    timing: dict[str, Any] = result.timings_s
    out.print(
        f"{plural(result.tasks, 'simulation')} in {timing.get('simulate', 0):.1f} s "
        f"({result.simulations_per_s:.1f}/s on {result.spark.get('master', '?')}); "
        f"outputs in [bold]{result.output}[/]: runs/, summary/, sweep.json, sweep.html",
        highlight=False,
    )
