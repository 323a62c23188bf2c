"""``pipeline run`` on a ``load_reports/`` table: Pulsar's LocalBrokerData documents become
node_metrics and bundle_metrics rows before the ingest, and meet its rules."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from tests.shedding.pulsar_reports import document, fixture_reports
from trimtab.pipeline.job import JobOptions, run_job

NOW = 1_790_000_000.0


def test_load_reports_are_checked_and_planned_like_the_tables(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    reports = fixture_reports(NOW)
    (source / "nodes").mkdir(parents=True)
    with (source / "nodes" / "nodes.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "cluster",
                "node",
                "cores",
                "memory_bytes",
                "disk_total_bytes",
                "nic_bps",
                "state",
                "role",
            ]
        )
        for r in reports:
            c = r.capacity
            writer.writerow(
                ["pulsar", r.broker, c.cores, c.memory_bytes, 0, c.nic_bps, "writable", "broker"]
            )
    # Hadoop paths hold no ':', so the files are not named host:port: the broker is the
    # host:port of each report's webServiceUrl
    folder = source / "load_reports" / "pulsar"
    folder.mkdir(parents=True)
    for r in reports[1:]:
        (folder / f"{r.broker.replace(':', '-')}.json").write_bytes(document(r))
    (folder / "broker9.json").write_text("{}")  # refused by the reader
    bad = json.loads(document(reports[0]))
    bad["lastStats"]["no-bundle"] = next(iter(bad["lastStats"].values()))
    (folder / "broker1.json").write_text(json.dumps(bad))  # one row refused by the rules
    out = tmp_path / "out"
    options = JobOptions(
        input=str(source), output=str(out), now=datetime.fromtimestamp(NOW + 60, UTC)
    )
    run_job(spark, options)

    run = json.loads((out / "run.json").read_text())
    assert run["tables"]["load_reports"] == {"read": 6, "accepted": 5, "quarantined": 1}
    assert run["tables"]["node_metrics"] == {"read": 5, "accepted": 5, "quarantined": 0}
    assert run["tables"]["bundle_metrics"] == {"read": 11, "accepted": 10, "quarantined": 1}
    quarantine = {(q["table"], q["rule"]): q for q in pq.read_table(out / "quarantine").to_pylist()}
    refused = quarantine[("load_reports", "bad_report")]
    assert refused["source_file"].endswith("load_reports/pulsar/broker9.json")
    assert refused["reason"].startswith("missing cpu")
    row = quarantine[("bundle_metrics", "bad_bundle")]
    assert row["source_file"].endswith("load_reports/pulsar/broker1.json")
    transfers = pq.read_table(out / "transfers").to_pylist()
    assert "broker5:8080" in {t["source"] for t in transfers}
    assert not (out / "_load_reports").exists()
