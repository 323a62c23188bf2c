"""``pipeline stream`` reads what ``pipeline run`` reads: CSV files matched by each file's own
header (columns in any order, extra ones, quoted cells) and ``load_reports/``, with the batch
job's rows, rules and reasons. The stream runs in this process on the tests' Spark session,
over files that are all there when it starts (so its first trigger reads them all)."""

from __future__ import annotations

import csv
import io
import json
import random
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from tests.pipeline.engine_reference import (
    decision_rows,
    engine_cycle,
)
from tests.shedding.pulsar_reports import document, fixture_reports
from trimtab.config.loader import read_config
from trimtab.errors import InputError
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.generate import FleetSpec, generate_fleet
from trimtab.pipeline.ingest.read import read_table
from trimtab.pipeline.job import JobOptions, run_job
from trimtab.pipeline.schemas import INPUT_TABLES
from trimtab.pipeline.stream.driver import run_stream
from trimtab.pipeline.stream.options import StreamOptions
from trimtab.shedding import (
    LoadModel,
    shedder_for,
)

NOW = 1_790_000_000.0  # the load reports' time
#: Rules whose ``row`` both render from the cells as read (the others from typed values,
#: which the stream renders in Python).
RAW_RULES = {"malformed", "wrong_type", "bad_report"}


def _cell(value: Any) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return repr(float(value)) if isinstance(value, float) else str(value)


def _columns(frame: pd.DataFrame, seed: int, outside: bool) -> list[str]:
    """``frame``'s columns shuffled, with column ``extra`` (outside the contract) or not."""
    columns = [*frame.columns, *(["extra"] if outside else [])]
    random.Random(seed).shuffle(columns)
    return columns


def _csv(
    frame: pd.DataFrame,
    seed: int,
    *,
    outside: bool = True,
    extra: Sequence[list[str]] = (),
    **kw: Any,
) -> str:
    """``frame`` as CSV with its columns shuffled (see ``_columns``); ``extra`` lines are
    appended as they are given (cells in the header's order)."""
    columns = _columns(frame, seed, outside)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", **kw)
    writer.writerow(columns)
    for row in frame.to_dict("records"):
        writer.writerow([_cell(row.get(c, "x")) for c in columns])
    for cells in extra:
        writer.writerow(cells)
    return out.getvalue()


def _shuffled_row(frame: pd.DataFrame, seed: int, outside: bool, **changes: Any) -> list[str]:
    """One row of ``frame`` changed, its cells in the order ``_csv`` gives them."""
    row = frame.iloc[0].to_dict() | {"extra": "x"} | changes
    return [_cell(row[c]) for c in _columns(frame, seed, outside)]


@pytest.mark.slow
def test_stream_reads_csv_by_header_and_load_reports_as_the_batch_job(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    gen = generate_fleet(
        FleetSpec(clusters=1, brokers=4, bookies=1, bundles=8, minutes=2), tmp_path / "gen"
    ).out
    (source / "nodes").mkdir(parents=True)
    for file in (gen / "nodes").glob("*.parquet"):
        (source / "nodes" / file.name).write_bytes(file.read_bytes())
    nodes = pq.read_table(gen / "nodes").to_pandas()
    samples = pq.read_table(gen / "node_metrics").to_pandas()
    bundles = pq.read_table(gen / "bundle_metrics").to_pandas()

    # the generated telemetry as CSV, each file with its own column order
    stamps = sorted(samples["ts"].unique())
    for i, stamp in enumerate(stamps):
        minute = samples[samples["ts"] == stamp]
        # minute 0 has a column outside the contract, so Spark's reader parses only the
        # contract's columns and a line with a cell too many is read (here: a duplicate);
        # minute 1 has none, and such a line is malformed
        outside = i == 0
        bad = [_shuffled_row(minute, i, outside, cpu="abc")]
        bad += [[*_shuffled_row(minute, i, outside), "one cell too many"]]
        path = source / "node_metrics" / f"m{i}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_csv(minute, seed=i, outside=outside, extra=bad))
    quoted = [_shuffled_row(bundles, 7, True, bundle="t,n/0x0_0x1")]  # a quoted cell with a comma
    path = source / "bundle_metrics" / "all.csv"
    path.parent.mkdir(parents=True)
    path.write_text(_csv(bundles, seed=7, extra=quoted, quoting=csv.QUOTE_ALL))
    # CRLF, blank lines, a header name quoted and spaced, a short line, and a quote left open
    # (Spark's reader takes the rest of the line as the cell)
    (source / "bundle_metrics" / "crlf.csv").write_bytes(
        b' "broker" ,ts,"cluster",bundle,msg_in_per_s,msg_out_per_s,'
        b"throughput_in_bytes_per_s,throughput_out_bytes_per_s\r\n\r\n"
        b"b:1,2026-11-01T00:00:00Z,elsewhere,t/n/0x0_0x1,1,2,3,4\r\n   \r\n"
        b'b:1,2026-11-01T00:01:00Z,elsewhere,"t/n/0x0_0x1",1,2,3\r\n'
        b'b:1,2026-11-01T00:02:00Z,elsewhere,"t/n/0x0_0x1,1,2,3,4\r\n'
    )

    # a Latin-1 export (issue 43: the stream took what the batch job refuses): a row of it is
    # malformed, "not UTF-8", in both
    (source / "bundle_metrics" / "latin1.csv").write_bytes(
        "broker,ts,cluster,bundle,msg_in_per_s,msg_out_per_s,"
        "throughput_in_bytes_per_s,throughput_out_bytes_per_s\n"
        "b:1,2026-11-01T00:00:00Z,z\u00fcrich,t/n/0x0_0x1,1,2,3,4\n".encode("latin-1")
    )

    # load reports of another cluster (the test of pipeline run's load_reports, plus a file
    # of JSON lines: an older report of broker1 and a line that is not JSON)
    reports = fixture_reports(NOW)
    inventory = [
        [
            "pulsar",
            r.broker,
            str(r.capacity.cores),
            str(r.capacity.memory_bytes),
            "0",
            str(r.capacity.nic_bps),
            "writable",
            "broker",
        ]
        for r in reports
    ]
    header = "cluster,node,cores,memory_bytes,disk_total_bytes,nic_bps,state,role"
    (source / "nodes" / "pulsar.csv").write_text(
        header + "\n" + "\n".join(",".join(r) for r in inventory) + "\n"
    )
    folder = source / "load_reports" / "pulsar"
    folder.mkdir(parents=True)
    for r in reports[1:]:
        (folder / f"{r.broker.replace(':', '-')}.json").write_bytes(document(r))
    (folder / "broker9.json").write_text("{}")
    doc = json.loads(document(reports[0]))
    doc["lastStats"]["no-bundle"] = next(iter(doc["lastStats"].values()))
    (folder / "broker1.json").write_text(json.dumps(doc))
    older = replace(reports[0], last_update=NOW - 60)
    (folder / "older.jsonl").write_text(document(older).decode() + "\nnot json\n")

    run_job(spark, JobOptions(input=str(source), output=str(tmp_path / "batch")))
    batch = pq.read_table(tmp_path / "batch" / "quarantine").to_pandas()
    assert set(zip(batch["table"], batch["rule"], strict=True)) == {
        ("node_metrics", "wrong_type"),
        ("node_metrics", "duplicate"),
        ("node_metrics", "malformed"),
        ("bundle_metrics", "bad_bundle"),
        ("bundle_metrics", "malformed"),
        ("bundle_metrics", "unknown_cluster"),
        ("load_reports", "bad_report"),
    }
    assert len(batch) == 12
    assert batch["reason"].str.contains("cluster holds bytes that are not UTF-8").sum() == 1

    # a CSV file lacking a required column: the batch job stops; the stream refuses its rows
    lacking = samples[samples["ts"] == stamps[0]].drop(columns=["node"])
    (source / "node_metrics" / "no-node.csv").write_text(_csv(lacking, seed=3))
    fs = HadoopFS(spark)
    with pytest.raises(InputError) as stopped:
        read_table(
            spark,
            fs,
            str(source),
            INPUT_TABLES["node_metrics"],
            now=datetime.now(UTC),
            future_tolerance_s=300.0,
        )

    config = tmp_path / "broker.conf"
    config.write_text("loadBalancerSheddingConditionHitCountThreshold=0\n")  # act at once
    loaded = read_config(config).config
    live = tmp_path / "live"
    deadline = time.monotonic() + 300

    def published() -> bool:
        assert time.monotonic() < deadline, "no trigger published in 300 s"
        return (live / "status.json").exists()

    options = StreamOptions(
        input=str(source), output=str(live), trigger="1s", config=loaded, inventory_poll_s=1.0
    )
    run_stream(spark, options, should_stop=published)

    status = json.loads((live / "status.json").read_text())
    assert status["batch"] == 0  # every file in the first trigger
    mine = pd.read_parquet(live / "quarantine")
    mine["name"] = [PurePosixPath(f).name for f in mine["source_file"]]
    batch["name"] = [PurePosixPath(f).name for f in batch["source_file"]]
    headless = mine[mine["name"] == "no-node.csv"]
    assert len(headless) == len(lacking)
    assert set(headless["rule"]) == {"missing_key"}
    assert set(headless["reason"]) == {str(stopped.value)}
    mine = mine[mine["name"] != "no-node.csv"]
    key = ["table", "rule", "reason", "name"]
    assert _rows(mine[key]) == _rows(batch[key])
    same = mine[mine["rule"].isin(RAW_RULES)]
    assert _rows(same[[*key, "row"]]) == _rows(batch[batch["rule"].isin(RAW_RULES)][[*key, "row"]])
    bad_reports = set(mine[mine["table"] == "load_reports"]["reason"])
    assert any(r.startswith("missing cpu") for r in bad_reports)
    assert any(r.startswith("not JSON") for r in bad_reports)

    # each cluster's first cycle is the engine's on the rows accepted: all the generated ones,
    # and every report's (broker1 twice), its bundle with a bad name left out
    decided = pd.read_parquet(live / "decisions")
    report_samples = pd.DataFrame([r.node_row("pulsar") for r in [*reports, older]]).assign(
        ts=lambda f: pd.to_datetime(f["ts"], unit="s", utc=True)
    )
    report_bundles = pd.DataFrame(
        [b for r in [*reports, older] for b in r.bundle_rows("pulsar")]
    ).assign(ts=lambda f: pd.to_datetime(f["ts"], unit="s", utc=True))
    pulsar_nodes = pd.DataFrame(
        [
            {
                "cluster": "pulsar",
                "node": r.broker,
                "cores": r.capacity.cores,
                "memory_bytes": r.capacity.memory_bytes,
                "nic_bps": r.capacity.nic_bps,
                "state": "writable",
                "role": "broker",
            }
            for r in reports
        ]
    )
    everyone = pd.concat([nodes, pulsar_nodes])
    all_samples = pd.concat([samples, report_samples])
    all_bundles = pd.concat([bundles, report_bundles])
    clusters = sorted(set(everyone["cluster"]))
    assert "pulsar" in set(decided["cluster"])
    assert set(decided["cycle"]) == {1}
    transfers = pd.read_parquet(live / "transfers")
    for cluster in clusters:
        result = engine_cycle(
            LoadModel.of(loaded.shedding),
            shedder_for(loaded.shedding),
            cluster,
            everyone,
            all_samples,
            all_bundles,
        )
        want = decision_rows(result)
        got = decided[decided["cluster"] == cluster]
        assert _rows(got[["label", "reason", "broker", "bundle"]]) == sorted(w[:4] for w in want), (
            cluster
        )
        moves = transfers[transfers["cluster"] == cluster][["bundle", "source", "destination"]]
        assert _rows(moves) == sorted(w[3:] for w in want if w[4] is not None), cluster
    assert (transfers["cluster"] == "pulsar").sum() == 2  # broker5 and broker4 shed one each


def _rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    plain = frame.astype(object)
    return sorted(
        tuple(None if pd.isna(v) else v for v in r) for r in plain.itertuples(index=False)
    )


def test_a_report_file_gives_the_cluster_its_folder_names() -> None:
    """What the stream's UDF makes of one file of ``load_reports/``: the batch job's rows
    (``report_rows``), the cluster from the folder, none for a file deeper down."""
    from trimtab.pipeline.stream.report_files import report_file

    base = "file:/in/load_reports"
    report = fixture_reports(NOW)[0]
    data = document(report)
    rows = report_file(base, f"{base}/pulsar/b1.json", data)
    assert [(r[0], r[2]) for r in rows] == [("node_metrics", "pulsar")] + [
        ("bundle_metrics", "pulsar")
    ] * len(report.bundle_rows("pulsar"))
    assert json.loads(str(rows[0][1])) == report.node_row("pulsar")
    # directly under load_reports/: no cluster (its rows are refused as missing_key)
    assert {r[2] for r in report_file(base, f"{base}/b1.json", data)} == {""}
    assert report_file(base, f"{base}/pulsar/deeper/b1.json", data) == []
    assert report_file(base, f"{base}/pulsar/b1.json", b"\xff") == [
        (None, None, "pulsar", "not UTF-8 text", "")
    ]
    lines = report_file(base, f"{base}/pulsar/all.jsonl", data + b"\n\n[]\n")
    assert [r[3] for r in lines if r[3] is not None] == ["a load report is a JSON object, got list"]
