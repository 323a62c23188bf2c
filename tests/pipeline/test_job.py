"""The job's outputs: counts in run.json, atomic publication, and survival of crashes and kills."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from tests.pipeline.conftest import FinishedRun
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.generate import GeneratedFleet
from trimtab.pipeline.job import run_job
from trimtab.pipeline.output import StagedOutput


def run_json(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "run.json").read_text())
    return doc


def test_run_json_counts_are_conserved(dirty_run: FinishedRun, dirty_fleet: GeneratedFleet) -> None:
    """Per table read = accepted + quarantined; the quarantine table holds exactly those rows."""
    out = dirty_run.out
    doc = run_json(out)
    for table, counts in doc["tables"].items():
        assert counts["read"] == counts["accepted"] + counts["quarantined"]
        assert counts["read"] == dirty_fleet.rows[table]
        assert doc["quarantine_by_rule"][table] == dirty_fleet.bad.get(table, {})
    quarantine = pq.read_table(out / "quarantine").to_pylist()
    assert len(quarantine) == sum(c["quarantined"] for c in doc["tables"].values())
    assert set(quarantine[0]) == {"table", "source_file", "rule", "reason", "row"}
    assert set(doc["timings_s"]) >= {"read and validate", "write quarantine"}


def test_failed_run_leaves_previous_output_untouched(
    spark: SparkSession, dirty_run: FinishedRun, tmp_path: Path
) -> None:
    """A run that fails after it started writing publishes nothing and leaves no staging behind."""
    out = tmp_path / "out"
    shutil.copytree(dirty_run.out, out)  # the previous complete output
    options = replace(dirty_run.options, output=str(out))

    def explode(stage: str) -> None:
        if stage == "publish":
            raise RuntimeError("crash before publishing")

    with pytest.raises(RuntimeError, match="crash before publishing"):
        run_job(spark, options, progress=explode)
    assert run_json(out)["run_id"] == dirty_run.summary.run_id
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_interrupted_switch_is_recovered(spark: SparkSession, tmp_path: Path) -> None:
    """If a run died between its two renames, the next run restores the previous output first."""
    previous = tmp_path / "out.previous-20260101T000000-dead"
    previous.mkdir()
    (previous / "run.json").write_text('{"run_id": "old"}')
    (tmp_path / "out.staging-20260101T000000-dead").mkdir()
    staged = StagedOutput(HadoopFS(spark), str(tmp_path / "out"), "20260102T000000-next")
    assert run_json(tmp_path / "out") == {"run_id": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.staging-20260102T000000-next"]
    staged.abandon()


def test_small_tables_read_alike_written_by_pyarrow_or_spark(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small table staged locally is written by pyarrow, elsewhere by Spark: read back with
    Spark, both give the same schema and the same rows in the same order (nulls first)."""
    rows = [
        ("b", 2, 0.5, datetime(2026, 11, 2, 0, 1, tzinfo=UTC), None),
        ("a", None, float("nan"), None, True),
        (None, 1, -1.0, datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), False),
        ("a", 1, 2.0, datetime(2026, 3, 29, 1, 30, tzinfo=UTC), True),
    ]
    schema = "cluster string, cycle int, load double, ts timestamp, latest boolean"
    frame = spark.createDataFrame(rows, schema)
    staged = StagedOutput(HadoopFS(spark), str(tmp_path / "out"), "small")
    staged.write_small("by_pyarrow", frame, ("cluster", "cycle"))
    monkeypatch.setattr("trimtab.pipeline.output.local_directory", lambda _: None)
    staged.write_small("by_spark", frame, ("cluster", "cycle"))
    pyarrow_read = spark.read.parquet(staged.path("by_pyarrow"))
    spark_read = spark.read.parquet(staged.path("by_spark"))
    assert pyarrow_read.schema == spark_read.schema == frame.schema
    assert [str(r) for r in pyarrow_read.collect()] == [str(r) for r in spark_read.collect()]
    assert [r["cluster"] for r in pyarrow_read.collect()] == [None, "a", "a", "b"]
    staged.abandon()


@pytest.mark.slow
def test_killed_run_leaves_previous_output_readable(
    dirty_run: FinishedRun, dirty_fleet: GeneratedFleet, tmp_path: Path
) -> None:
    """SIGKILL in the middle of a real `trimtab pipeline run` leaves the last output intact."""
    out = tmp_path / "out"
    shutil.copytree(dirty_run.out, out)  # the previous complete output
    first = dirty_run.summary
    exe = Path(sys.executable).parent / "trimtab"
    proc = subprocess.Popen(
        [
            str(exe),
            "pipeline",
            "run",
            "--input",
            str(dirty_fleet.out),
            "--output",
            str(out),
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not any(p.name.startswith("out.staging-") for p in tmp_path.iterdir()):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run never started writing"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert run_json(out)["run_id"] == first.run_id
    assert pq.read_table(out / "quarantine").num_rows == sum(
        counts["quarantined"] for counts in first.tables.values()
    )


def test_small_and_large_telemetry_paths_publish_the_same_output(
    spark: SparkSession, dirty_run: FinishedRun, tmp_path: Path
) -> None:
    """Telemetry of at most ``local_table_bytes`` is checked whole as local rows, bigger
    telemetry by stored summaries and probes (the path of a fleet's real size). Forced down
    the second path, the dirty fleet gives the same output, table by table and row by row:
    the same verdicts, reasons and raw rows, loads, weights and plans."""
    out = tmp_path / "out"
    options = replace(dirty_run.options, output=str(out), local_table_bytes=0)
    run_job(spark, options)
    tables = sorted(p.name for p in dirty_run.out.iterdir() if p.is_dir())
    assert tables == sorted(p.name for p in out.iterdir() if p.is_dir())
    assert "quarantine" in tables and "node_load" in tables and "transfers" in tables
    for name in tables:
        if not any((dirty_run.out / name).glob("*.parquet")):  # exports: text per cluster
            files = sorted(p.relative_to(out) for p in (out / name).rglob("*.sh"))
            assert files, name
            for file in files:
                assert (dirty_run.out / file).read_bytes() == (out / file).read_bytes(), file
            continue
        small = pq.read_table(dirty_run.out / name)
        large = pq.read_table(out / name)
        # The same columns and types (nullability follows how each path built the frame).
        assert [(f.name, f.type) for f in small.schema] == [
            (f.name, f.type) for f in large.schema
        ], name
        assert sorted(map(str, small.to_pylist())) == sorted(map(str, large.to_pylist())), name
    small_run, large_run = run_json(dirty_run.out), run_json(out)
    for key in ("tables", "quarantine_by_rule", "clusters"):
        assert small_run[key] == large_run[key], key
