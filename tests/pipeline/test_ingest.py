"""Ingest and validation on local Spark: every rule, conservation, unusable inputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from tests.pipeline.conftest import NOW, write
from trimtab.errors import InputError
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.generate import GeneratedFleet
from trimtab.pipeline.ingest.check import LOCAL_TABLE_BYTES, ingest
from trimtab.pipeline.ingest.result import Ingested
from trimtab.pipeline.ingest.summary import slot_seconds, summarize
from trimtab.pipeline.schemas import INPUT_TABLES

NODES = (
    "cluster,node,region,rack,cores,memory_bytes,disk_total_bytes,disk_free_bytes,nic_bps,state\n"
    "c1,bk1:3181,dc1,r1,8,68719476736,1000000000000,500000000000,10000000000,writable\n"
    "c1,bk2:3181,dc1,r2,8,68719476736,1000000000000,500000000000,10000000000,readonly\n"
)
METRICS_HEADER = (
    "ts,cluster,node,cpu,memory,direct_memory,net_in_bps,net_out_bps,msg_in_per_s,msg_out_per_s,"
    "throughput_in_bytes_per_s,throughput_out_bytes_per_s,disk_free_bytes,disk_total_bytes\n"
)
GOOD = "2026-11-01T00:00:00Z,c1,bk1:3181,0.5,0.5,0.1,1,1,1,1,1,1,500,1000\n"
BUNDLES_HEADER = (
    "ts,cluster,bundle,broker,msg_in_per_s,msg_out_per_s,throughput_in_bytes_per_s,"
    "throughput_out_bytes_per_s,storage_bytes\n"
)
BUNDLE_LINE = "2026-11-01T00:00:00Z,c1,t/n/0x0_0x1,bk1:3181,1,1,1,1,5\n"


def by_rule(ingested, table: str) -> dict[str | None, int]:
    rows = ingested.checked[table].groupBy("_rule").count().collect()
    return {r["_rule"]: r["count"] for r in rows}


@pytest.fixture(scope="module")
def dirty_ingested(
    spark: SparkSession, dirty_fleet: GeneratedFleet, tmp_path_factory: pytest.TempPathFactory
) -> Ingested:
    """``dirty_fleet`` checked as the job checks it (telemetry this small: as local rows)."""
    root = tmp_path_factory.mktemp("checked")

    def materialize(name: str, frame: DataFrame) -> DataFrame:
        frame.write.parquet(str(root / name))
        return spark.read.parquet(str(root / name))

    return ingest(spark, HadoopFS(spark), str(dirty_fleet.out), now=NOW, materialize=materialize)


def test_generated_bad_rows_are_quarantined_exactly(
    dirty_ingested: Ingested, dirty_fleet: GeneratedFleet
) -> None:
    """Each malformed row the generator wrote is quarantined under its rule; no good row is."""
    ingested = dirty_ingested
    for table in ("nodes", "node_metrics", "bundle_metrics"):
        counts = by_rule(ingested, table)
        accepted = counts.pop(None)
        assert counts == dirty_fleet.bad[table]
        assert accepted + sum(counts.values()) == dirty_fleet.rows[table]


def test_stored_summaries_quarantine_the_same_rows_as_checking_every_row(
    spark: SparkSession,
    dirty_ingested: Ingested,
    dirty_fleet: GeneratedFleet,
    tmp_path: Path,
) -> None:
    """Checked as big tables are (stored summaries: refused rows counted, then read again;
    repeats screened), the dirty fleet's quarantine is row for row the one of the local
    check, reasons and raw rows included, and so is each key's newest sample."""

    def materialize(name: str, frame: DataFrame) -> DataFrame:
        frame.write.parquet(str(tmp_path / name))
        return spark.read.parquet(str(tmp_path / name))

    stored = ingest(
        spark,
        HadoopFS(spark),
        str(dirty_fleet.out),
        now=NOW,
        materialize=materialize,
        local_bytes=0,
    )
    assert not stored.tables["bundle_metrics"].local

    def rows(frame: DataFrame) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in frame.collect())

    assert rows(stored.quarantine()) == rows(dirty_ingested.quarantine())
    for table in ("node_metrics", "bundle_metrics"):
        assert rows(stored.latest(table)) == rows(dirty_ingested.latest(table))


def test_quarantine_rows_keep_source_rule_reason_and_raw_row(dirty_ingested: Ingested) -> None:
    """A quarantined row names its file, the rule and a reason, and carries the raw row."""
    ingested = dirty_ingested
    rows = ingested.quarantine().where("rule = 'out_of_range'").collect()
    assert rows
    row = rows[0]
    assert row["table"] == "node_metrics" and row["source_file"].endswith("bad-rows.csv")
    assert row["reason"] == "cpu 1.5 is above 1: usages are fractions; for 1.5 % write 0.015"
    assert json.loads(row["row"])["cpu"] == "1.5"


CASES = [
    (
        "malformed",
        "2026-11-01T00:00:00Z,c1,bk1:3181,0.5,0.5,0.1,1,1,1,1,1,1,500\n",
        "does not parse",
    ),
    ("missing_key", "2026-11-01T00:00:00Z,c1,,0.5,0.5,0.1,1,1,1,1,1,1,500,1000\n", "missing node"),
    ("missing_key", ",c1,bk1:3181,0.5,0.5,0.1,1,1,1,1,1,1,500,1000\n", "missing ts"),
    (
        "bad_timestamp",
        "2026-13-45T00:00:00Z,c1,bk1:3181,0.5,0.5,0.1,1,1,1,1,1,1,500,1000\n",
        "is not a timestamp",
    ),
    (
        "wrong_type",
        "2026-11-01T00:00:00Z,c1,bk1:3181,half,0.5,0.1,1,1,1,1,1,1,500,1000\n",
        "not a number: cpu",
    ),
    (
        "out_of_range",
        "2026-11-01T00:00:00Z,c1,bk1:3181,0.5,1.01,0.1,1,1,1,1,1,1,500,1000\n",
        "memory 1.01 is above 1: usages are fractions; for 1.01 % write 0.0101",
    ),
    (
        "negative",
        "2026-11-01T00:00:00Z,c1,bk1:3181,0.5,0.5,0.1,-1,1,1,1,1,1,500,1000\n",
        "net_in_bps -1.0 is negative",
    ),
    (
        "free_above_total",
        "2026-11-01T00:00:00Z,c1,bk1:3181,0.5,0.5,0.1,1,1,1,1,1,1,1500,1000\n",
        "disk_free_bytes 1500 is above",
    ),
    (
        "future_timestamp",
        "2026-11-02T00:10:00Z,c1,bk1:3181,0.5,0.5,0.1,1,1,1,1,1,1,500,1000\n",
        "in the future",
    ),
    (
        "unknown_cluster",
        "2026-11-01T00:00:00Z,c9,bk1:3181,0.5,0.5,0.1,1,1,1,1,1,1,500,1000\n",
        "cluster c9 is not in the inventory",
    ),
    (
        "unknown_node",
        "2026-11-01T00:00:00Z,c1,bk7:3181,0.5,0.5,0.1,1,1,1,1,1,1,500,1000\n",
        "node bk7:3181 is not a node of cluster c1",
    ),
    ("duplicate", GOOD, "exact duplicate"),
]
BUNDLE_ROW = (
    '{"ts": "2026-11-01T00:00:00Z", "cluster": "c1", "bundle": "t/n/0x0_0x1", "broker": '
    '"bk1:3181", "msg_in_per_s": 1, "msg_out_per_s": 1, "throughput_in_bytes_per_s": 1, '
    '"throughput_out_bytes_per_s": 1, "storage_bytes": 5}\n'
)


@pytest.fixture(scope="module")
def one_bad_line_per_file(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory):
    """One good line, then each case in a file of its own, all checked by one ingest."""
    root = tmp_path_factory.mktemp("cases")
    write(root / "nodes" / "nodes.csv", NODES)
    write(root / "node_metrics" / "case-good.csv", METRICS_HEADER + GOOD)
    for i, (_, line, _) in enumerate(CASES):
        write(root / "node_metrics" / f"case-{i:02d}.csv", METRICS_HEADER + line)
    write(root / "bundle_metrics" / "b.jsonl", BUNDLE_ROW)
    ingested = ingest(spark, HadoopFS(spark), str(root), now=NOW, future_tolerance_s=300)
    return by_rule(ingested, "node_metrics"), ingested.quarantine().collect()


def test_only_the_bad_lines_are_quarantined(one_bad_line_per_file) -> None:
    """The good line is accepted; every case line is quarantined, one rule each."""
    counts, rows = one_bad_line_per_file
    assert counts.pop(None) == 1
    expected: dict[str, int] = {}
    for rule, _, _ in CASES:
        expected[rule] = expected.get(rule, 0) + 1
    assert counts == expected and len(rows) == len(CASES)


@pytest.mark.parametrize(
    ("index", "rule", "reason"),
    [(i, rule, reason) for i, (rule, _, reason) in enumerate(CASES) if rule != "duplicate"],
    ids=[f"{rule}: {reason}" for rule, _, reason in CASES if rule != "duplicate"],
)
def test_each_rule_names_file_and_reason(
    one_bad_line_per_file, index: int, rule: str, reason: str
) -> None:
    """The line of each case is quarantined from its own file, under its rule, with a reason."""
    _, rows = one_bad_line_per_file
    (row,) = [r for r in rows if r["source_file"].endswith(f"case-{index:02d}.csv")]
    assert row["rule"] == rule and reason in row["reason"]


def test_inventory_rules(spark: SparkSession, tmp_path: Path) -> None:
    """Bad inventory rows (state, id, location, duplicate or conflicting node) are quarantined;
    others kept."""
    write(
        tmp_path / "nodes" / "nodes.csv",
        NODES
        + "c1,bk3:3181,dc1,r1,8,68719476736,1000000000000,500000000000,10000000000,draining\n"
        + "c1,bk 4:3181,dc1,r1,8,68719476736,1000000000000,500000000000,10000000000,writable\n"
        + "c1,bk5:3181,dc1,r1/x,8,68719476736,1000000000000,500000000000,10000000000,writable\n"
        + "c1,bk1:3181,dc1,r1,16,68719476736,1000000000000,500000000000,10000000000,writable\n"
        + "c1,bk2:3181,dc1,r2,8,68719476736,1000000000000,500000000000,10000000000,readonly\n"
        # the same host in capitals: one node, as DNS compares names (issue 42)
        + "c1,BK2:3181,dc1,r2,8,68719476736,1000000000000,500000000000,10000000000,readonly\n",
    )
    write(tmp_path / "node_metrics" / "m.csv", METRICS_HEADER + GOOD)
    write(tmp_path / "bundle_metrics" / "b.csv", BUNDLES_HEADER)
    with pytest.raises(InputError, match="bundle_metrics"):
        ingest(spark, HadoopFS(spark), str(tmp_path), now=NOW)  # a table with a header but no rows
    write(tmp_path / "bundle_metrics" / "b.csv", BUNDLES_HEADER + BUNDLE_LINE)
    ingested = ingest(spark, HadoopFS(spark), str(tmp_path), now=NOW)
    # bk2's second and third (BK2) rows are exact copies: the first is kept. bk1's rows
    # differ: both refused.
    assert by_rule(ingested, "nodes") == {
        None: 1,
        "bad_state": 1,
        "bad_node_id": 1,
        "bad_location": 1,
        "duplicate": 2,
        "conflict": 2,
    }


def test_columns_are_matched_by_name_not_position(spark: SparkSession, tmp_path: Path) -> None:
    """A CSV with its columns in another order is read correctly."""
    write(tmp_path / "nodes" / "nodes.csv", NODES)
    cols = METRICS_HEADER.strip().split(",")
    values = GOOD.strip().split(",")
    order = list(reversed(range(len(cols))))
    write(
        tmp_path / "node_metrics" / "m.csv",
        ",".join(cols[i] for i in order) + "\n" + ",".join(values[i] for i in order) + "\n",
    )
    write(tmp_path / "bundle_metrics" / "b.csv", BUNDLES_HEADER + BUNDLE_LINE)
    ingested = ingest(spark, HadoopFS(spark), str(tmp_path), now=NOW)
    (row,) = ingested.accepted("node_metrics").collect()
    assert (row["node"], row["cpu"], row["disk_total_bytes"]) == ("bk1:3181", 0.5, 1000)


def test_membership_follows_row_rules_and_precedes_copies(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Membership is decided per key, yet a row-local rule still wins over it, copies of an
    unknown node's row are each ``unknown_node`` (not ``duplicate``), and an unknown
    broker's bundle sample is not any bundle's newest accepted one."""
    unknown = GOOD.replace("bk1:3181", "bk7:3181")
    negative = unknown.replace(",0.1,1,", ",0.1,-1,")
    write(tmp_path / "nodes" / "nodes.csv", NODES)
    write(tmp_path / "node_metrics" / "m.csv", METRICS_HEADER + GOOD + unknown * 2 + negative)
    later = BUNDLE_LINE.replace("00:00:00Z", "00:01:00Z").replace("bk1:3181", "bk7:3181")
    write(tmp_path / "bundle_metrics" / "b.csv", BUNDLES_HEADER + BUNDLE_LINE + later)
    ingested = ingest(spark, HadoopFS(spark), str(tmp_path), now=NOW)
    assert by_rule(ingested, "node_metrics") == {None: 1, "unknown_node": 2, "negative": 1}
    assert by_rule(ingested, "bundle_metrics") == {None: 1, "unknown_node": 1}
    reasons = {r["reason"] for r in ingested.quarantine().collect()}
    assert "broker bk7:3181 is not a node of cluster c1" in reasons
    (newest,) = ingested.latest("bundle_metrics").collect()
    assert newest["broker"] == "bk1:3181"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: write(p / "nodes" / "nodes.csv", NODES), "table node_metrics"),
        (
            lambda p: (
                write(p / "nodes" / "nodes.csv", NODES),
                write(p / "node_metrics" / "m.csv", "ts,cluster,node\n"),
            ),
            r"lacks required column\(s\) cpu",
        ),
        (
            # Every table is unusable; the others are read while the inventory is checked,
            # but the inventory's error is the one raised.
            lambda p: (
                write(p / "nodes" / "nodes.csv", "cluster,node\n"),
                write(p / "node_metrics" / "m.csv", "ts,cluster,node\n"),
            ),
            r"table nodes: .* lacks required column\(s\) cores",
        ),
    ],
    ids=[
        "missing input directory",
        "missing table directory",
        "missing required column",
        "inventory unusable first",
    ],
)
def test_unusable_input_stops_with_one_message(
    spark: SparkSession, tmp_path: Path, setup, message: str
) -> None:
    """An input that cannot be used raises InputError naming the table, path and fix."""
    root = tmp_path / "in"
    setup(root)
    with pytest.raises(InputError, match=message):
        ingest(spark, HadoopFS(spark), str(root), now=NOW)


def ingest_by(spark: SparkSession, root: Path, path: str) -> Ingested:
    """``root`` checked one of the job's ways: ``lazy`` (nothing stored), ``stored`` (big
    tables: summaries stored and probed) or ``local`` (small tables checked whole)."""

    def materialize(name: str, frame: DataFrame) -> DataFrame:
        frame.write.parquet(str(root / "stored" / name))
        return spark.read.parquet(str(root / "stored" / name))

    return ingest(
        spark,
        HadoopFS(spark),
        str(root),
        now=NOW,
        materialize=None if path == "lazy" else materialize,
        local_bytes=0 if path == "stored" else LOCAL_TABLE_BYTES,
    )


@pytest.mark.parametrize("path", ["lazy", "stored", "local"])
def test_samples_at_one_time_that_differ_are_conflicts_not_averaged(
    spark: SparkSession, tmp_path: Path, path: str
) -> None:
    """Two different samples of one node at one ts are both refused as ``conflict`` (each
    naming the other's file); an exact copy stays a ``duplicate`` with the first kept; a
    bundle whose newest samples conflict falls back to its newest sample that is not refused.
    The same when the job checks the telemetry: by stored summaries and probes (``stored``,
    big tables) or whole as local rows (``local``, tables of at most ``local_bytes``)."""

    other = GOOD.replace(",0.5,0.5,0.1,", ",0.9,0.5,0.1,")
    copy = GOOD.replace("bk1:3181", "bk2:3181")
    write(tmp_path / "nodes" / "nodes.csv", NODES)
    write(tmp_path / "node_metrics" / "a.csv", METRICS_HEADER + GOOD + copy)
    write(tmp_path / "node_metrics" / "b.csv", METRICS_HEADER + other + copy)
    later = BUNDLE_LINE.replace("00:00:00Z", "00:01:00Z")
    write(tmp_path / "bundle_metrics" / "a.csv", BUNDLES_HEADER + BUNDLE_LINE + later)
    write(
        tmp_path / "bundle_metrics" / "b.csv",
        BUNDLES_HEADER + later.replace(",1,1,1,1,", ",2,2,2,2,"),
    )
    ingested = ingest_by(spark, tmp_path, path)
    assert ingested.tables["bundle_metrics"].local == (path == "local")
    assert by_rule(ingested, "node_metrics") == {None: 1, "conflict": 2, "duplicate": 1}
    assert by_rule(ingested, "bundle_metrics") == {None: 1, "conflict": 2}
    conflicts = [r for r in ingested.quarantine().collect() if r["rule"] == "conflict"]
    for row in conflicts:
        mine = row["source_file"].rsplit("/", 1)[-1]
        named = "b.csv" if mine == "a.csv" else "a.csv"
        assert (named in row["reason"] and "node bk1:3181" in row["reason"]) or "bundle" in row[
            "reason"
        ]
    (newest,) = ingested.latest("bundle_metrics").collect()
    assert newest["ts"].minute == 0


@pytest.mark.parametrize("path", ["lazy", "stored", "local"])
def test_repeats_are_found_whatever_the_spacing_of_sample_times(
    spark: SparkSession, tmp_path: Path, path: str
) -> None:
    """At scale, repeats are screened per window of time (one bit per 15 s slot) and only
    the screened windows are read again: samples 5 s apart share a slot and are both kept;
    an exact copy and a conflict (in other windows, across files) are found as when every
    row is checked; the newest sample is still the newest."""

    def at(stamp: str, line: str = GOOD) -> str:
        return line.replace("2026-11-01T00:00:00Z", f"2026-11-01T{stamp}Z")

    spaced = at("00:00:00") + at("00:00:05") + at("05:00:00")
    copy, clash = at("01:10:00"), at("02:30:00")
    write(tmp_path / "nodes" / "nodes.csv", NODES)
    write(tmp_path / "node_metrics" / "a.csv", METRICS_HEADER + spaced + copy + clash)
    write(
        tmp_path / "node_metrics" / "b.csv",
        METRICS_HEADER + copy + clash.replace(",0.5,0.5,0.1,", ",0.9,0.5,0.1,"),
    )
    bundles = (
        at("00:00:00", BUNDLE_LINE) + at("00:00:10", BUNDLE_LINE) + at("03:00:00", BUNDLE_LINE)
    )
    write(tmp_path / "bundle_metrics" / "a.csv", BUNDLES_HEADER + bundles)
    ingested = ingest_by(spark, tmp_path, path)
    assert by_rule(ingested, "node_metrics") == {None: 4, "duplicate": 1, "conflict": 2}
    assert by_rule(ingested, "bundle_metrics") == {None: 3}
    (newest,) = ingested.latest("bundle_metrics").collect()
    assert newest["ts"].hour == 3
    (node,) = ingested.latest("node_metrics").collect()
    assert node["ts"].hour == 5


@pytest.mark.parametrize(("every_s", "slot_s"), [(1, 1), (10, 5), (15, 7), (60, 15), (3600, 15)])
def test_the_repeat_screen_follows_the_sample_cadence(
    spark: SparkSession, every_s: int, slot_s: int
) -> None:
    """The screen's slot is half the samples' spacing (1 to 15 s), so samples every 10 s (a
    common scrape interval) fall in slots of their own and no window of theirs is read again,
    while a repeated sample's window still is. With the old fixed 15-s slot every window of
    10-s samples was screened, and every row read again (3.8x the job's time at 5 M rows)."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    times = [start + timedelta(seconds=every_s * i) for i in range(600)]
    rows = [("c1", node, ts, None) for node in ("a:1", "b:1") for ts in times]
    rows.append(("c1", "a:1", times[7], None))  # a copy
    schema = "cluster string, node string, ts timestamp, _rule string"
    frame = spark.createDataFrame(rows, schema)
    table = INPUT_TABLES["node_metrics"]
    assert slot_seconds(frame, table) == slot_s
    summary = summarize(frame, table, slot_s=slot_s).collect()
    screened = {r["node"]: r["_repeated"] for r in summary}
    assert screened["b:1"] is None
    assert len(screened["a:1"]) == 1
    if every_s == 10:
        fixed = summarize(frame, table, slot_s=15).collect()
        assert all(len(r["_repeated"]) == 2 for r in fixed)  # 6,000 s: two 3,840-s windows


def test_parquet_schema_read_from_the_footer_is_the_one_spark_infers(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A local Parquet file's schema is read by pyarrow (Spark's inference is a job per
    read); where it is given, it is exactly the schema Spark infers (as nullable columns).
    Types Spark decides itself (unsigned, nanosecond and INT96 times, dictionaries, lists)
    are left to Spark."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trimtab.pipeline.ingest.read import footer_schema

    plain = pa.table(
        {
            "s": pa.array(["a"]),
            "b": pa.array([True]),
            "i8": pa.array([1], pa.int8()),
            "i16": pa.array([1], pa.int16()),
            "i32": pa.array([1], pa.int32()),
            "i64": pa.array([1], pa.int64()),
            "f32": pa.array([1.0], pa.float32()),
            "f64": pa.array([1.0]),
            "d": pa.array([0], pa.int32()).cast(pa.date32()),
            "ts_us": pa.array([0], pa.timestamp("us", tz="UTC")),
            "ts_ms": pa.array([0], pa.timestamp("ms", tz="Europe/Berlin")),
        }
    )
    pq.write_table(plain, tmp_path / "plain.parquet")
    given = footer_schema(str(tmp_path / "plain.parquet"))
    inferred = spark.read.parquet(str(tmp_path / "plain.parquet")).schema
    assert given is not None
    assert given == T.StructType([T.StructField(f.name, f.dataType) for f in inferred])
    others = {
        "unsigned": pa.array([1], pa.uint32()),
        "nanos": pa.array([0], pa.timestamp("ns", tz="UTC")),
        "local_time": pa.array([0], pa.timestamp("us")),
        "listed": pa.array([[1]]),
        "dictionary": pa.array(["a"]).dictionary_encode(),
    }
    for name, column in others.items():
        pq.write_table(pa.table({name: column}), tmp_path / f"{name}.parquet")
        assert footer_schema(str(tmp_path / f"{name}.parquet")) is None, name
    pq.write_table(plain, tmp_path / "int96.parquet", use_deprecated_int96_timestamps=True)
    assert footer_schema(str(tmp_path / "int96.parquet")) is None
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    assert footer_schema(str(tmp_path / "broken.parquet")) is None


@pytest.mark.parametrize("local_bytes", [0, LOCAL_TABLE_BYTES], ids=["stored", "local"])
def test_tables_checked_side_by_side_run_their_jobs_in_the_callers_job_group(
    spark: SparkSession, tmp_path: Path, local_bytes: int
) -> None:
    """The telemetry tables are checked in threads; their Spark jobs still belong to the
    caller's job group (what a progress bar or a cancellation follows), none runs outside."""

    def materialize(name: str, frame: DataFrame) -> DataFrame:
        frame.write.parquet(str(tmp_path / "stored" / name))
        return spark.read.parquet(str(tmp_path / "stored" / name))

    write(tmp_path / "nodes" / "nodes.csv", NODES)
    write(tmp_path / "node_metrics" / "a.csv", METRICS_HEADER + GOOD)
    write(tmp_path / "bundle_metrics" / "a.csv", BUNDLES_HEADER + BUNDLE_LINE)
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    outside = set(tracker.getJobIdsForGroup())
    group = f"ingest-{local_bytes}"
    sc.setJobGroup(group, "checking the tables")
    try:
        ingested = ingest(
            spark,
            HadoopFS(spark),
            str(tmp_path),
            now=NOW,
            materialize=materialize,
            local_bytes=local_bytes,
        )
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert len(tracker.getJobIdsForGroup(group)) >= 3  # the inventory, then two in threads
    assert not set(tracker.getJobIdsForGroup()) - outside  # (old jobs may be forgotten)
    assert by_rule(ingested, "bundle_metrics") == {None: 1}


@pytest.mark.parametrize("job", [False, True], ids=["lazy", "local"])
def test_quarantine_holds_each_refused_row_once_when_earlier_tables_have_none(
    spark: SparkSession, tmp_path: Path, job: bool
) -> None:
    """The inventory and node_metrics are clean, bundle_metrics has one bad row: the
    quarantine holds exactly that row, whether built by Spark (lazy) or from the rows
    collected while checking (local: an empty part before a full one once lost it)."""

    def materialize(name: str, frame: DataFrame) -> DataFrame:
        frame.write.parquet(str(tmp_path / "stored" / name))
        return spark.read.parquet(str(tmp_path / "stored" / name))

    write(tmp_path / "in" / "nodes" / "nodes.csv", NODES)
    write(tmp_path / "in" / "node_metrics" / "a.csv", METRICS_HEADER + GOOD)
    bad = BUNDLE_LINE.replace("t/n/0x0_0x1", "no-bundle")
    write(tmp_path / "in" / "bundle_metrics" / "a.csv", BUNDLES_HEADER + BUNDLE_LINE + bad)
    ingested = ingest(
        spark,
        HadoopFS(spark),
        str(tmp_path / "in"),
        now=NOW,
        materialize=materialize if job else None,
    )
    assert ingested.local is job
    rows = ingested.quarantine().collect()
    assert [(r["table"], r["rule"]) for r in rows] == [("bundle_metrics", "bad_bundle")]
    assert rows[0]["source_file"].endswith("bundle_metrics/a.csv")
    assert json.loads(rows[0]["row"])["bundle"] == "no-bundle"


def test_an_inventory_as_a_json_array_is_read_row_by_row(
    spark: SparkSession, tmp_path: Path
) -> None:
    """nodes/ as a pretty-printed JSON array of row objects (the common export form): every
    element a row, as the commands' reader takes it (issue 42)."""
    header, *lines = NODES.strip().splitlines()
    rows = [dict(zip(header.split(","), line.split(","), strict=True)) for line in lines]
    write(tmp_path / "nodes" / "nodes.json", json.dumps(rows, indent=2) + "\n")
    write(tmp_path / "node_metrics" / "m.csv", METRICS_HEADER + GOOD)
    write(tmp_path / "bundle_metrics" / "b.csv", BUNDLES_HEADER + BUNDLE_LINE)
    ingested = ingest(spark, HadoopFS(spark), str(tmp_path), now=NOW)
    assert by_rule(ingested, "nodes") == {None: 2}
    assert by_rule(ingested, "node_metrics") == {None: 1}
