"""Pipeline throughput: end-to-end rows per second against the engine's own floor.

For each fleet size (telemetry rows = node_metrics + bundle_metrics), generate the fleet once,
then in one Spark session time:

* the floor: a bare read of both telemetry tables and a group-by mean per (cluster, node) and
  per (cluster, bundle), written to a throwaway Parquet directory;
* a second reference, *shaped* like the job's output: the same read, but ``node_metrics``
  grouped per (cluster, node, 1-minute window), as many groups as ``node_load`` has rows, and
  ``bundle_metrics`` per (cluster, bundle, broker) with its newest time, both written. It is
  not the goal's floor; it shows how much of the gap is the output the job must write;
* a third, *copy*: ``node_metrics`` read and written back unchanged. The job writes at least
  that many rows (``node_load`` has one per node and window, and these fleets sample each node
  once a minute), so floor + copy is about the least any job meeting the output contract can
  take; ``bound`` prints it as a multiple of the floor;
* the whole job (``run_job``): read, validate, quarantine, the engine stages, publish.

Prints rows/s, the job/floor ratio, the job/shaped ratio and the bound. Goals (issue 7):
job/floor <= 3 and >= 500,000 rows/s. Usage: ``python -m bench.pipeline [--rows 1e6,1e7,5e7]
[--master local[2]]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
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


def copy(spark: SparkSession, root: Path, scratch: Path) -> float:
    """``node_metrics`` read and written as it is: no rule, no grouping, no engine."""
    began = time.perf_counter()
    _save(spark.read.parquet(str(root / "node_metrics")), scratch / "copy-nodes")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e6,1e7,5e7", help="telemetry rows per fleet")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    sizes = [int(float(x)) for x in args.rows.split(",")]
    spark = spark_session(master=args.master, conf={"spark.ui.enabled": "false"})
    print(
        f"{'rows':>12} {'floor s':>9} {'copy s':>9} {'shaped s':>9} {'job s':>9} "
        f"{'job rows/s':>12} {'job/floor':>9} {'job/shaped':>10} {'bound':>6}"
    )
    for size in sizes:
        scratch = Path(tempfile.mkdtemp(prefix="trimtab-bench-"))
        try:
            fleet = generate_fleet(spec_for(size), scratch / "fleet")
            rows = fleet.rows["node_metrics"] + fleet.rows["bundle_metrics"]
            floor(spark, fleet.out, scratch)  # warm the JVM and the file cache
            floor_s = floor(spark, fleet.out, scratch)
            copy_s = copy(spark, fleet.out, scratch)
            shaped_s = shaped(spark, fleet.out, scratch)
            began = time.perf_counter()
            run_job(spark, JobOptions(input=str(fleet.out), output=str(scratch / "out")))
            job_s = time.perf_counter() - began
            print(
                f"{rows:>12,} {floor_s:>9.1f} {copy_s:>9.1f} {shaped_s:>9.1f} {job_s:>9.1f} "
                f"{rows / job_s:>12,.0f} {job_s / floor_s:>9.2f} {job_s / shaped_s:>10.2f} "
                f"{(floor_s + copy_s) / floor_s:>6.2f}"
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
