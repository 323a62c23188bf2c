"""Node loads from the pipeline equal the shedding engine's own computation."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tests.pipeline.conftest import NOW
from trimtab.config import Config
from trimtab.pipeline import loads
from trimtab.pipeline.fs import local_directory
from trimtab.pipeline.generate import GeneratedFleet
from trimtab.pipeline.ingest import ingest
from trimtab.pipeline.job import JobOptions, run_job
from trimtab.pipeline.loads import (
    METRICS,
    NODE_LOAD_SCHEMA,
    ema_by_group,
    node_loads,
    parse_window,
    write_node_loads,
)
from trimtab.readers.inventory import read_inventory
from trimtab.shedding.load import Limits, LoadModel, NodeSample


@pytest.mark.parametrize(
    ("text", "spark"),
    [("1m", "1 minutes"), ("30s", "30 seconds"), ("2h", "2 hours"), ("5 minutes", "5 minutes")],
)
def test_window_forms(text: str, spark: str) -> None:
    """Short and Spark forms of a window are accepted."""
    assert parse_window(text) == spark


def test_bad_window_is_refused() -> None:
    """A window that is not a duration says what is expected."""
    with pytest.raises(ValueError, match=r"use e\.g\. 30s"):
        parse_window("fortnight")


def test_ema_restarts_per_group() -> None:
    """Each group's first value sets its average; later ones blend with h."""
    got = ema_by_group(np.array([2.0, 1.5, 3.0, 11.0]), np.array(["a", "a", "b", "b"]), 0.75)
    assert got.tolist() == pytest.approx([2.0, 1.875, 3.0, 5.0])


@pytest.mark.parametrize("normalisation", ["capacity", "absolute"])
def test_pipeline_loads_equal_the_engines_fold_over_every_sample(
    spark: SparkSession, dirty_fleet: GeneratedFleet, tmp_path: Path, normalisation: str
) -> None:
    """Two samples per window: each window's weighted max and moving averages are what
    LoadModel.fold (as `trimtab shed` folds) gives after the window's last accepted sample."""
    config = Config.of(load_normalisation=normalisation)
    out = tmp_path / "out"
    run_job(
        spark,
        JobOptions(
            input=str(dirty_fleet.out), output=str(out), now=NOW, window="2m", config=config
        ),
    )
    rows = pq.read_table(out / "node_load").to_pylist()
    assert rows and all(r["samples"] == 2 for r in rows if not r["latest"])
    for part in (out / "node_load").glob("*.parquet"):  # each file in order, unsorted by Spark
        keys = [
            (r["cluster"], r["node"], r["window_start"]) for r in pq.read_table(part).to_pylist()
        ]
        assert keys == sorted(keys)
    model = LoadModel.of(config.shedding)
    table = pq.read_table(Path(dirty_fleet.out) / "nodes" / "nodes.parquet").to_pylist()
    nodes = {(r["cluster"], r["node"]): r for r in table}
    limits = {
        k: Limits(cores=v["cores"], memory_bytes=v["memory_bytes"], nic_bps=v["nic_bps"])
        for k, v in nodes.items()
    }
    samples = _accepted_samples(spark, dirty_fleet)
    by_node: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_node[(row["cluster"], row["node"])].append(row)
    for (cluster, node), windows in by_node.items():
        reference = None
        if normalisation == "absolute":
            members = [
                limits[k] for k in by_node if k[0] == cluster and nodes[k]["role"] != "bookie"
            ]
            reference = Limits.reference(members)
        windows.sort(key=lambda r: r["window_start"])
        assert windows[-1]["latest"] and sum(w["latest"] for w in windows) == 1
        history = sorted(samples[(cluster, node)], key=lambda s: s.ts)
        for window in windows:
            end = window["last_sample_ts"].timestamp()
            through = [s for s in history if s.ts <= end]
            engine = model.fold(node, through, limits[(cluster, node)], reference)
            assert engine is not None
            assert window["samples"] == len([s for s in through if s.ts >= _start(window)])
            assert window["folded_samples"] == len(through) == engine.samples
            assert window["load"] == pytest.approx(engine.weighted_max_ema, rel=1e-9)
            assert window["msg_throughput_ema"] == pytest.approx(
                engine.msg_throughput_ema, rel=1e-9
            )
            assert window["weighted_max"] == pytest.approx(engine.weighted_max, rel=1e-9)
    clusters = {r["cluster"] for r in rows}
    inventory_clusters = set(read_inventory(Path(dirty_fleet.out) / "nodes").clusters)
    assert clusters == inventory_clusters


def _start(window: dict[str, Any]) -> float:
    return float(window["window_start"].timestamp())


def _accepted_samples(
    spark: SparkSession, fleet: GeneratedFleet
) -> dict[tuple[str, str], list[NodeSample]]:
    """The node_metrics rows the pipeline accepts, as the engine's samples per node."""
    fields = [m for m in METRICS if m not in ("disk_free_bytes", "disk_total_bytes")]
    accepted = ingest(spark, str(fleet.out), now=NOW).accepted("node_metrics")
    micros = accepted.select("cluster", "node", F.unix_micros("ts").alias("_us"), *fields)
    samples: dict[tuple[str, str], list[NodeSample]] = defaultdict(list)
    for row in micros.collect():
        sample = NodeSample(ts=row["_us"] / 1e6, **{m: float(row[m]) for m in fields})
        samples[(row["cluster"], row["node"])].append(sample)
    return samples


def test_python_written_node_load_equals_sparks_rows(
    spark: SparkSession, dirty_fleet: GeneratedFleet, tmp_path: Path
) -> None:
    """On a local output the Python side writes ``node_load`` itself; elsewhere (HDFS, object
    stores) Spark writes :func:`node_loads`' rows. Both hold the same rows and types, the
    written files read back as the schema the job declares, and the latest windows handed
    back to the later stages are the rows marked ``latest``."""
    ingested = ingest(spark, str(dirty_fleet.out), now=NOW)
    inputs = (ingested.accepted("node_metrics"), ingested.accepted("nodes"), Config().shedding)
    latest = write_node_loads(*inputs, str(tmp_path / "py"), window="2m")
    node_loads(*inputs, window="2m").write.parquet(str(tmp_path / "spark"))
    keys = ["cluster", "node", "window_start"]
    ours = pq.read_table(tmp_path / "py").to_pandas().sort_values(keys, ignore_index=True)
    spark_rows = pq.read_table(tmp_path / "spark").to_pandas().sort_values(keys, ignore_index=True)
    assert len(ours) == len(spark_rows) > 0
    assert list(ours.columns) == list(spark_rows.columns)
    pd.testing.assert_frame_equal(ours, spark_rows, check_dtype=False)
    read = spark.read.schema(NODE_LOAD_SCHEMA).parquet(str(tmp_path / "py"))
    assert read.schema == spark.read.parquet(str(tmp_path / "spark")).schema
    assert read.count() == len(ours)
    handed = latest.toPandas().sort_values(keys, ignore_index=True)
    marked = ours[ours["latest"]].reset_index(drop=True)
    assert len(handed) == ours[["cluster", "node"]].drop_duplicates().shape[0]
    pd.testing.assert_frame_equal(handed, marked, check_dtype=False)
    assert local_directory("file:/tmp/x") == "/tmp/x" and local_directory("hdfs://nn/x") is None


def test_a_window_without_a_value_holds_null() -> None:
    """A metric no sample of a window has is null in its mean and its last value, not NaN
    or 0, whichever side writes the rows; a window of one sample keeps its values as they
    are, and a mean skips the missing ones."""
    node, ts, window = np.array([0, 0, 1]), np.array([1, 2, 1]), np.array([0, 0, 0])
    values = {m: np.array([1.0, 2.0, 3.0]) for m in METRICS}
    values["disk_free_bytes"] = np.array([np.nan, np.nan, 5.0])
    values["cpu"] = np.array([np.nan, 4.0, 3.0])
    folded = {name: np.zeros(3) for name in ("weighted_max", "load", "msg_throughput_ema")}
    table = loads._arrow(loads._per_window(node, ts, window, values, folded))
    assert table.column("samples").to_pylist() == [2, 1]
    assert table.column("disk_free_bytes").to_pylist() == [None, 5.0]
    assert table.column("last_disk_free_bytes").to_pylist() == [None, 5]
    assert table.column("cpu").to_pylist() == [4.0, 3.0]
    assert table.column("latest").to_pylist() == [True, True]
    assert table.column("folded_samples").to_pylist() == [2, 1]
