"""``trimtab generate-fleet`` and ``trimtab pipeline run``: the fleet job and its sample data."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from trimtab._format import plural
from trimtab.cli._common import (
    ConfigOption,
    ConfOption,
    JsonFlag,
    MasterOption,
    app,
    configured_strategy,
    err,
    figures_table,
    load_config,
    one_of,
    out,
    owned_output,
    print_json,
    printable,
    progress_bar,
    user_errors,
    writable_output,
)
from trimtab.cli._spark import interruptible, start_spark
from trimtab.cli.shed import MAX_CYCLES
from trimtab.errors import TrimtabError
from trimtab.readers.sniff import raw_kind
from trimtab.readers.special_files import refuse_special
from trimtab.shedding.strategies import STRATEGIES
from trimtab.shedding.telemetry import left_out_sentence

if TYPE_CHECKING:
    from trimtab.pipeline.job import JobOptions, RunSummary
    from trimtab.pipeline.stream.options import StreamOptions

__all__ = ["generate_fleet_cmd", "pipeline_app", "run_cmd", "stream_cmd"]

pipeline_app = typer.Typer(help="The fleet pipeline on Spark.", no_args_is_help=True)
app.add_typer(pipeline_app, name="pipeline")


@app.command("generate-fleet")
def generate_fleet_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory to write the tables into.")],
    clusters: Annotated[int, typer.Option(help="Clusters in the fleet.", max=10_000)] = 3,
    brokers: Annotated[int, typer.Option(help="Brokers per cluster.", max=100_000)] = 8,
    bookies: Annotated[int, typer.Option(help="Bookies per cluster.", max=100_000)] = 9,
    bundles: Annotated[int, typer.Option(help="Bundles per cluster.", max=10_000_000)] = 64,
    minutes: Annotated[
        int, typer.Option(help="Minutes of telemetry, one sample a minute.", max=7 * 1440)
    ] = 30,
    seed: Annotated[
        int, typer.Option(help="Random seed; the same seed writes the same fleet.", min=0)
    ] = 7,
    bad_rows: Annotated[
        float,
        typer.Option(
            "--bad-rows",
            help="Fraction of telemetry rows to write malformed (and one bad inventory row "
            "per rule).",
        ),
    ] = 0.0,
    as_json: JsonFlag = False,
) -> None:
    """Write a realistic sample fleet: inventory, node and bundle metrics, requests."""
    from trimtab.pipeline.generate import FleetSpec, generate_fleet

    with user_errors():
        writable_output("--out", out_dir, directory=True, parents=True)
        try:
            spec = FleetSpec(
                clusters=clusters,
                brokers=brokers,
                bookies=bookies,
                bundles=bundles,
                minutes=minutes,
                seed=seed,
                bad_rows=bad_rows,
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        with progress_bar(quiet=as_json) as bar:
            task = bar.add_task("generating clusters", total=clusters)
            fleet = generate_fleet(
                spec, out_dir, progress=lambda done, _: bar.update(task, completed=done)
            )
    if as_json:
        print_json({"out": str(fleet.out), "rows": fleet.rows, "bad": fleet.bad})
        return
    table = Table(title=f"fleet written to {fleet.out}")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("malformed", justify="right")
    for name, count in fleet.rows.items():
        table.add_row(name, f"{count:,}", f"{sum(fleet.bad.get(name, {}).values()):,}")
    out.print(table)


@pipeline_app.command("run")
def run_cmd(
    ctx: typer.Context,
    input_dir: Annotated[
        str,
        typer.Option(
            "--input",
            help="Directory with nodes/, node_metrics/, bundle_metrics/ (allocation_requests/).",
        ),
    ],
    output_dir: Annotated[
        str, typer.Option("--output", help="Directory the outputs are published to (atomically).")
    ],
    master: MasterOption = None,
    conf: ConfOption = None,
    window: Annotated[
        str, typer.Option(help="Averaging window for node loads: 30s, 1m, 5m, 1h...")
    ] = "1m",
    config: ConfigOption = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            help="Shedder: transfer, balanced, threshold, overload, uniform, avg "
            "(default: the config's if set, else balanced)."
        ),
    ] = None,
    cycles: Annotated[
        int, typer.Option(help="Shedding cycles to plan when --no-until-balanced.")
    ] = 1,
    until_balanced: Annotated[
        bool, typer.Option(help="Plan cycles until the shedder stops (default) or run --cycles.")
    ] = True,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay",
            help="Decide as the live shedder (and `pipeline stream`) would have: one cycle at "
            "the end of every minute of telemetry, its state carried from minute to minute.",
        ),
    ] = False,
    seed: Annotated[
        int, typer.Option(help="Seed for every random choice of the engines.", min=0)
    ] = 0,
    now: Annotated[
        datetime | None,
        typer.Option(help="Reference time (UTC) for the future-timestamp rule; default: now."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Read the fleet's tables, check every row, decide, and publish the outputs."""
    with user_errors():
        if replay:
            _check_replay(ctx)
        settings = _spark_settings(conf)
        options = _job_options(
            input_dir,
            output_dir,
            window=window,
            now=now,
            config=config,
            strategy=strategy,
            cycles=cycles,
            until_balanced=until_balanced,
            replay=replay,
            seed=seed,
        )
        summary = _run_job(options, master=master, settings=settings, quiet=as_json)
    _print_run(summary, as_json=as_json)


def _print_run(summary: RunSummary, *, as_json: bool) -> None:
    """The run's summary: as JSON, or tables and a sentence per cluster."""
    if as_json:
        print_json(
            {
                "output": summary.output,
                "tables": summary.tables,
                "quarantine_by_rule": summary.quarantine_by_rule,
                "clusters": summary.clusters,
                "timings_s": summary.timings_s,
                "spark": summary.spark,
            }
        )
        return
    out.print(_tables_table(summary))
    out.print(_clusters_table(summary))
    for name, info in summary.clusters.items():
        if info.get("recommendation"):
            out.print(f"[bold]{name}:[/] {info['recommendation']}", highlight=False)
        if info.get("warning"):
            out.print(f"[yellow]warning:[/] {name}: {info['warning']}", highlight=False)
        if info.get("no_telemetry"):
            err.print(
                f"[yellow]warning:[/] {name}: {printable(info['no_telemetry'])}", highlight=False
            )
        if stale := info.get("stale_bundles"):
            sentence = left_out_sentence(stale["count"], stale["first"])
            out.print(f"[bold]{name}:[/] {sentence}", highlight=False)
    nodes = sum(c["nodes"] for c in summary.clusters.values())
    out.print(
        f"{plural(len(summary.clusters), 'cluster')}, {plural(nodes, 'node')}; "
        f"outputs in [bold]{summary.output}[/]",
        highlight=False,
    )


def _spark_settings(conf: list[str] | None) -> dict[str, str]:
    from trimtab.pipeline.session import parse_conf

    try:
        return parse_conf(conf or [])
    except ValueError as exc:
        raise TrimtabError(str(exc)) from None


def _job_options(
    input_dir: str,
    output_dir: str,
    *,
    window: str,
    now: datetime | None,
    config: Path | None,
    strategy: str | None,
    cycles: int,
    until_balanced: bool,
    seed: int,
    replay: bool = False,
) -> JobOptions:
    """The job's options from the command line, every one checked before Spark starts; a
    reference time without a zone is UTC."""
    from trimtab.pipeline.job import JobOptions

    reference = now.replace(tzinfo=UTC) if now is not None and now.tzinfo is None else now
    _check_window(window)
    if strategy is not None:
        one_of("--strategy", strategy, STRATEGIES, what="a shedder")
    if not 1 <= cycles <= MAX_CYCLES:
        raise TrimtabError(f"--cycles must be from 1 to {MAX_CYCLES:,}, got {cycles}")
    owned_output(output_dir, marker="run.json")
    writable_output("--output", output_dir, directory=True, parents=True, replaced=True)
    _check_parquet(input_dir)
    return JobOptions(
        input=input_dir,
        output=output_dir,
        seed=seed,
        now=reference,
        window=window,
        config=load_config(config),
        strategy=strategy or configured_strategy(config),
        cycles=cycles,
        until_balanced=until_balanced,
        replay=replay,
    )


def _check_replay(ctx: typer.Context) -> None:
    """``--replay`` decides one cycle a minute: a plan's cycle count has no say in it."""
    balanced = "--until-balanced" if ctx.params.get("until_balanced") else "--no-until-balanced"
    for name, flag in (("cycles", "--cycles"), ("until_balanced", balanced)):
        source = ctx.get_parameter_source(name)
        if source is not None and source.name == "COMMANDLINE":  # given, not defaulted
            raise TrimtabError(
                f"--replay runs one cycle per minute of telemetry: drop {flag}, which "
                "sets the cycles of a plan"
            )


#: The longest averaging window (a week): telemetry is kept for days, not months.
_MAX_WINDOW_S = 7 * 86_400


def _check_window(window: str) -> None:
    from trimtab.pipeline.loads import parse_window, window_seconds

    try:
        parse_window(window)
    except ValueError as exc:
        raise TrimtabError(f"--window: {exc}") from None
    if not 1 <= window_seconds(window) <= _MAX_WINDOW_S:
        raise TrimtabError(f"--window {window!r} must be from 1 s to 7 days: use e.g. 30s, 1m, 1h")


def _check_parquet(input_dir: str) -> None:
    """A local input exists and every Parquet file in it has a readable footer: a garbage
    ``.parquet`` is one error naming it, not a Spark stack trace minutes later (remote
    inputs: Spark's)."""
    import pyarrow.parquet as pq

    from trimtab.pipeline.fs import local_directory

    local = local_directory(input_dir)
    if local is None:
        return
    root = Path(local)
    if root.is_file():
        raise TrimtabError(
            f"--input {input_dir} is a file, not a directory: give --input DIR holding "
            "nodes/, node_metrics/ and bundle_metrics/ (docs/commands/pipeline.md)"
        )
    if not root.is_dir():  # the job says the same, but only once Spark is up
        raise TrimtabError(f"input directory {input_dir} does not exist: give --input DIR")
    for file in sorted(root.glob("*/*")):
        refuse_special("input file", file)  # Spark would wait on a FIFO for ever
        _refuse_text_kind(file)
        if file.suffix.lower() not in (".parquet", ".pq") or not file.is_file():
            continue
        try:
            pq.read_metadata(file)
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            raise TrimtabError(
                f"{file} is not a readable Parquet file ({type(exc).__name__}): replace or "
                "remove it"
            ) from None


def _refuse_text_kind(file: Path) -> None:
    """A text table (.csv, .json, .jsonl) that is UTF-16 or an archive: Spark would read it
    as rows of garbage; refused before Spark starts, saying what it seems to be."""
    if file.suffix.lower() not in (".csv", ".json", ".jsonl") or not file.is_file():
        return
    with file.open("rb") as handle:
        kind = raw_kind(handle.read(65536))
    if kind is not None and not kind.startswith(("binary data", "an empty file")):
        raise TrimtabError(
            f"{file} is not a .csv, .jsonl or .parquet table: it is {kind}. Give the "
            f"{file.parent.name} table as UTF-8 CSV, JSON lines or Parquet"
        )


def small_input(input_dir: str, local_bytes: int) -> bool:
    """The input is local and each telemetry table's files, with the load reports' (the
    job stages their rows into both tables), hold at most ``local_bytes``: the job will keep
    every table as local rows (see trimtab.pipeline.ingest), so a local session may compile
    with C1 only (trimtab.pipeline.session.java_options)."""
    from trimtab.pipeline.fs import local_directory

    local = local_directory(input_dir)
    if local is None:
        return False
    root = Path(local)
    sizes = {
        table: sum(f.stat().st_size for f in (root / table).rglob("*") if f.is_file())
        for table in ("node_metrics", "bundle_metrics", "load_reports")
    }
    reports = sizes.pop("load_reports")
    return all(size + reports <= local_bytes for size in sizes.values())


def _run_job(
    options: JobOptions, *, master: str | None, settings: dict[str, str], quiet: bool
) -> RunSummary:
    """Start Spark and run the job, its stages shown as a progress bar on stderr."""
    from trimtab.pipeline.job import STAGES, run_job

    with progress_bar(quiet=quiet) as bar:
        task = bar.add_task("starting Spark", total=len(STAGES))
        small = small_input(options.input, options.local_table_bytes)
        spark = start_spark(master=master, conf=settings, small=small)
        with interruptible(spark) as stop_if_asked:

            def advance(name: str) -> None:
                stop_if_asked()  # no stage starts after a Ctrl-C
                bar.update(task, description=name, completed=STAGES.index(name))

            return run_job(spark, options, progress=advance)


def _tables_table(summary: RunSummary) -> Table:
    columns = ("table", "read", "accepted", "quarantined")
    table = figures_table(columns, text=("table",), title="rows per input table")
    for name, counts in summary.tables.items():
        table.add_row(name, *(f"{counts[k]:,}" for k in ("read", "accepted", "quarantined")))
    return table


def _clusters_table(summary: RunSummary) -> Table:
    columns = (
        "cluster",
        "nodes",
        "mean load",
        "load std",
        "broker std before → after",
        "transfers",
    )
    loads = figures_table(
        columns, text=("cluster",), title="per cluster: node loads now, and the shedding plan"
    )
    for name, info in summary.clusters.items():
        before, after = info.get("std_before"), info.get("std_after")
        plan = "-" if before is None else f"{before:.3f} → {after:.3f}"
        loads.add_row(
            name,
            str(info.get("nodes", 0)),
            f"{info.get('load_mean', 0.0):.3f}",
            f"{info.get('load_std', 0.0):.3f}",
            plan,
            str(info.get("transfers", 0)),
        )
    return loads


@pipeline_app.command("stream")
def stream_cmd(
    input_dir: Annotated[
        str,
        typer.Option(
            "--input",
            help="Directory with nodes/ and the node_metrics/, bundle_metrics/ and "
            "load_reports/<cluster>/ files landing.",
        ),
    ],
    output_dir: Annotated[
        str, typer.Option("--output", help="Directory each trigger's outputs are appended to.")
    ],
    trigger: Annotated[
        str, typer.Option(help="How often to decide from the files landed: 2s, 30s, 1m...")
    ] = "1m",
    checkpoint: Annotated[
        str | None,
        typer.Option(help="Spark's checkpoint (offsets and state); default OUTPUT/_checkpoint."),
    ] = None,
    master: MasterOption = None,
    conf: ConfOption = None,
    window: Annotated[
        str, typer.Option(help="Window of the node_load means: 30s, 1m, 5m...")
    ] = "1m",
    watermark: Annotated[
        str,
        typer.Option(help="How late a row may land and still count in time order: 2m, 10m..."),
    ] = "2m",
    config: ConfigOption = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            help="Shedder: transfer, balanced, threshold, overload, uniform, avg "
            "(default: the config's loadBalancerLoadSheddingStrategy)."
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed for every random choice of the engines.", min=0)
    ] = 0,
    as_json: JsonFlag = False,
) -> None:
    """Follow the telemetry as it lands: one shedding cycle per cluster per trigger."""
    with user_errors():
        settings = _spark_settings(conf)
        options = _stream_options(
            input_dir,
            output_dir,
            trigger=trigger,
            checkpoint=checkpoint,
            window=window,
            watermark=watermark,
            config=config,
            strategy=strategy,
            seed=seed,
        )
        _run_stream(options, master=master, settings=settings, as_json=as_json)


def _stream_options(
    input_dir: str,
    output_dir: str,
    *,
    trigger: str,
    checkpoint: str | None,
    window: str,
    watermark: str,
    config: Path | None,
    strategy: str | None,
    seed: int,
) -> StreamOptions:
    """The stream's options, every one checked before Spark starts."""
    from trimtab.pipeline.loads import window_seconds
    from trimtab.pipeline.stream.options import StreamOptions

    for name, value in (("--trigger", trigger), ("--watermark", watermark)):
        try:
            seconds = window_seconds(value)
        except ValueError:
            raise TrimtabError(
                f"{name} {value!r} is not a duration: use e.g. 2s, 30s, 1m, 1h"
            ) from None
        if not 1 <= seconds <= _MAX_WINDOW_S:
            raise TrimtabError(f"{name} {value!r} must be from 1 s to 7 days: use e.g. 2s, 1m")
    _check_window(window)
    if strategy is not None:
        one_of("--strategy", strategy, STRATEGIES, what="a shedder")
    local = "://" not in input_dir or input_dir.startswith("file://")
    nodes = Path(input_dir.removeprefix("file://")) / "nodes"
    if local and not nodes.is_dir():
        raise TrimtabError(
            f"--input {input_dir}: no nodes/ directory; the stream needs the inventory there "
            "(node_metrics/ and bundle_metrics/ files may land later)"
        )
    owned_output(output_dir, marker="status.json")
    writable_output("--output", output_dir, directory=True, parents=True)
    if checkpoint is not None:
        writable_output("--checkpoint", checkpoint, directory=True, parents=True)
    return StreamOptions(
        input=input_dir,
        output=output_dir,
        checkpoint=checkpoint,
        trigger=trigger,
        window=window,
        watermark=watermark,
        config=load_config(config),
        strategy=strategy or configured_strategy(config),
        seed=seed,
    )


#: What ``pipeline stream`` says on stderr when asked to stop (SIGINT or SIGTERM).
_STOPPING = (
    "{}: stopping once the trigger under way is published (again to stop now); "
    "the same --checkpoint goes on from there\n"
)


def _run_stream(
    options: StreamOptions, *, master: str | None, settings: dict[str, str], as_json: bool
) -> None:
    """Start Spark and follow the input until interrupted; one line per trigger."""
    import json
    import signal
    from pathlib import Path as LocalPath

    from trimtab.pipeline.stream.driver import run_stream

    for name in ("node_metrics", "bundle_metrics"):  # a file stream needs its directory
        if "://" not in options.input or options.input.startswith("file://"):
            (LocalPath(options.input.removeprefix("file://")) / name).mkdir(exist_ok=True)
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        # Counted first and told with a bare write: a second signal can land while this one
        # is being handled (a Ctrl-C pressed twice, `timeout`, which signals the process and
        # its group), and a handler that ran rich again there crashed inside its lazy imports.
        stopping.append(signum)
        if len(stopping) == 1:
            os.write(2, _STOPPING.format(signal.Signals(signum).name).encode())

    def show(status: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps(status), flush=True)
            return
        stds = ", ".join(
            f"{name} std {info['std']}" if info["std"] is not None else f"{name} -"
            for name, info in status["clusters"].items()
        )
        out.print(
            f"batch {status['batch']} at {status['last_trigger']}: {status['rows_in']:,} rows, "
            f"{status['rows_quarantined']:,} quarantined, landing→decision "
            f"{status['landing_to_decision_s']} s; {stds}",
            highlight=False,
            soft_wrap=True,
        )

    # A streaming query cannot use adaptive execution (Spark warns when it is on).
    defaults = {"spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false"}
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # PySpark leaves SIGINT to `stop` (see start_spark); a stop asked for while Spark starts
    # ends the command as soon as it is up, before any query starts.
    spark = start_spark(master=master, conf=defaults | settings)
    run_stream(
        spark,
        options,
        on_status=show,
        should_stop=lambda: bool(stopping),
        hurry=lambda: len(stopping) > 1,
        on_restart=lambda why: err.print(why, highlight=False),
        on_warning=lambda why: err.print(f"[yellow]warning:[/] {why}", highlight=False),
    )
