"""Shedding plans from the pipeline equal `trimtab shed` on the same telemetry."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from tests.pipeline.conftest import NOW
from trimtab.cli import app
from trimtab.pipeline.generate import FleetSpec, generate_fleet
from trimtab.pipeline.job import JobOptions, run_job


# Seed 1 is a fleet where the transfer strategy's plan raises the std (unequal brokers).
# Samples come once a minute: a 2-minute window holds two.
@pytest.mark.parametrize(
    ("strategy", "seed", "window"),
    [("balanced", 3, "1m"), ("transfer", 1, "1m"), ("balanced", 3, "2m"), (None, 1, "1m")],
)
def test_pipeline_transfers_equal_the_shed_command(
    spark: SparkSession, tmp_path: Path, strategy: str | None, seed: int, window: str
) -> None:
    """Whatever the samples per window: the pipeline plans exactly what the engine, run by
    `trimtab shed` on the brokers' rows, plans, with the same warning when the plan raises
    the std; the pulsar-admin export matches and carries the warning as a comment. With no
    strategy named, both recommend balanced, with upstream's transfer plan beside it."""
    fleet = generate_fleet(
        FleetSpec(clusters=1, brokers=5, bookies=2, bundles=24, minutes=10, seed=seed),
        tmp_path / "in",
    )
    out = tmp_path / "out"
    summary = run_job(
        spark,
        JobOptions(
            input=str(fleet.out),
            output=str(out),
            now=NOW,
            window=window,
            strategy=strategy,
            seed=seed,
        ),
    )
    got = [
        (r["cycle"], r["bundle"], r["source"], r["destination"])
        for r in pq.read_table(out / "transfers").to_pylist()
    ]
    # The same telemetry, brokers only, through the shedding CLI.
    nodes = pq.read_table(fleet.out / "nodes")
    brokers = nodes.filter(pc.equal(nodes["role"], "broker"))
    metrics = pq.read_table(fleet.out / "node_metrics")
    broker_metrics = metrics.filter(pc.is_in(metrics["node"], brokers["node"]))
    pq.write_table(brokers.drop_columns(["role"]), tmp_path / "brokers.parquet")
    pq.write_table(broker_metrics, tmp_path / "broker_metrics.parquet")
    result = CliRunner().invoke(
        app,
        [
            "shed",
            "-i",
            str(tmp_path / "brokers.parquet"),
            "--brokers",
            str(tmp_path / "broker_metrics.parquet"),
            "--bundles",
            str(fleet.out / "bundle_metrics"),
            *(["--strategy", strategy] if strategy else []),
            "--until-balanced",
            "--seed",
            str(seed),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    want = [(t["cycle"], t["bundle"], t["source"], t["destination"]) for t in doc["transfers"]]
    assert sorted(got) == sorted(want)
    (cluster,) = summary.clusters
    assert summary.clusters[cluster]["std_before"] == pytest.approx(doc["std_before"], abs=1e-6)
    assert summary.clusters[cluster]["std_after"] == pytest.approx(doc["std_after"], abs=1e-6)
    loads = {
        r["broker"]: (r["load_before"], r["load_after"])
        for r in pq.read_table(out / "plan_loads").to_pylist()
    }
    assert loads == {
        b["broker"]: (
            pytest.approx(b["load_before"], rel=1e-9),
            pytest.approx(b["load_after"], rel=1e-9),
        )
        for b in doc["brokers"]
    }
    assert summary.clusters[cluster]["transfers"] == len(want)
    warning = summary.clusters[cluster].get("warning")
    assert warning == doc["warning"]
    assert (warning is not None) == (strategy == "transfer")
    info = summary.clusters[cluster]
    assert info["recommendation"] == doc["recommendation"]["sentence"]
    assert info["recommended"] == doc["recommendation"]["strategy"]
    assert info["upstream"]["std_after"] == pytest.approx(doc["upstream"]["std_after"], abs=1e-6)
    assert info["upstream"]["transfers"] == len(doc["upstream"]["transfers"])
    if strategy is None:  # transfer raises this fleet's std; balanced is recommended instead
        assert info["recommended"] == "balanced" and info["std_after"] < info["std_before"]
        assert info["upstream"]["strategy"] == "transfer"
        assert info["upstream"]["std_after"] > info["std_before"]
    script = (out / "exports" / "pulsar-admin" / f"{cluster}.sh").read_text().splitlines()
    if warning:
        assert script.pop(0) == f"# warning: {warning}"
    assert len(script) == len(want)
    assert all(line.startswith("pulsar-admin namespaces unload ") for line in script)
