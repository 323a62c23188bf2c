"""Read the input tables with explicit schemas and split every row into accepted or quarantined.

Goals
    A bad row is never silently dropped: it goes to ``quarantine`` whole (as JSON text), with
    its source file, the rule it broke and a readable reason, and per table
    ``read = accepted + quarantined``. An input that cannot be used at all (missing directory,
    missing required column, no rows) stops the job before any output with one message
    naming the table, the path and the fix.

Algorithm
    1. List the table's files through Hadoop's FileSystem; group them by format (suffix).
       CSV files are grouped by header too, so columns are matched by name, never position.
    2. Read each group with an explicit schema (CSV and JSON as strings, so nothing is lost to
       a failed parse; Parquet with its own types), keep the source file and the raw row, and
       convert to the canonical types with ``try_cast`` (a value that does not convert is a
       ``wrong_type`` row, not a job failure).
    3. Row-local rules, first broken rule wins: malformed, missing_key, bad_timestamp,
       wrong_type, out_of_range, negative, free_above_total, bad_state, future_timestamp.
    4. Rules needing other rows: unknown_cluster / unknown_node (against the accepted
       inventory) and duplicate (an exact copy of an earlier row; the first copy is kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from trimtab.errors import InputError
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.schemas import INPUT_TABLES, InputTable

__all__ = [
    "QUARANTINE_COLUMNS",
    "Ingested",
    "Materialize",
    "check",
    "duplicate_copies",
    "ingest",
    "mark_duplicates",
    "read_table",
    "validate",
]

#: Stores a checked table and returns it read back (the job writes it to its staging
#: directory), so that every later stage reads plain files instead of re-running the checks.
Materialize = Callable[[str, DataFrame], DataFrame]

QUARANTINE_COLUMNS = ("table", "source_file", "rule", "reason", "row")
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json"}
_FORMATS |= {".jsonl": "json", ".ndjson": "json"}
_SPARK_TYPES = {
    "string": T.StringType(),
    "double": T.DoubleType(),
    "long": T.LongType(),
    "timestamp": T.TimestampType(),
}
_STATES = ("writable", "readonly", "read-only", "read_only", "down")
# host[:port] as trimtab.cluster.NodeId accepts it (bracketed IPv6 allowed).
_NODE_ID = r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)(:([1-9][0-9]{0,4}))?$"
_CORRUPT = "_corrupt_record"


@dataclass(frozen=True, slots=True)
class Ingested:
    """Per table: the checked rows (``_rule`` null = accepted) as one DataFrame each."""

    checked: dict[str, DataFrame]

    def accepted(self, table: str) -> DataFrame:
        frame = self.checked[table].where(F.col("_rule").isNull())
        return frame.drop("_rule", "_reason", "_raw", "_source_file", "_pos")

    def quarantine(self) -> DataFrame:
        parts = [
            frame.where(F.col("_rule").isNotNull()).select(
                F.lit(name).alias("table"),
                F.col("_source_file").alias("source_file"),
                F.col("_rule").alias("rule"),
                F.col("_reason").alias("reason"),
                F.col("_raw").alias("row"),
            )
            for name, frame in self.checked.items()
        ]
        result = parts[0]
        for part in parts[1:]:
            result = result.unionByName(part)
        return result


def ingest(
    spark: SparkSession,
    input_dir: str,
    *,
    now: datetime,
    future_tolerance_s: float = 300.0,
    materialize: Materialize | None = None,
) -> Ingested:
    """Read and check every input table under ``input_dir`` (``nodes/``, ``node_metrics/``...).

    Without ``materialize`` the result is lazy (tests); with it, each table is checked once,
    the inventory first so that the telemetry is checked against the stored inventory.
    """
    fs = HadoopFS(spark, input_dir)
    if not fs.exists(input_dir):
        raise InputError(f"input directory {input_dir} does not exist: give --input DIR")
    checked: dict[str, DataFrame] = {}

    def read(table: InputTable) -> DataFrame:
        return read_table(
            spark, fs, input_dir, table, now=now, future_tolerance_s=future_tolerance_s
        )

    def keep(name: str, frame: DataFrame) -> DataFrame:
        table = INPUT_TABLES[name]
        if materialize is None:
            return mark_duplicates(frame, duplicate_copies(frame, table), table)
        stored = materialize(name, frame)
        copies = materialize(f"{name}_copies", duplicate_copies(stored, table))
        return mark_duplicates(stored, copies, table)

    nodes = keep("nodes", check(read(INPUT_TABLES["nodes"]), "nodes"))
    checked["nodes"] = nodes
    good_nodes = nodes.where(F.col("_rule").isNull()).select("cluster", "node")
    for name in ("node_metrics", "bundle_metrics", "allocation_requests"):
        table = INPUT_TABLES[name]
        if table.optional and not fs.exists(f"{input_dir}/{name}"):
            continue
        checked[name] = keep(name, check(read(table), name, nodes=good_nodes))
    return Ingested(checked)


def read_table(
    spark: SparkSession,
    fs: HadoopFS,
    input_dir: str,
    table: InputTable,
    *,
    now: datetime,
    future_tolerance_s: float,
) -> DataFrame:
    """All files of one table as canonical typed columns plus ``_source_file``, ``_pos`` and
    ``_first`` (the first row-local rule broken, null if none) with ``_raw`` for those rows."""
    path = f"{input_dir}/{table.name}"
    fix = f"put {table.name} files (.parquet, .csv or .jsonl) with columns " + ", ".join(
        table.required
    )
    if not fs.exists(path):
        raise InputError(f"table {table.name}: {path} does not exist; {fix} there")
    files = fs.list_files(path)
    groups: dict[tuple[str, str], list[str]] = {}
    for file in files:
        suffix = "." + file.rsplit(".", 1)[-1].lower() if "." in file.rsplit("/", 1)[-1] else ""
        fmt = _FORMATS.get(suffix)
        if fmt is None:
            continue
        header = fs.first_line(file) if fmt == "csv" else ""
        groups.setdefault((fmt, header), []).append(file)
    if not groups:
        raise InputError(f"table {table.name}: {path} holds no data files; {fix}")
    frames = [
        _read_group(spark, fmt, header, group, table, now, future_tolerance_s)
        for (fmt, header), group in groups.items()
    ]
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    if frame.isEmpty():
        raise InputError(f"table {table.name}: {path} has no rows; {fix}")
    return frame.withColumn("_pos", F.monotonically_increasing_id())


def _read_group(
    spark: SparkSession,
    fmt: str,
    header: str,
    files: list[str],
    table: InputTable,
    now: datetime,
    future_tolerance_s: float,
) -> DataFrame:
    reader = spark.read
    if fmt == "parquet":
        frame = reader.parquet(*files)
        present = frame.columns
    else:
        if fmt == "csv":
            present = [c.strip().strip('"') for c in header.split(",")] if header else []
            strings = T.StructType([T.StructField(c, T.StringType()) for c in present])
            schema = strings.add(_CORRUPT, T.StringType())
            frame = reader.csv(
                files,
                header=True,
                schema=schema,
                mode="PERMISSIVE",
                columnNameOfCorruptRecord=_CORRUPT,
                enforceSchema=True,
            )
        else:
            present = [c.name for c in table.columns]
            schema = T.StructType([T.StructField(c, T.StringType()) for c in present])
            schema = schema.add(_CORRUPT, T.StringType())
            frame = reader.json(
                files, schema=schema, mode="PERMISSIVE", columnNameOfCorruptRecord=_CORRUPT
            )
    missing = [c for c in table.required if c not in present]
    if missing and fmt != "json":
        raise InputError(
            f"table {table.name}: {files[0]} lacks required column(s) {', '.join(missing)}; "
            f"it has {', '.join(present) or 'none'}. Required: {', '.join(table.required)}"
        )
    known = [c.name for c in table.columns if c.name in present]
    typed: list[SparkColumn] = []
    type_errors: list[SparkColumn] = []
    for column in table.columns:
        if column.name not in present:
            typed.append(F.lit(None).cast(_SPARK_TYPES[column.type]).alias(column.name))
            continue
        source = F.col(column.name)
        if column.type == "timestamp":
            value = source if fmt == "parquet" else F.try_to_timestamp(source)
        else:
            value = source.try_cast(_SPARK_TYPES[column.type])
        typed.append(value.alias(column.name))
        if fmt != "parquet" and column.type != "string":
            failed = source.isNotNull() & (F.trim(source) != "") & value.isNull()
            type_errors.append(F.when(failed, F.lit(column.name)))
    corrupt = F.col(_CORRUPT) if fmt != "parquet" else F.lit(None).cast("string")
    ts_text = [
        (F.col(c.name).cast("string") if c.name in present else F.lit(None).cast("string")).alias(
            f"_text_{c.name}"
        )
        for c in table.columns
        if c.kind == "timestamp"
    ]
    checked = frame.select(
        *typed,
        F.col("_metadata.file_path").alias("_source_file"),
        F.struct(*[F.col(c) for c in known]).alias("_original"),
        corrupt.alias("_corrupt"),
        (F.concat_ws(",", *type_errors) if type_errors else F.lit("")).alias("_type_errors"),
        *ts_text,
    ).withColumn("_first", _row_rules(table, now, future_tolerance_s))
    # The raw row is rendered only for rows already refused: good rows never pay for JSON.
    raw = F.when(F.col("_first").isNotNull(), F.to_json("_original"))
    dropped = ["_original", "_corrupt", "_type_errors", *(f"_text_{c}" for c in _ts(table))]
    return checked.withColumn("_raw", raw).drop(*dropped)


def _ts(table: InputTable) -> list[str]:
    return [c.name for c in table.columns if c.kind == "timestamp"]


def _blank(column: str) -> SparkColumn:
    return F.col(column).isNull() | (F.trim(F.col(column)) == "")


def _row_rules(table: InputTable, now: datetime, future_tolerance_s: float) -> SparkColumn:
    """The first row-local rule a row breaks, as ``struct(r: rule, m: reason)``, else null."""
    rules: list[tuple[str, SparkColumn, SparkColumn]] = [
        (
            "malformed",
            F.col("_corrupt").isNotNull(),
            F.lit("the line does not parse as a row of this table"),
        ),
    ]
    for key in (c.name for c in table.columns if c.kind == "key"):
        rules.append(("missing_key", _blank(key), F.lit(f"missing {key}")))
    for ts in _ts(table):
        text = F.col(f"_text_{ts}")
        rules.append(("missing_key", _blank(f"_text_{ts}"), F.lit(f"missing {ts}")))
        rules.append(
            (
                "bad_timestamp",
                F.col(ts).isNull(),
                F.format_string(f"{ts} %s is not a timestamp", text),
            )
        )
    rules.append(
        (
            "wrong_type",
            F.col("_type_errors") != "",
            F.format_string("not a number: %s", F.col("_type_errors")),
        )
    )
    for column in table.columns:
        col = F.col(column.name)
        if column.kind == "fraction":
            reason = F.format_string(f"{column.name} %s is outside 0..1", col)
            rules.append(("out_of_range", (col < 0) | (col > 1), reason))
        elif column.kind in ("count", "rate"):
            reason = F.format_string(f"{column.name} %s is negative", col.cast("string"))
            rules.append(("negative", col < 0, reason))
        elif column.kind == "state":
            reason = F.format_string("state %s is not writable, readonly or down", col)
            rules.append(("bad_state", ~F.lower(F.trim(col)).isin(*_STATES), reason))
        elif column.kind == "role":
            reason = F.format_string("role %s is not bookie or broker", col)
            bad = ~_blank(column.name) & ~F.lower(F.trim(col)).isin("bookie", "broker")
            rules.append(("bad_role", bad, reason))
    if {"disk_free_bytes", "disk_total_bytes"} <= {c.name for c in table.columns}:
        free, total = F.col("disk_free_bytes"), F.col("disk_total_bytes")
        reason = F.format_string("disk_free_bytes %d is above disk_total_bytes %d", free, total)
        rules.append(("free_above_total", free > total, reason))
    if table.name == "nodes":
        reason = F.format_string("node %s is not host:port", F.col("node"))
        rules.append(("bad_node_id", ~F.trim(F.col("node")).rlike(_NODE_ID), reason))
        for part in ("region", "rack"):
            reason = F.format_string(f"{part} %s must not contain '/'", F.col(part))
            rules.append(("bad_location", F.col(part).contains("/"), reason))
    limit = F.lit(now).cast("timestamp") + F.expr(f"INTERVAL {int(future_tolerance_s)} SECONDS")
    for ts in _ts(table):
        reason = F.format_string(f"{ts} %s is in the future", F.col(ts).cast("string"))
        rules.append(("future_timestamp", F.col(ts) > limit, reason))
    return F.coalesce(
        *[
            F.when(cond, F.struct(F.lit(rule).alias("r"), why.alias("m")))
            for rule, cond, why in rules
        ]
    )


def check(frame: DataFrame, name: str, *, nodes: DataFrame | None = None) -> DataFrame:
    """Apply the membership rules, then expose ``_rule``, ``_reason`` and ``_raw``.

    Duplicates are left to :func:`duplicate_copies` and :func:`mark_duplicates`, which need
    the checked rows and are cheap once those are stored.
    """
    table = INPUT_TABLES[name]
    checked = _membership(frame, name, nodes)
    # Rows refused by these later rules parsed cleanly: their typed values are the raw row.
    raw = F.when(F.col("_first").isNotNull(), F.coalesce(F.col("_raw"), _typed_json(table)))
    return (
        checked.withColumn("_raw", raw)
        .withColumn("_rule", F.col("_first.r"))
        .withColumn("_reason", F.col("_first.m"))
        .drop("_first")
    )


def validate(frame: DataFrame, name: str, *, nodes: DataFrame | None = None) -> DataFrame:
    """Every rule, lazily: :func:`check`, then duplicates marked."""
    table = INPUT_TABLES[name]
    checked = check(frame, name, nodes=nodes)
    return mark_duplicates(checked, duplicate_copies(checked, table), table)


def _typed_json(table: InputTable) -> SparkColumn:
    return F.to_json(F.struct(*[F.col(c.name) for c in table.columns]))


def _membership(frame: DataFrame, name: str, nodes: DataFrame | None) -> DataFrame:
    """unknown_cluster / unknown_node against the accepted inventory.

    The inventory is small: its clusters become an in-set test and its nodes one broadcast
    join, so a telemetry row costs a hash lookup, never a shuffle.
    """
    if nodes is None or name == "nodes":
        return frame
    clusters = sorted({row["cluster"] for row in nodes.select("cluster").distinct().collect()})
    ok = F.col("_first").isNull()
    unknown_cluster = F.struct(
        F.lit("unknown_cluster").alias("r"),
        F.format_string("cluster %s is not in the inventory", F.col("cluster")).alias("m"),
    )
    first = F.when(ok & ~F.col("cluster").isin(*clusters), unknown_cluster)
    node_column = next((c for c in ("node", "broker") if c in frame.columns), None)
    if node_column is not None:
        known = nodes.select("cluster", F.col("node").alias(node_column), F.lit(True).alias("_k"))
        frame = frame.join(F.broadcast(known), ["cluster", node_column], "left")
        unknown_node = F.struct(
            F.lit("unknown_node").alias("r"),
            F.format_string(
                f"{node_column} %s is not a node of cluster %s",
                F.col(node_column),
                F.col("cluster"),
            ).alias("m"),
        )
        first = first.when(ok & F.col("_k").isNull(), unknown_node)
    return frame.withColumn("_first", first.otherwise(F.col("_first"))).drop("_k")


def duplicate_copies(checked: DataFrame, table: InputTable) -> DataFrame:
    """``_pos`` of every accepted row that is an exact copy of an earlier one (first kept).

    Copies share their sample key (time, cluster, node or bundle) and almost every key is
    unique, so the whole table is never shuffled: a 64-bit hash of each key is counted (only
    the key columns are read), and only rows whose key hash repeats are compared whole (a
    hash collision only adds a candidate). For ``nodes`` a second row for a node is a copy.
    """
    keys = [c.name for c in table.columns if c.kind in ("key", "timestamp")]
    columns = keys if table.name == "nodes" else [c.name for c in table.columns]
    ok = checked.where(F.col("_rule").isNull())
    key_hash = F.xxhash64(*keys)
    repeated = (
        ok.groupBy(key_hash.alias("_key_hash"))
        .count()
        .where(F.col("count") > 1)
        .select("_key_hash")
    )
    candidates = ok.withColumn("_key_hash", key_hash).join(
        F.broadcast(repeated), "_key_hash", "left_semi"
    )
    rank = F.row_number().over(Window.partitionBy(*columns).orderBy("_pos"))
    return candidates.withColumn("_rank", rank).where(F.col("_rank") > 1).select("_pos")


def mark_duplicates(checked: DataFrame, copies: DataFrame, table: InputTable) -> DataFrame:
    """``checked`` with the rows listed in ``copies`` refused as ``duplicate``."""
    reason = (
        "a second row for this node"
        if table.name == "nodes"
        else "an exact duplicate of an earlier row"
    )
    flagged = copies.select("_pos", F.lit(True).alias("_copy"))
    marked = checked.join(F.broadcast(flagged), "_pos", "left")
    copy = F.col("_copy").isNotNull()
    return (
        marked.withColumn("_rule", F.when(copy, F.lit("duplicate")).otherwise(F.col("_rule")))
        .withColumn("_reason", F.when(copy, F.lit(reason)).otherwise(F.col("_reason")))
        .withColumn("_raw", F.when(copy, _typed_json(table)).otherwise(F.col("_raw")))
        .drop("_copy")
    )
