"""Shedding plans from the pipeline equal `trimtab shed` on the same telemetry."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from tests.pipeline.conftest import NOW
from trimtab._format import plural
from trimtab.cli import app
from trimtab.pipeline.generate import FleetSpec, generate_fleet
from trimtab.pipeline.job import JobOptions, run_job


# Seed 1 is a fleet where the transfer strategy's plan raises the std (unequal brokers).
# Samples come once a minute: a 2-minute window holds two.
def _plan(spark: SparkSession, fleet: Path, out: Path) -> tuple[list[str], dict[str, Any]]:
    """The bundles the balanced plan moves (until balanced), pipeline and CLI agreeing, and
    the cluster's entry in ``run.json``."""
    summary = run_job(
        spark,
        JobOptions(
            input=str(fleet), output=str(out), now=NOW, strategy="balanced", until_balanced=True
        ),
    )
    moved = sorted(r["bundle"] for r in pq.read_table(out / "transfers").to_pylist())
    nodes = pq.read_table(fleet / "nodes")
    brokers = nodes.filter(pc.equal(nodes["role"], "broker")).drop_columns(["role"])
    pq.write_table(brokers, out.parent / f"{out.name}-brokers.parquet")
    args = ["shed", "-i", str(out.parent / f"{out.name}-brokers.parquet")]
    args += ["--brokers", str(fleet / "node_metrics"), "--bundles", str(fleet / "bundle_metrics")]
    result = CliRunner().invoke(
        app, [*args, "--strategy", "balanced", "--until-balanced", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert sorted(t["bundle"] for t in json.loads(result.stdout)["transfers"]) == moved
    (entry,) = summary.clusters.values()
    return moved, entry


def test_bundles_no_longer_reported_are_not_planned(spark: SparkSession, tmp_path: Path) -> None:
    """Bundles that stop reporting (moved, split or deleted) 30 minutes before the newest
    sample are past loadBalancerBrokerLoadDataTTLInSeconds (1800 s): the plan no longer
    moves them, in the pipeline as in `trimtab shed`. The bundles taken away are the ones the
    plan moves when they are fresh, so without the rule their stale samples would be picked."""
    spec = FleetSpec(clusters=1, brokers=5, bookies=2, bundles=24, minutes=40, seed=3)
    fleet = generate_fleet(spec, tmp_path / "in").out
    fresh, entry = _plan(spark, fleet, tmp_path / "fresh")
    assert fresh and "stale_bundles" not in entry
    table = pq.read_table(fleet / "bundle_metrics")
    # Samples each minute from 0 to 39: the last one at minute 8 is 31 minutes old.
    cutoff = pc.min(table["ts"]).as_py() + timedelta(minutes=8)
    gone = pc.is_in(table["bundle"], pa.array(fresh))
    keep = pc.invert(pc.and_(gone, pc.greater(table["ts"], pa.scalar(cutoff, table["ts"].type))))
    for old in (fleet / "bundle_metrics").iterdir():
        old.unlink()
    pq.write_table(table.filter(keep), fleet / "bundle_metrics" / "part-0.parquet")
    moved, entry = _plan(spark, fleet, tmp_path / "stale")
    assert not set(moved) & set(fresh)
    left_out = sorted(set(fresh))
    assert entry["stale_bundles"] == {"count": len(left_out), "first": left_out[:5]}
    doc = json.loads((tmp_path / "stale" / "run.json").read_text())
    assert doc["clusters"]["cluster-00"]["stale_bundles"]["count"] == len(left_out)
    # --replay, as typed: the live shedder leaves each out at the first minute past the TTL
    # (39), and the summary says so.
    args = ["pipeline", "run", "--input", str(fleet), "--output", str(tmp_path / "replay")]
    result = CliRunner().invoke(app, [*args, "--replay"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert f"{plural(len(left_out), 'bundle')} left out, not reported within" in result.stdout
    doc = json.loads((tmp_path / "replay" / "run.json").read_text())
    stale = doc["clusters"]["cluster-00"]["stale_bundles"]
    assert stale == {"count": len(left_out), "first": left_out[:5]}


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
    if strategy is None:  # transfer raises this fleet's std; balanced is offered instead
        assert doc["recommendation"]["offered"] in ("balanced", None)
        assert info["upstream"]["strategy"] == "transfer"
        assert info["upstream"]["std_after"] > info["std_before"]
    script = (out / "exports" / "pulsar-admin" / f"{cluster}.sh").read_text().splitlines()
    if warning:
        assert script.pop(0) == f"# warning: {warning}"
    if info["recommended"] is None:  # issue 43: a plan that does not earn its moves is not run
        assert doc["recommendation"]["held"] in ("within_target", "small_gain", "raises_std")
        assert script == [f"# nothing to run: {info['recommendation']}"]
        assert info["unloads"] == 0
    else:
        assert len(script) == len(doc["net_transfers"]) == info["unloads"]
        assert all(line.startswith("pulsar-admin namespaces unload ") for line in script)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--cycles", "3"], "--cycles"),
        (["--cycles", "1"], "--cycles"),
        (["--until-balanced"], "--until-balanced"),
        (["--no-until-balanced"], "--no-until-balanced"),
    ],
)
def test_replay_refuses_a_plans_cycle_options_before_spark_starts(
    tmp_path: Path, args: list[str], flag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--replay`` runs one cycle per minute: a cycle count given with it is an error, one
    line and exit 2, even when it is the default's value."""

    def no_spark(**_: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr("trimtab.pipeline.session.spark_session", no_spark)
    (tmp_path / "in" / "nodes").mkdir(parents=True)
    result = CliRunner().invoke(
        app,
        [
            "pipeline",
            "run",
            "--input",
            str(tmp_path / "in"),
            "--output",
            str(tmp_path / "o"),
            "--replay",
            *args,
        ],
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.count("error:") == 1
    assert f"--replay runs one cycle per minute of telemetry: drop {flag}," in result.stderr
    assert not (tmp_path / "o").exists()


def test_replay_decides_once_a_minute_at_its_newest_sample() -> None:
    """One cycle per minute holding a sample of the cluster (none for an empty minute), at the
    newest sample time up to that minute's end, numbered from 1; the shedder's state carries
    over (its hit count grows while the condition holds)."""
    import pandas as pd

    from trimtab.config import Config
    from trimtab.pipeline.inventory import Node
    from trimtab.pipeline.loads import SAMPLE_FIELDS
    from trimtab.pipeline.replay import replay_cluster
    from trimtab.shedding import Limits

    limits = Limits(cores=8.0, memory_bytes=2.0**35, nic_bps=1e10)
    nodes = {n: Node(limits, broker=True, writable=True) for n in ("a:1", "b:1")}
    minute = 60_000_000

    def sample(node: str, ts_us: int, cpu: float) -> dict[str, object]:
        return (
            {"cluster": "c", "node": node, "ts_us": ts_us}
            | dict.fromkeys(SAMPLE_FIELDS, 0.0)
            | {"cpu": cpu}
        )

    samples = pd.DataFrame(
        [
            sample("a:1", 0, 0.9),
            sample("b:1", 0, 0.1),
            sample("a:1", 30_000_000, 0.9),  # minute 0's newest
            sample("a:1", 3 * minute, 0.9),  # minutes 1 and 2 hold nothing
            sample("b:1", 3 * minute + 5, 0.1),
        ]
    )
    bundle = {"cluster": "c", "bundle": "t/n/0x00000000_0xffffffff", "broker": "a:1"}
    rates = dict.fromkeys(
        ("throughput_in_bytes_per_s", "throughput_out_bytes_per_s", "msg_in_per_s"), 1e6
    )
    bundles = pd.DataFrame(
        [bundle | rates | {"ts_us": 0, "msg_out_per_s": 1.0, "storage_bytes": None}]
    )
    rows = replay_cluster("c", samples, bundles, nodes, Config(), None, 0)
    cycles = [r for r in rows if r["kind"] == "cycle"]
    assert [(r["cycle"], r["at_us"]) for r in cycles] == [(1, 30_000_000), (2, 3 * minute + 5)]
    notes = [r["note"] for r in cycles]
    assert "hit 1 time" in notes[0] and "hit 2 time" in notes[1]
    (summary,) = (r for r in rows if r["kind"] == "summary")
    assert summary["note"] == "replay: 2 cycles, strategy transfer"
