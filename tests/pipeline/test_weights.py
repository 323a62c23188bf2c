"""bookie_weights from the pipeline equal the weights a real placement policy draws with."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from tests.pipeline.conftest import NOW
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.pipeline.generate import GeneratedFleet
from trimtab.pipeline.job import JobOptions, run_job
from trimtab.placement.weights import DiskWeights
from trimtab.systems.bookkeeper.placement_setup import make_policy


def test_bookie_weights_equal_the_placement_policys(
    spark: SparkSession, dirty_fleet: GeneratedFleet, tmp_path: Path
) -> None:
    """Per cluster, capped weights and pick probabilities match a DefaultPolicy fed the same
    latest disk samples; only writable bookies appear."""
    config = Config.of(
        diskWeightBasedPlacementEnabled=True, bookieMaxMultipleForWeightBasedPlacement=2
    )
    out = tmp_path / "out"
    run_job(spark, JobOptions(input=str(dirty_fleet.out), output=str(out), now=NOW, config=config))
    rows = pq.read_table(out / "bookie_weights").to_pylist()
    nodes = {
        (r["cluster"], r["node"]): r
        for r in pq.read_table(dirty_fleet.out / "nodes" / "nodes.parquet").to_pylist()
    }
    by_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_cluster[row["cluster"]].append(row)
        node = nodes[(row["cluster"], row["node"])]
        assert node["state"] == "writable" and node["role"] == "bookie"
    assert set(by_cluster) == {c for c, _ in nodes}
    for cluster, members in by_cluster.items():
        expected = {
            n
            for (c, n), r in nodes.items()
            if c == cluster and r["state"] == "writable" and r["role"] == "bookie"
        }
        assert {r["node"] for r in members} == expected
        policy = make_policy(config, rng=random.Random(1))
        policy.on_cluster_changed([r["node"] for r in members], [])
        policy.update_bookie_info(
            {r["node"]: (r["disk_total_bytes"], r["disk_free_bytes"]) for r in members}
        )
        assert isinstance(policy.view.weights, DiskWeights)
        pool = sorted(NodeId(r["node"]) for r in members)
        engine = dict(zip(pool, policy.view.weights.effective(pool), strict=True))
        total = sum(engine.values())
        for row in members:
            assert row["weight"] == pytest.approx(engine[NodeId(row["node"])], rel=1e-12)
            assert row["probability"] == pytest.approx(
                engine[NodeId(row["node"])] / total, rel=1e-12
            )
        assert sum(r["probability"] for r in members) == pytest.approx(1.0)
