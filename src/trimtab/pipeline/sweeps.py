"""Simulator sweeps on Spark: one Spark task per (parameter set, seed), results as DataFrames.

Algorithm
    1. The sweep's tasks (:mod:`trimtab.sim.sweep`: shedding sizes × strategies × trials, or
       diskfill grid settings × trials) become a DataFrame with an explicit schema, one row
       per task.
    2. ``spark.range(n, numPartitions=n)`` joined with the broadcast task table puts exactly
       one task in each partition: a range splits evenly and a broadcast join keeps the
       stream's partitioning, where hashing or range-sampling task ids could put two in one
       partition and leave an executor idle while another runs both.
    3. ``mapInPandas`` runs each task with the simulators' own functions (Arrow carries the
       rows in and the results out); the results are joined back to the task parameters.
    4. ``runs`` is written once (one Parquet file sorted by task), read back and summarised per
       parameter set with Spark aggregates into ``summary``: trials; for each boolean result
       the share of runs where it held (``reached_share``); for each metric the mean, sample
       std, min, p10, p50, p90 and max (``transfers_mean`` ... ``transfers_max``).
    5. ``sweep.json`` (what was swept, the summary, timings) and ``sweep.html`` complete the
       output, staged and then published atomically like the fleet job's
       (:class:`~trimtab.pipeline.output.StagedOutput`).

Seeds are part of the tasks, so the runs equal the direct simulator's for the same seeds,
whatever the master, the executor count or the order tasks finish in.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trimtab.errors import TrimtabError
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.output import StagedOutput
from trimtab.pipeline.progress import StageProgress, watch_stages
from trimtab.report.sweep import sweep_page
from trimtab.sim.sweep import Sweep

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["QUANTILES", "SweepResult", "SweepStep", "run_sweep", "simulations", "summarise"]

_GLOB = "[]{}*?\\"

#: The percentiles every summary gives, with their column suffixes.
QUANTILES = (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))


@dataclass(frozen=True, slots=True)
class SweepStep:
    """What :func:`run_sweep` is doing: a phase and, while Spark runs one, a stage's tasks."""

    phase: str
    stage: StageProgress | None = None


@dataclass(slots=True)
class SweepResult:
    """Where the output went, what was swept, the summary rows and how long each phase took."""

    output: str
    run_id: str
    tasks: int
    sweep: dict[str, Any]
    spark: dict[str, Any] = field(default_factory=dict)
    summary: list[dict[str, Any]] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)

    @property
    def simulations_per_s(self) -> float:
        """Tasks over the time of the phase that runs them (including writing ``runs``)."""
        seconds = self.timings_s.get("simulate", 0.0)
        return self.tasks / seconds if seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        """``sweep.json`` and ``trimtab sweep ... --json``."""
        return {
            "output": self.output,
            "run_id": self.run_id,
            "sweep": self.sweep,
            "spark": self.spark,
            "tasks": self.tasks,
            "tables": {"runs": "one row per task", "summary": "one row per parameter set"},
            "simulations_per_s": round(self.simulations_per_s, 3),
            "timings_s": self.timings_s,
            "summary": self.summary,
        }


def _columns(schema: str) -> list[str]:
    return [part.split()[0] for part in schema.split(", ")]


def simulations(spark: SparkSession, sweep: Sweep) -> DataFrame:
    """One row per task: its parameters, then its results (steps 1-3 of the docstring)."""
    from pyspark.sql import functions as F

    tasks = sweep.tasks()
    names = _columns(sweep.task_schema)
    table = spark.createDataFrame([tuple(t[c] for c in names) for t in tasks], sweep.task_schema)
    spread = (
        spark.range(0, len(tasks), 1, max(1, len(tasks)))
        .select(F.col("id").cast("int").alias("task"))
        .join(F.broadcast(table), "task")
    )
    results = spread.mapInPandas(_runner(sweep), f"task int, {sweep.result_schema}")
    return results.join(F.broadcast(table), "task").select(*names, *_columns(sweep.result_schema))


def _runner(sweep: Sweep) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The function each Spark task runs: ``sweep.run`` on every row it is given."""
    names = ["task", *_columns(sweep.result_schema)]

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import pandas as pd

        for batch in batches:
            records: list[dict[str, Any]] = batch.to_dict("records")  # type: ignore[assignment]
            rows = [{"task": t["task"], **sweep.run(t)} for t in records]
            yield pd.DataFrame.from_records(rows, columns=names)

    return run


def summarise(runs: DataFrame, sweep: Sweep) -> DataFrame:
    """One row per parameter set (step 4 of the docstring), in parameter-set order."""
    from pyspark.sql import functions as F

    aggregates = [F.count("*").cast("int").alias("trials")]
    aggregates += [F.avg(F.col(b).cast("double")).alias(f"{b}_share") for b in sweep.shares]
    for m in sweep.metrics:
        value = F.col(m).cast("double")
        aggregates += [
            F.avg(value).alias(f"{m}_mean"),
            F.stddev_samp(value).alias(f"{m}_std"),
            F.min(value).alias(f"{m}_min"),
            F.percentile(value, [q for _, q in QUANTILES]).alias(f"_{m}_q"),
            F.max(value).alias(f"{m}_max"),
        ]
    grouped = runs.groupBy(*sweep.parameters).agg(*aggregates)
    columns = [*sweep.parameters, "trials", *(f"{b}_share" for b in sweep.shares)]
    stats = []
    for m in sweep.metrics:
        stats += [F.col(f"{m}_{s}") for s in ("mean", "std", "min")]
        stats += [F.col(f"_{m}_q")[i].alias(f"{m}_{name}") for i, (name, _) in enumerate(QUANTILES)]
        stats.append(F.col(f"{m}_max"))
    return grouped.select(*columns, *stats)


def run_sweep(
    spark: SparkSession,
    sweep: Sweep,
    output: str,
    *,
    progress: Callable[[SweepStep], None] | None = None,
) -> SweepResult:
    """Run every task of ``sweep`` on Spark and publish ``runs``, ``summary``, ``sweep.json``
    and ``sweep.html`` under ``output``; on any failure the previous output stays as it was."""
    if any(c in output for c in _GLOB):
        raise TrimtabError(
            f"output {output!r}: Spark reads paths back as glob patterns, so it cannot contain "
            f"any of {' '.join(_GLOB)}; choose another directory name"
        )
    started = datetime.now(UTC)
    run_id = started.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    result = SweepResult(output=output, run_id=run_id, tasks=0, sweep=sweep.describe())
    report = progress or (lambda _: None)
    sc = spark.sparkContext
    result.spark = {"master": sc.master, "default_parallelism": sc.defaultParallelism}

    @contextmanager
    def phase(name: str) -> Iterator[None]:
        report(SweepStep(name))
        began = time.perf_counter()
        with watch_stages(spark, lambda s: report(SweepStep(name, s)), description=name):
            yield
        result.timings_s[name] = round(time.perf_counter() - began, 3)

    out = StagedOutput(HadoopFS(spark), output, run_id)  # the sweep's one FileSystem wrapper
    try:
        with phase("simulate"):
            runs = simulations(spark, sweep)
            out.write_table("runs", runs.repartition(1).sortWithinPartitions("task"))
        with phase("summarise"):
            stored = spark.read.parquet(out.path("runs"))
            summary = summarise(stored, sweep).repartition(1).sortWithinPartitions("setting")
            out.write_table("summary", summary)
            rows = spark.read.parquet(out.path("summary")).orderBy("setting").collect()
            result.summary = [row.asDict() for row in rows]
            result.tasks = sum(int(r["trials"]) for r in result.summary)
        with phase("publish"):
            result.output = out.target
            doc = result.as_json()
            out.write_text("sweep.html", sweep_page(doc))
            out.write_json("sweep.json", doc)
            result.output = out.commit()
    except BaseException:
        out.abandon()
        raise
    return result
