"""Pipeline throughput against the shaped reference, and the job's fixed cost on the demo fleet.

For each fleet size (telemetry rows = node_metrics + bundle_metrics), generate the fleet once,
then in one Spark session time, each ``--repeat`` times (median printed):

* the *shaped* reference, the goal's: the same reads as the job (both telemetry tables), and
  output shaped like the job's written: ``node_metrics`` means per (cluster, node, 1-minute
  window), as many rows as ``node_load``, and ``bundle_metrics``' newest values per
  (cluster, bundle, broker);
* the *floor*, for comparison with earlier figures: a bare read of both tables and a group-by
  mean per (cluster, node) and per (cluster, bundle), written to a throwaway directory;
* the whole job (``run_job``): read, validate, quarantine, the engine stages, publish.

Prints rows/s, the job's ratio to the shaped reference (goal, issue 22: at most 1.6, and at
least 1,000,000 rows/s at 50 M rows) and to the floor, and the Spark jobs one run starts.

``--demo`` times runs on the demo fleet (``make demo``'s: ``generate-fleet --bad-rows
0.01``, 7,364 telemetry rows) instead, in one session, with the Spark jobs one run starts:
the first run (what ``make demo`` pays after starting Spark: every class loaded and compiled
for the first time), the median of the next ``--repeat`` runs (the JVM's JIT is still
compiling Spark's planner, several seconds of CPU per run on 2 cores), and the median of
``--repeat`` runs once ``--warmup`` runs have been made (warm). Goal (issue 22): a warm run
under 8 s. At this size every second is fixed cost: Spark planning and jobs, Python
workers, the engines' own work.

Usage: ``python -m bench.pipeline [--rows 1e6,5e6] [--demo [--warmup 6]] [--repeat 3]
[--master local[2]]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from trimtab.pipeline.generate import FleetSpec, generate_fleet
from trimtab.pipeline.job import JobOptions, run_job
from trimtab.pipeline.session import spark_session


def spec_for(rows: int) -> FleetSpec:
    """A fleet of about ``rows`` telemetry rows: 20 clusters of 40 nodes and 200 bundles."""
    clusters, brokers, bookies, bundles = 20, 20, 20, 200
    per_minute = clusters * (brokers + bookies + bundles)
    return FleetSpec(
        clusters=clusters,
        brokers=brokers,
        bookies=bookies,
        bundles=bundles,
        minutes=max(1, rows // per_minute),
        seed=1,
    )


#: What ``make demo`` generates (``generate-fleet --bad-rows 0.01``, the CLI's defaults).
DEMO = FleetSpec(bad_rows=0.01)


def _numeric(frame: DataFrame) -> list[str]:
    return [c for c, t in frame.dtypes if t in ("double", "bigint")]


def _save(frame: DataFrame, path: Path) -> None:
    frame.write.mode("overwrite").parquet(str(path))


def floor(spark: SparkSession, root: Path, scratch: Path) -> float:
    began = time.perf_counter()
    nodes = spark.read.parquet(str(root / "node_metrics"))
    bundles = spark.read.parquet(str(root / "bundle_metrics"))
    means = [F.mean(c) for c in _numeric(nodes)]
    _save(nodes.groupBy("cluster", "node").agg(*means), scratch / "floor-nodes")
    means = [F.mean(c) for c in _numeric(bundles)]
    _save(bundles.groupBy("cluster", "bundle").agg(*means), scratch / "floor-bundles")
    return time.perf_counter() - began


def shaped(spark: SparkSession, root: Path, scratch: Path) -> float:
    """Read + group-by + write with the job's output shape (see the module docstring)."""
    began = time.perf_counter()
    nodes = spark.read.parquet(str(root / "node_metrics"))
    window = F.window("ts", "1 minute").start.alias("window_start")
    means = [F.mean(c) for c in _numeric(nodes)]
    _save(nodes.groupBy("cluster", "node", window).agg(*means), scratch / "shaped-nodes")
    bundles = spark.read.parquet(str(root / "bundle_metrics"))
    newest = [F.max_by(c, "ts").alias(c) for c in _numeric(bundles)]
    by_key = bundles.groupBy("cluster", "bundle", "broker")
    _save(by_key.agg(F.max("ts"), *newest), scratch / "shaped-bundles")
    return time.perf_counter() - began


def job(spark: SparkSession, root: Path, scratch: Path) -> float:
    began = time.perf_counter()
    run_job(spark, JobOptions(input=str(root), output=str(scratch / "out")))
    return time.perf_counter() - began


def median_of(
    repeat: int,
    spark: SparkSession,
    timed: Callable[[SparkSession, Path, Path], float],
    *args: Path,
) -> tuple[float, int]:
    """The median seconds of ``repeat`` runs and the Spark jobs one run starts."""
    sc = spark.sparkContext
    seconds, jobs = [], []
    for _ in range(repeat):
        group = f"bench-{uuid.uuid4().hex[:8]}"
        sc.setJobGroup(group, "bench")
        seconds.append(timed(spark, *args))
        jobs.append(len(sc.statusTracker().getJobIdsForGroup(group)))
    return statistics.median(seconds), max(jobs)


def demo(spark: SparkSession, repeat: int, warmup: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="trimtab-bench-"))
    try:
        fleet = generate_fleet(DEMO, scratch / "fleet")
        rows = fleet.rows["node_metrics"] + fleet.rows["bundle_metrics"]
        first = job(spark, fleet.out, scratch)
        early, jobs = median_of(repeat, spark, job, fleet.out, scratch)
        for _ in range(warmup - 1 - repeat):
            job(spark, fleet.out, scratch)
        warm, _ = median_of(repeat, spark, job, fleet.out, scratch)
        print(
            f"demo fleet ({rows:,} telemetry rows), {jobs} Spark jobs per run: first run "
            f"{first:.1f} s; runs 2-{repeat + 1} {early:.1f} s (median); warm, after "
            f"{max(warmup, repeat + 1)} runs, {warm:.1f} s (median of {repeat}); goal: a warm "
            "run under 8 s"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def throughput(spark: SparkSession, sizes: list[int], repeat: int) -> None:
    print(
        f"{'rows':>12} {'floor s':>8} {'shaped s':>9} {'job s':>7} {'jobs':>5} "
        f"{'job rows/s':>12} {'job/shaped':>10} {'job/floor':>9}"
    )
    for size in sizes:
        scratch = Path(tempfile.mkdtemp(prefix="trimtab-bench-"))
        try:
            fleet = generate_fleet(spec_for(size), scratch / "fleet")
            rows = fleet.rows["node_metrics"] + fleet.rows["bundle_metrics"]
            floor(spark, fleet.out, scratch)  # warm the JVM and the file cache
            floor_s, _ = median_of(repeat, spark, floor, fleet.out, scratch)
            shaped_s, _ = median_of(repeat, spark, shaped, fleet.out, scratch)
            job_s, jobs = median_of(repeat, spark, job, fleet.out, scratch)
            print(
                f"{rows:>12,} {floor_s:>8.1f} {shaped_s:>9.1f} {job_s:>7.1f} {jobs:>5} "
                f"{rows / job_s:>12,.0f} {job_s / shaped_s:>10.2f} {job_s / floor_s:>9.2f}"
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e6,5e6", help="telemetry rows per fleet")
    parser.add_argument("--demo", action="store_true", help="time warm runs on the demo fleet")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--warmup", type=int, default=6, help="--demo: runs before the warm figure's"
    )
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    spark = spark_session(master=args.master, conf={"spark.ui.enabled": "false"})
    try:
        if args.demo:
            demo(spark, args.repeat, args.warmup)
        else:
            throughput(spark, [int(float(x)) for x in args.rows.split(",")], args.repeat)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
