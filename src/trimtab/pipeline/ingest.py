"""Read the input tables with explicit schemas and split every row into accepted or quarantined.

Goals
    A bad row is never silently dropped: it goes to ``quarantine`` whole (as JSON text), with
    its source file, the rule it broke and a readable reason, and per table
    ``read = accepted + quarantined``. An input that cannot be used at all (missing directory,
    missing required column, no rows) stops the job before any output with one message
    naming the table, the path and the fix. The checks must cost little beside reading the
    files: telemetry is never written back whole, and no rule shuffles every row.

Algorithm
    1. List the table's files through Hadoop's FileSystem; group them by format (suffix).
       CSV files are grouped by header too, so columns are matched by name, never position.
    2. Read each group with an explicit schema (CSV and JSON as strings, so nothing is lost to
       a failed parse; Parquet with its own types), keep the source file, and convert to the
       canonical types with ``try_cast`` (a value that does not convert is a ``wrong_type``
       row, not a job failure). The raw row is rendered only for refused rows.
    3. Row-local rules, first broken rule wins, in the order and with the names of
       :data:`trimtab.contract.ROW_RULES` (the plain commands' readers apply the same ones):
       expressions from :mod:`trimtab.pipeline.rules`.
    4. Rules needing only a row's key (bad_bundle) or other rows: unknown_cluster /
       unknown_node (the row's cluster or node is not in the accepted inventory), and rows
       sharing a key (for samples: and ``ts``) settled as :mod:`trimtab.contract.repeats`
       states: all equal, ``duplicate`` but the first; any two differ, all ``conflict``. A blank
       ``cluster`` where the contract allows it (allocation_requests) is the inventory's
       only cluster, else unknown_cluster.
    5. One aggregation per table, grouped by its key without the time (e.g. per bundle and
       broker) and then per key, summarises everything the later stages need from the whole
       table with fixed-size aggregates (compiled, pre-aggregated before the shuffle): the
       count of refused rows, the windows of time where a sample time may repeat (a bitmap
       screen that never misses a repeat, see :func:`summarize`), and for telemetry the
       newest accepted sample. Membership is then decided per key, on those few thousand
       summary rows. Copies share their key and almost every key is unique, so only the
       rows of unknown keys and of screened windows — the *candidates*, usually none — and
       the refused rows, where there are some, are read again: no telemetry row pays for a
       lookup or a comparison.
    6. The result per table is a :class:`CheckedTable`: every row with its verdict, plus the
       small *flagged* set (refused rows and candidates with copies resolved). Accepted rows
       are the clean non-candidates plus the flagged rows that passed; the quarantine is the
       flagged rows that did not.
    7. In a job's run, a table small enough to collect (the inventory, the requests, and
       telemetry of at most :data:`LOCAL_TABLE_BYTES`) skips steps 5 and 6: its key rules
       run per row (membership by a lookup in the inventory's nodes, written into the plan
       as literals; copies by ``resolve_copies`` over every row) in one plan read in one
       task, whose rows are collected once and kept as local rows (:func:`_localized`).
       Verdicts, reasons and raw rows are those of steps 5 and 6; with every table local,
       the quarantine is built from the collected rows. The tables checked against the
       inventory are read while it is checked and then checked side by side, in threads:
       most of a small table's cost is Spark planning its read and check on the driver,
       which then overlaps; the checks of big tables (steps 5 and 6), which keep every core
       busy, take turns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.util import inheritable_thread_target

from trimtab.errors import InputError
from trimtab.pipeline.fs import HadoopFS, local_directory
from trimtab.pipeline.local import arrow_frame, local_frame
from trimtab.pipeline.rules import (
    Sql,
    blank,
    key_verdict,
    key_verdict_sql,
    parse_long,
    parse_timestamp,
    q,
    row_rules_sql,
    text,
    time_limit,
)
from trimtab.pipeline.schemas import INPUT_TABLES, SPARK_TYPES, InputTable

__all__ = [
    "LOCAL_TABLE_BYTES",
    "QUARANTINE_COLUMNS",
    "CheckedTable",
    "Ingested",
    "Materialize",
    "TableRead",
    "ingest",
    "read_table",
    "refuse_unknown",
    "repeated_keys",
    "resolve_copies",
    "summarize",
    "typed_columns",
    "typed_sql",
    "unknown_members",
]

#: Stores a small frame and returns it read back (the job writes it to its staging
#: directory), so that later stages read a few stored rows instead of re-running a check.
Materialize = Callable[[str, DataFrame], DataFrame]
#: The accepted inventory's nodes per cluster, what the membership rules look rows up in.
Members = Mapping[str, Sequence[str]]

QUARANTINE_COLUMNS = ("table", "source_file", "rule", "reason", "row")
#: A telemetry table whose files hold at most this many bytes is checked whole by one action
#: and kept as local rows, as the inventory always is: below it, the few Spark jobs of
#: storing and probing a summary cost more than collecting the rows (see _localized).
LOCAL_TABLE_BYTES = 4 << 20
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json"}
_FORMATS |= {".jsonl": "json", ".ndjson": "json"}
_CORRUPT = "_corrupt_record"
_TELEMETRY = ("node_metrics", "bundle_metrics")
# Tables whose newest accepted sample per key is summarised while checking: the plans need
# only each bundle's newest rates and each broker's newest sample (node loads read every
# sample anyway, but the plans then need not read them again).
_LATEST = ("node_metrics", "bundle_metrics")
_INTERNAL = ("_rule", "_reason", "_raw", "_source_file", "_pos", "_candidate")
# Summary columns that are not a sample's (dropped from ``latest``).
_SUMMARY_ONLY = ("_bad", "_repeated", "_rows", "_member_rule", "_member_reason")


class TableRead(NamedTuple):
    """One table's files read (see :func:`read_table`)."""

    frame: DataFrame
    rows: int  # how many rows the files hold; -1 when not counted
    size: int  # the files' bytes


@dataclass(frozen=True, slots=True)
class CheckedTable:
    """One table after every rule.

    ``rows``: every row read, with ``_rule`` null where no row-local or membership rule
    refused it and ``_candidate`` true where its key repeats. ``flagged``: the refused rows
    and the candidates, with exact copies refused as ``duplicate`` (small; the job stores
    it). ``latest``: per key without its time, the newest accepted sample (the telemetry
    tables of ``_LATEST``, else None). ``rows_read``: how many rows the table's files hold.
    """

    name: str
    rows: DataFrame
    flagged: DataFrame
    rows_read: int
    latest: DataFrame | None = None
    # The rows as collected when the table was checked whole; ``rows`` are then the same
    # rows as a local relation, every verdict final (see _localized).
    collected: pa.Table | None = None

    @property
    def local(self) -> bool:
        return self.collected is not None

    def accepted(self) -> DataFrame:
        """Rows that pass every rule, as the canonical columns."""
        if self.local:  # one filter over local rows: Spark answers it without a job
            return self.rows.where(F.col("_rule").isNull()).drop(*_INTERNAL)
        kept = self.flagged.where(F.col("_rule").isNull())
        return self._clean().unionByName(kept).drop(*_INTERNAL)

    def quarantined(self) -> DataFrame:
        """Refused rows with ``_rule``, ``_reason``, ``_raw`` and ``_source_file``."""
        return self.flagged.where(F.col("_rule").isNotNull())

    def all(self) -> DataFrame:
        """Every row once, ``_rule`` null for accepted rows (tests count by rule on it)."""
        if self.local:
            return self.rows
        return self._clean().unionByName(self.flagged)

    def _clean(self) -> DataFrame:
        """Accepted rows whose key is unique: the part never stored, read where it lies."""
        return self.rows.where(F.col("_rule").isNull() & ~F.col("_candidate"))


@dataclass(frozen=True, slots=True)
class Ingested:
    """Per input table, its :class:`CheckedTable`."""

    tables: dict[str, CheckedTable]

    @property
    def local(self) -> bool:
        """Every table was checked whole and is kept as local rows (see _localized)."""
        return all(table.local for table in self.tables.values())

    @property
    def checked(self) -> dict[str, DataFrame]:
        """Every row of each table with its verdict (``_rule`` null = accepted)."""
        return {name: table.all() for name, table in self.tables.items()}

    def accepted(self, table: str) -> DataFrame:
        return self.tables[table].accepted()

    def latest(self, table: str) -> DataFrame:
        """The newest accepted sample per key without its time (see :func:`summarize`)."""
        latest = self.tables[table].latest
        if latest is None:
            raise ValueError(f"{table} is not summarised by its newest samples")
        return latest

    def quarantine(self) -> DataFrame:
        """Every refused row as :data:`QUARANTINE_COLUMNS`, with its source file."""
        if self.local:  # the refused rows are at hand: one local relation, no Spark step each
            return self._local_quarantine()
        parts = [
            table.quarantined().select(
                F.lit(name).alias("table"),
                F.col("_source_file").alias("source_file"),
                F.col("_rule").alias("rule"),
                F.col("_reason").alias("reason"),
                F.col("_raw").alias("row"),
            )
            for name, table in self.tables.items()
        ]
        result = parts[0]
        for part in parts[1:]:
            result = result.unionByName(part)
        return result

    def _local_quarantine(self) -> DataFrame:
        parts = []
        columns = ("_source_file", "_rule", "_reason", "_raw")  # as QUARANTINE_COLUMNS' last 4
        for name, table in self.tables.items():
            assert table.collected is not None
            refused = table.collected.filter(pc.is_valid(table.collected["_rule"]))
            parts.append(
                pa.table(
                    [pa.repeat(name, refused.num_rows), *(refused[c] for c in columns)],
                    names=list(QUARANTINE_COLUMNS),
                )
            )
        first = next(iter(self.tables.values())).rows
        source = first.schema["_source_file"].nullable
        schema = T.StructType(
            [
                T.StructField("table", T.StringType(), nullable=False),
                T.StructField("source_file", T.StringType(), nullable=source),
                *(T.StructField(c, T.StringType()) for c in QUARANTINE_COLUMNS[2:]),
            ]
        )
        return arrow_frame(first.sparkSession, pa.concat_tables(parts), schema)


def ingest(
    spark: SparkSession,
    input_dir: str,
    *,
    now: datetime,
    future_tolerance_s: float = 300.0,
    materialize: Materialize | None = None,
    extra: Mapping[str, Sequence[str]] | None = None,
    local_bytes: int = LOCAL_TABLE_BYTES,
) -> Ingested:
    """Read and check every input table under ``input_dir`` (``nodes/``, ``node_metrics/``...).

    Without ``materialize`` the result is lazy (tests). With it, a job's run pays one or a few
    Spark actions per table, not one per question: the inventory (first, so that the other
    tables are checked against it), the requests and every telemetry table of at most
    ``local_bytes`` are checked whole by one action and kept as local rows; a bigger telemetry
    table's summary (and its flagged rows, when rows had to be read again) is stored once and
    probed by one action.
    """
    fs = HadoopFS(spark, input_dir)
    if not fs.exists(input_dir):
        raise InputError(f"input directory {input_dir} does not exist: give --input DIR")
    tables: dict[str, CheckedTable] = {}
    # A big table's check keeps every core busy: two side by side would only split the
    # cores and the memory of their aggregations, so they take turns.
    at_scale = threading.Lock()

    def checked(name: str, inventory: Callable[[], Members | None]) -> CheckedTable:
        table = INPUT_TABLES[name]
        read = read_table(
            spark,
            fs,
            input_dir,
            table,
            now=now,
            future_tolerance_s=future_tolerance_s,
            extra=(extra or {}).get(name, ()),
            count=materialize is None,
        )
        members = inventory()  # reading needs no inventory; the membership rules wait for it
        rows = _default_cluster(read.frame, table, sorted(members or {}))
        if materialize is not None and (name not in _TELEMETRY or read.size <= local_bytes):
            every = _every_rule(rows, members, table)
            return _localized(spark, table, every, f"{input_dir}/{name}")
        with at_scale:
            return _checked_at_scale(
                spark, table, rows, read.rows, members, materialize, f"{input_dir}/{name}"
            )

    names = [
        name
        for name in ("node_metrics", "bundle_metrics", "allocation_requests")
        if not INPUT_TABLES[name].optional or fs.exists(f"{input_dir}/{name}")
    ]
    # Checked against the inventory, these tables do not depend on one another: they are
    # read (planned) while the inventory is checked, and checked side by side once it is, so
    # that Spark's planning of one (most of a small table's cost, on the driver) overlaps
    # the others' work (big ones take turns, above). The inventory's failure raises first,
    # then the first table in order whose check failed.
    members: Future[Members] = Future()
    inherit = inheritable_thread_target(spark)  # the job group and tags, as the caller's
    with ThreadPoolExecutor(len(names), thread_name_prefix="trimtab-ingest") as pool:
        futures = [pool.submit(inherit(partial(checked, name, members.result))) for name in names]
        try:
            tables["nodes"] = checked("nodes", lambda: None)
            members.set_result(_members(tables["nodes"]))
        except BaseException as error:
            members.set_exception(error)  # the waiting checks stop with it
            raise
    for name, future in zip(names, futures, strict=True):
        tables[name] = future.result()
    return Ingested(tables)


def _members(inventory: CheckedTable) -> Members:
    """The accepted inventory's nodes per cluster, read once for every table's membership
    rules. Local rows (materialized) answer the projection on the driver, with no Spark job."""
    found: dict[str, list[str]] = {}
    for row in inventory.accepted().select("cluster", "node").collect():
        found.setdefault(row["cluster"], []).append(row["node"])
    return {cluster: sorted(nodes) for cluster, nodes in sorted(found.items())}


def _checked_at_scale(
    spark: SparkSession,
    table: InputTable,
    rows: DataFrame,
    count: int,
    members: Members | None,
    store: Materialize | None,
    path: str,
) -> CheckedTable:
    """The rules of a table too big to collect: key rules decided on a summary per key, only
    the rows of refused or repeated keys read again (see the module's algorithm)."""
    name = table.name
    slot_s = slot_seconds(rows, table)
    summary = summarize(
        rows, table, latest=name in _LATEST, counted=store is not None, slot_s=slot_s
    )
    unknown: DataFrame | None
    if store is not None:
        # One stored summary carries each key's membership verdict, and one action on it
        # answers every question the later steps ask: rows read, keys refused, repeats.
        if members is not None:
            summary = _with_verdict(summary, members, table)
        summary = store(f"{name}_summary", summary)
        count, bad, unknown, repeated = _probe(spark, summary, table)
        row_refused = bad > 0
        if count == 0:
            raise InputError(f"table {name}: {path} has no rows; {_fix(table)}")
        repeats = repeated is not None
    else:
        unknown = unknown_members(summary, members, table)
        repeated = repeated_keys(summary, table)
        if unknown is not None and unknown.isEmpty():
            unknown = None
        repeats = not repeated.isEmpty()
        row_refused = True  # not counted: the refused rows are read when they are written
    # The rows a row rule refused, read again only where the summary counted some.
    refused = rows.where(F.col("_rule").isNotNull()) if row_refused else rows.limit(0)
    flagged = refused.withColumn("_candidate", F.lit(False))
    # Membership and copies are decided per key on the small summary; only the rows of
    # the few keys concerned (usually none) are read again.
    if not repeats:
        rows = rows.withColumn("_candidate", F.lit(False))
    else:
        assert repeated is not None
        marks = repeated.select("_window_hash", F.lit(True).alias("_candidate"))
        rows = (
            rows.withColumn("_window_hash", F.expr(_window_hash(table, _window(table, slot_s))))
            .join(F.broadcast(marks), "_window_hash", "left")
            .withColumn("_candidate", F.coalesce(F.col("_candidate"), F.lit(False)))
            .drop("_window_hash")
        )
    if unknown is not None:
        rows = refuse_unknown(rows, unknown, table)
    if unknown is not None or repeats:
        again = F.col("_rule").isNull() & F.col("_candidate")
        if unknown is not None:
            again = again | F.col("_unknown")
        few = resolve_copies(rows.where(again), table)
        flagged = flagged.unionByName(few.drop("_unknown"))
    rows = rows.drop("_unknown")
    if store is not None and (unknown is not None or repeats):
        # Only rows read again need storing; else the flagged rows are the summary's.
        flagged = store(f"{name}_flagged", flagged)
    result = CheckedTable(name, rows, flagged, count)
    if name in _LATEST:
        stamp = _ts(table)[0]
        latest = summary.where(F.col(stamp).isNotNull())
        if "_member_rule" in summary.columns:  # the verdict travelled with the summary
            latest = latest.where(F.col("_member_rule").isNull())
        elif unknown is not None:
            latest = latest.join(unknown, _verdict_keys(unknown), "left_anti")
        latest = latest.drop(*_SUMMARY_ONLY)
        if repeats:
            latest = _without_conflicts(latest, result, table)
        result = replace(result, latest=latest)
    return result


def _every_rule(rows: DataFrame, members: Members | None, table: InputTable) -> DataFrame:
    """Every row with its final verdict in one plan, for a table small enough to collect:
    the key and membership rules per row (a lookup in the inventory's nodes) and copies
    settled over every row, with the rules, reasons and raw rows of the summary path (which
    saves work only where rows are many). The rows are few, so they are read in one task:
    its single partition lets the window settle copies without a shuffle, and the whole
    check is one Spark job."""
    if members is not None:
        rows = _member_verdict(_with_verdict(rows, members, table), table)
        rows = rows.drop("_unknown")
    return resolve_copies(rows.coalesce(1), table)


def _localized(spark: SparkSession, table: InputTable, every: DataFrame, path: str) -> CheckedTable:
    """A small table checked by one action (``every``: its rows with final verdicts) and
    kept as local rows: every later stage reads them without running the checks again, and
    Spark plans over local rows without a job where it can. Its rows are read here, so its
    count too; for telemetry, the newest accepted sample per key is taken from them."""
    rows = every.toArrow()
    if rows.num_rows == 0:
        raise InputError(f"table {table.name}: {path} has no rows; {_fix(table)}")
    local = arrow_frame(spark, rows, every.schema).withColumn("_candidate", F.lit(False))
    flagged = local.where(F.col("_rule").isNotNull())
    latest = _newest(spark, rows, every.schema, table) if table.name in _LATEST else None
    return CheckedTable(table.name, local, flagged, rows.num_rows, latest, collected=rows)


def _newest(
    spark: SparkSession, rows: pa.Table, schema: T.StructType, table: InputTable
) -> DataFrame:
    """Per key without its time, the newest accepted sample of local ``rows``: what
    :func:`summarize` gives as ``latest``, in its columns. Accepted rows never share a key
    and a time, so the newest is one row."""
    others, stamp = _others(table), _ts(table)[0]
    values = [c.name for c in table.columns if c.name not in table.keys]
    columns = [*others, stamp, *values]
    accepted = rows.filter(pc.is_null(rows["_rule"])).select(columns)
    times = accepted.group_by(others).aggregate([(stamp, "max")])
    times = times.select([*others, f"{stamp}_max"]).rename_columns([*others, stamp])
    newest = accepted.join(times, [*others, stamp], join_type="inner").select(columns)
    return arrow_frame(spark, newest, T.StructType([schema[c] for c in columns]))


def read_table(
    spark: SparkSession,
    fs: HadoopFS,
    input_dir: str,
    table: InputTable,
    *,
    now: datetime,
    future_tolerance_s: float,
    extra: Sequence[str] = (),
    count: bool = True,
) -> TableRead:
    """All files of one table as canonical typed columns plus ``_source_file``, ``_pos`` and
    the row-local verdict: ``_rule``/``_reason``, the first row-local rule broken and why
    (null if none), with ``_raw`` for those rows;
    how many rows the files hold (-1 without ``count``: the caller counts them with work it
    does anyway, and refuses an empty table itself) and their size."""
    path = f"{input_dir}/{table.name}"
    fix = _fix(table)
    if not fs.exists(path) and not extra:
        raise InputError(f"table {table.name}: {path} does not exist; {fix} there")
    # ``extra``: files staged from other inputs (pipeline/load_reports.py)
    listed = fs.sized_files(path) if fs.exists(path) else []
    files = [*listed, *((file, fs.size(file)) for file in extra)]
    groups: dict[tuple[str, str], list[str]] = {}
    size = 0
    for file, length in files:
        suffix = "." + file.rsplit(".", 1)[-1].lower() if "." in file.rsplit("/", 1)[-1] else ""
        fmt = _FORMATS.get(suffix)
        if fmt is None:
            continue
        header = fs.first_line(file) if fmt == "csv" else ""
        groups.setdefault((fmt, header), []).append(file)
        size += length
    if not groups:
        raise InputError(f"table {table.name}: {path} holds no data files; {fix}")
    frames = [
        _read_group(spark, fmt, header, group, table, now, future_tolerance_s)
        for (fmt, header), group in groups.items()
    ]
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    rows = -1
    if count:
        rows = frame.count()  # no rule runs for this: Parquet answers from its footers
        if rows == 0:
            raise InputError(f"table {table.name}: {path} has no rows; {fix}")
    return TableRead(frame.withColumn("_pos", F.monotonically_increasing_id()), rows, size)


def _fix(table: InputTable) -> str:
    """What to do about a table that is missing or empty."""
    return f"put {table.name} files (.parquet, .csv or .jsonl) with columns " + ", ".join(
        table.required
    )


def typed_columns(
    table: InputTable, fmt: str, present: Sequence[str], stored: Mapping[str, str]
) -> tuple[list[SparkColumn], SparkColumn, dict[str, Sql]]:
    """:func:`typed_sql` as columns (each parsed once), with the texts left as SQL for
    :func:`~trimtab.pipeline.rules.row_rules`."""
    typed, errors, texts = typed_sql(table, fmt, present, stored)
    return [F.expr(c) for c in typed], F.expr(errors), texts


def typed_sql(
    table: InputTable, fmt: str, present: Sequence[str], stored: Mapping[str, str]
) -> tuple[list[Sql], Sql, dict[str, Sql]]:
    """From the input columns set aside as ``_in_<name>``: each contract column typed (null
    when absent) and named, ``_type_errors`` (the names of the cells that did not parse), and
    each column's input as text for the reasons, as SQL. ``stored`` gives a Parquet file's
    column types."""
    typed: list[Sql] = []
    type_errors: list[Sql] = []
    texts: dict[str, Sql] = {}
    for column in table.columns:
        sql_type = SPARK_TYPES[column.type].simpleString()
        if column.name not in present:
            typed.append(f"CAST(NULL AS {sql_type}) AS {q(column.name)}")
            texts[column.name] = "CAST(NULL AS STRING)"
            continue
        source = q(f"_in_{column.name}")
        # A Parquet column stored as text is read as a CSV cell is (epoch seconds, ISO 8601).
        as_text = fmt != "parquet" or stored.get(column.name) == "string"
        texts[column.name] = source if as_text else f"CAST({source} AS STRING)"
        value = _typed(source, column.type, "csv" if as_text else fmt)
        typed.append(f"{value} AS {q(column.name)}")
        if as_text and column.type != "string":
            failed = f"{source} IS NOT NULL AND trim({source}) != '' AND {value} IS NULL"
            type_errors.append(f"CASE WHEN {failed} THEN {text(column.name)} END")
    errors = f"concat_ws(',', {', '.join(type_errors)})" if type_errors else "''"
    return typed, f"{errors} AS `_type_errors`", texts


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
    stored: dict[str, str] = {}
    if fmt == "parquet":
        footer = _footer_schema(files[0])
        frame = (reader if footer is None else reader.schema(footer)).parquet(*files)
        present = frame.columns
        stored = dict(frame.dtypes)
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
    # The input columns step aside (``_in_<name>``) so the typed columns can take their names;
    # the raw row and the text of a timestamp are built only inside the rules' lazy branches.
    # Everything is SQL text, parsed once per expression (see trimtab.pipeline.rules.Sql).
    corrupt = q(_CORRUPT) if fmt != "parquet" else "CAST(NULL AS STRING)"
    frame = frame.selectExpr(
        *(f"{q(c)} AS {q(f'_in_{c}')}" for c in known),
        f"{corrupt} AS `_corrupt`",
        "`_metadata`.`file_path` AS `_source_file`",
    )
    typed, errors, texts = typed_sql(table, fmt, present, stored)
    typed_frame = frame.selectExpr("*", *typed, errors)
    limit = time_limit(str(_micros(now) + int(future_tolerance_s) * 1_000_000))
    first = row_rules_sql(table, texts, limit)
    original = ", ".join(f"{text(c)}, {q(f'_in_{c}')}" for c in known)
    ruled = typed_frame.selectExpr("*", f"{first} AS `_first`")
    return ruled.selectExpr(
        *(q(c.name) for c in table.columns),
        "`_source_file`",
        "`_first`.`r` AS `_rule`",
        "`_first`.`m` AS `_reason`",
        # The raw row is rendered only for rows already refused: good rows never pay for JSON.
        f"CASE WHEN `_first` IS NOT NULL THEN to_json(named_struct({original})) END AS `_raw`",
    )


# Arrow types whose Spark type is certain, as Spark reads them from Parquet.
_PLAIN_TYPES: dict[pa.DataType, T.DataType] = {
    pa.string(): T.StringType(),
    pa.large_string(): T.StringType(),
    pa.bool_(): T.BooleanType(),
    pa.int8(): T.ByteType(),
    pa.int16(): T.ShortType(),
    pa.int32(): T.IntegerType(),
    pa.int64(): T.LongType(),
    pa.float32(): T.FloatType(),
    pa.float64(): T.DoubleType(),
    pa.date32(): T.DateType(),
}


def _footer_schema(file: str) -> T.StructType | None:
    """The schema Spark would take from a local Parquet file's footer, read by pyarrow:
    Spark's own inference is a Spark job for every read. None when the file is not local or
    any column is of a type whose reading Spark decides itself (nanosecond or INT96 times,
    unsigned, nested, dictionary...): then Spark infers it, and reports what it cannot read."""
    path = local_directory(file)
    if path is None:
        return None
    try:
        footer = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return None
    fields = []
    for field in footer:
        kind = field.type
        if pa.types.is_timestamp(kind) and kind.tz is not None and kind.unit in ("ms", "us"):
            fields.append(T.StructField(field.name, T.TimestampType()))
        elif kind in _PLAIN_TYPES:
            fields.append(T.StructField(field.name, _PLAIN_TYPES[kind]))
        else:
            return None
    return T.StructType(fields)


def _micros(moment: datetime) -> int:
    """A time as microseconds since the epoch (a naive one is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1_000_000)


def _typed(source: Sql, type_: str, fmt: str) -> Sql:
    """An input column as its canonical type; text is read as the Python readers read it."""
    if fmt == "parquet":
        if type_ == "timestamp":
            return source
        return f"TRY_CAST({source} AS {SPARK_TYPES[type_].simpleString()})"
    if type_ == "timestamp":
        return parse_timestamp(source)
    if type_ == "long":
        return parse_long(source)
    return f"TRY_CAST({source} AS {SPARK_TYPES[type_].simpleString()})"


def _ts(table: InputTable) -> list[str]:
    return [c.name for c in table.columns if c.kind == "timestamp"]


def _others(table: InputTable) -> list[str]:
    """The key columns besides the time: what the summary groups by."""
    return [k for k in table.keys if k not in _ts(table)]


def _present(columns: Sequence[str]) -> Sql:
    """True where none of ``columns`` is null."""
    return "(" + " AND ".join(["true", *(f"{q(c)} IS NOT NULL" for c in columns)]) + ")"


def _member_keys(frame: DataFrame) -> list[str]:
    """The columns naming a row's cluster and node (``node`` or ``broker``) if it has one."""
    node = next((c for c in ("node", "broker") if c in frame.columns), None)
    return ["cluster"] if node is None else ["cluster", node]


def _default_cluster(rows: DataFrame, table: InputTable, clusters: Sequence[str]) -> DataFrame:
    """A blank ``cluster`` where the contract allows it is the inventory's only cluster; with
    several, it stays ``""`` and :func:`unknown_members` refuses it."""
    optional = any(c.name == "cluster" and not c.required for c in table.columns)
    if not optional or not clusters:
        return rows
    only = text(clusters[0] if len(clusters) == 1 else "")
    missing = blank("`cluster`")
    return rows.withColumn("cluster", F.expr(f"CASE WHEN {missing} THEN {only} ELSE `cluster` END"))


def _verdict_keys(unknown: DataFrame) -> list[str]:
    return [c for c in unknown.columns if not c.startswith("_member")]


def unknown_members(
    summary: DataFrame, members: Members | None, table: InputTable | None = None
) -> DataFrame | None:
    """The summary's keys refused by a key rule (``bad_bundle``, from the contract) or a
    membership rule (``unknown_cluster``, ``unknown_node``: the cluster or node is missing
    from the accepted inventory), with the first rule broken and its reason; None without
    ``members`` (when checking the inventory itself).

    The summary holds one row per key, so this is a lookup for a few thousand rows however
    many samples there are: no telemetry row pays for a lookup or a pattern match.
    """
    if members is None:
        return None
    keys = _verdict_columns(summary, table)
    groups = summary.where(_present(keys)).select(*keys).distinct()
    return _with_verdict(groups, members, table).where(F.col("_member_rule").isNotNull())


def _verdict_columns(summary: DataFrame, table: InputTable | None) -> list[str]:
    """The key columns the key and membership rules read."""
    if table is not None and key_verdict(table) is not None:
        return _others(table)  # a key rule reads key columns the membership ones do not
    return _member_keys(summary)


def _with_verdict(summary: DataFrame, members: Members, table: InputTable | None) -> DataFrame:
    """``summary`` with ``_member_rule`` and ``_member_reason``: the first key or membership
    rule its key breaks (null where none does, or where a key column is null)."""
    keys = _verdict_columns(summary, table)
    found = key_verdict_sql(table) if table is not None else []
    rules = [f"WHEN {cond} THEN {text(name)}" for name, cond, _ in found]
    reasons = [f"WHEN {cond} THEN {why}" for _, cond, why in found]
    clusters = list(members)
    listed = ", ".join(text(c) for c in clusters)
    outside = f"NOT (`cluster` IN ({listed}))" if clusters else "true"
    rules.append(f"WHEN {outside} THEN 'unknown_cluster'")
    several = f"no cluster given and the inventory has {len(clusters)} clusters"
    reasons.append(f"WHEN `cluster` = '' THEN {text(several)}")
    reasons.append(
        f"WHEN {outside} THEN format_string('cluster %s is not in the inventory', `cluster`)"
    )
    node = next((k for k in ("node", "broker") if k in keys), None)
    if node is not None:
        unknown = f"NOT ({_known_node(members, node)})"
        rules.append(f"WHEN {unknown} THEN 'unknown_node'")
        missing = text(f"{node} %s is not a node of cluster %s")
        reasons.append(f"WHEN {unknown} THEN format_string({missing}, {q(node)}, `cluster`)")
    present = _present(keys)
    return summary.selectExpr(
        *(q(c) for c in summary.columns),
        f"CASE WHEN {present} THEN CASE {' '.join(rules)} END END AS `_member_rule`",
        f"CASE WHEN {present} THEN CASE {' '.join(reasons)} END END AS `_member_reason`",
    )


def _known_node(members: Members, node: str) -> Sql:
    """Whether column ``node`` names a node of the row's cluster in ``members``, as literals
    per cluster: a lookup in the plan itself (``IN`` becomes a hash set), where a join with
    the inventory cost a Spark job to broadcast it."""
    branches = " ".join(
        f"WHEN {text(cluster)} THEN {q(node)} IN ({', '.join(text(n) for n in names)})"
        for cluster, names in members.items()
    )
    return f"CASE `cluster` {branches} ELSE false END" if members else "false"


def _probe(
    spark: SparkSession, summary: DataFrame, table: InputTable
) -> tuple[int, int, DataFrame | None, DataFrame | None]:
    """From a stored summary (see :func:`summarize` with ``counted``, and
    :func:`_with_verdict`), in one action: how many rows the table holds and how many a row
    rule refused, the keys refused by a key or membership rule (as :func:`unknown_members`
    gives them) and the ``_window_hash`` of every screened window (as :func:`repeated_keys`),
    these two as local frames or None when empty. Each would otherwise be a Spark job of its
    own on every run."""
    others = _others(table)
    verdict = "_member_rule" in summary.columns
    keys = _verdict_columns(summary, table) if verdict else []
    hashes = f"transform(`_repeated`, `_t` -> {_window_hash(table, '`_t`')})"
    listed = f"{_present(others)} AND `_repeated` IS NOT NULL"
    aggregates = [
        "sum(`_rows`) AS `rows`",
        "sum(`_bad`) AS `bad`",
        f"flatten(collect_list(CASE WHEN {listed} THEN {hashes} END)) AS `repeated`",
    ]
    if verdict:
        refused = ", ".join(q(c) for c in (*keys, "_member_rule", "_member_reason"))
        aggregates.append(
            f"collect_list(CASE WHEN `_member_rule` IS NOT NULL THEN struct({refused}) END)"
            " AS `unknown`"
        )
    got = summary.selectExpr(*aggregates).collect()[0]
    unknown = None
    if verdict and got["unknown"]:
        fields = [summary.schema[k] for k in (*keys, "_member_rule", "_member_reason")]
        unknown = local_frame(spark, got["unknown"], T.StructType(fields))
    repeated = None
    if got["repeated"]:
        distinct = sorted(set(got["repeated"]))
        window_hash = T.StructType([T.StructField("_window_hash", T.LongType())])
        repeated = local_frame(spark, [(h,) for h in distinct], window_hash)
    return int(got["rows"] or 0), int(got["bad"] or 0), unknown, repeated


def refuse_unknown(rows: DataFrame, unknown: DataFrame, table: InputTable) -> DataFrame:
    """``rows`` with the key or membership rule applied where no row-local rule refused the
    row first; ``_unknown`` marks the rows it refused."""
    joined = rows.join(F.broadcast(unknown), _verdict_keys(unknown), "left")
    return _member_verdict(joined, table)


def _member_verdict(rows: DataFrame, table: InputTable) -> DataFrame:
    """``rows`` carrying ``_member_rule``/``_member_reason`` (see :func:`_with_verdict`) with
    that rule applied where no row-local rule refused the row first (``_unknown`` marks the
    rows it refused), without those two columns."""
    hit = "`_rule` IS NULL AND `_member_rule` IS NOT NULL"
    refused = _refuse(
        rows.withColumn("_unknown", F.expr(hit)),
        "_unknown",
        "`_member_rule`",
        "`_member_reason`",
        table,
    )
    return refused.drop("_member_rule", "_member_reason")


#: The repeat screen of :func:`summarize`: a sample's time sets one bit of its key's window,
#: a bit per slot of ``slot_s`` seconds (at most ``_SLOT_S``: see :func:`slot_seconds`), 64
#: bits a long, ``_SLOT_LONGS`` longs a window. Two samples of a key at least a slot apart
#: never share a bit.
_SLOT_S = 15
_SLOT_LONGS = 4
_SLOTS = 64 * _SLOT_LONGS  # slots a window
#: The rows :func:`slot_seconds` looks at (one small job on the first rows read).
_CADENCE_ROWS = 20_000


def slot_seconds(rows: DataFrame, table: InputTable) -> int:
    """The screen's slot for a table: half the typical gap between a key's samples (its
    tenth percentile among the first rows read), from 1 to ``_SLOT_S`` seconds.

    Only the speed depends on it, never a verdict: samples closer than a slot share its bit,
    so their whole window is read again and settled exactly. With a fixed 15-s slot,
    telemetry every 10 s (a common scrape interval) had every window read again: at 5 M rows
    the job took 80 s instead of 21 s; a slot that follows the cadence keeps them apart."""
    stamps = _ts(table)
    if not stamps:
        return _SLOT_S
    key = f"xxhash64({', '.join(q(c) for c in _others(table))})"
    sample = (
        rows.selectExpr(f"{key} AS k", f"unix_micros({q(stamps[0])}) AS t")
        .where("t IS NOT NULL")
        .limit(_CADENCE_ROWS)
        .toArrow()
    )
    k, t = sample.column("k").to_numpy(), sample.column("t").to_numpy()
    order = np.lexsort((t, k))
    k, t = k[order], t[order]
    steps = np.diff(t)
    gaps = steps[(k[1:] == k[:-1]) & (steps > 0)]
    if not len(gaps):
        return _SLOT_S
    typical = float(np.percentile(gaps, 10)) / 1e6
    return int(max(1, min(_SLOT_S, typical // 2)))


def _window(table: InputTable, slot_s: int) -> Sql:
    """A row's screen window (constant for a table without a time)."""
    stamps = _ts(table)
    width = _SLOTS * slot_s
    return f"floor(unix_seconds({q(stamps[0])}) / {width})" if stamps else "0L"


def _window_hash(table: InputTable, window: Sql) -> Sql:
    """The hash of a key without its time and a screen window."""
    parts = [*(q(c) for c in _others(table)), window]
    return f"xxhash64({', '.join(parts)})"


def summarize(
    rows: DataFrame,
    table: InputTable,
    *,
    latest: bool = False,
    counted: bool = False,
    slot_s: int = _SLOT_S,
) -> DataFrame:
    """Two aggregations, one output row per key without its time (e.g. per bundle and
    broker): the count of refused rows (``_bad``), the screen windows where a sample time
    may repeat (``_repeated``), with ``latest`` the newest accepted sample's values and with
    ``counted`` the key's row count (``_rows``: their sum is the table's, no count of its own).

    Every aggregate has a fixed size, so Spark aggregates with compiled code and pre-
    aggregates before the shuffle (collecting each key's times, or its refused rows, made it
    aggregate row by row, uncompiled: twice the time at 50 M rows). The exact repeat check is
    screened instead: per key and window of ``_SLOTS * slot_s`` seconds, each sample time sets
    the bit of its ``slot_s``-second slot; a window with fewer bits set than times holds two
    times in one slot, which every repeat does. Only such windows are named, and their rows
    read again and settled exactly (:func:`resolve_copies`), so a false alarm (two samples
    less than ``slot_s`` apart) costs a second look, never a wrong verdict. Repeats are
    screened among every row whose keys are present (a superset of the accepted rows').
    Exact copies are identical, so they cannot change the newest accepted values: those
    need no duplicate check first.
    """
    stamps, others = _ts(table), _others(table)
    slot = f"pmod(floor(unix_seconds({q(stamps[0])}) / {slot_s}), {_SLOTS})" if stamps else "0L"
    timed = q(stamps[0]) if stamps else "1"
    first = [
        "count(1) AS `_n`",
        f"count({timed}) AS `_timed`",
        "count_if(`_rule` IS NOT NULL) AS `_bad`",
        *(
            f"bit_or(CASE WHEN `_slot` DIV 64 = {i} THEN shiftleft(1L, CAST(`_slot` % 64 AS INT))"
            f" END) AS `_b{i}`"
            for i in range(_SLOT_LONGS)
        ),
    ]
    values: list[str] = []
    if latest and stamps:
        # The newest accepted sample per window, then per key (windows do not overlap, so a
        # key's newest window holds its newest time once). Within a window, two accepted rows
        # at its newest time are copies: equal, or a conflict whose key is taken again.
        values = [c.name for c in table.columns if c.name not in table.keys]
        newest = f"CASE WHEN `_rule` IS NULL THEN {q(stamps[0])} END"
        first.append(f"max({newest}) AS {q(stamps[0])}")
        first += [f"max_by({q(v)}, {newest}) AS {q(v)}" for v in values]
    windows = rows.selectExpr(
        *(q(c) for c in (*others, *stamps[:1], *values, "_rule")),
        f"{_window(table, slot_s)} AS `_w`",
        f"{slot} AS `_slot`",
    )
    per_window = windows.groupBy(*others, "_w").agg(*(F.expr(a) for a in first))
    bits = " + ".join(f"coalesce(bit_count(`_b{i}`), 0)" for i in range(_SLOT_LONGS))
    screened = f"{_present(others)} AND {bits} < `_timed`"
    second = [
        "sum(`_bad`) AS `_bad`",
        f"collect_list(CASE WHEN {screened} THEN `_w` END) AS `_windows`",
    ]
    if values:
        second.append(f"max({q(stamps[0])}) AS {q(stamps[0])}")
        second += [f"max_by({q(v)}, {q(stamps[0])}) AS {q(v)}" for v in values]
    kept = [*others, *(stamps[:1] if values else []), *values, "_bad"]
    if counted:
        second.append("sum(`_n`) AS `_rows`")
        kept.append("_rows")
    grouped = per_window.groupBy(*others).agg(*(F.expr(a) for a in second))
    return grouped.selectExpr(
        *(q(c) for c in kept),
        "CASE WHEN size(`_windows`) > 0 THEN `_windows` END AS `_repeated`",
    )


def repeated_keys(summary: DataFrame, table: InputTable) -> DataFrame:
    """``_window_hash`` of every screen window where a key's sample time may repeat, from
    :func:`summarize`."""
    exploded = summary.select(*_others(table), F.explode("_repeated").alias("_w"))
    return exploded.selectExpr(f"{_window_hash(table, '`_w`')} AS `_window_hash`").distinct()


def resolve_copies(few: DataFrame, table: InputTable) -> DataFrame:
    """Among ``few`` rows (read again for their key), accepted rows sharing a key are settled
    by the rule of :mod:`trimtab.contract.repeats`: all equal in every column, the first one
    read is kept and the others are ``duplicate``; any two differ, every one is ``conflict``,
    its reason naming the key and the file of a differing row. Refused rows keep their
    verdict. Only these few rows are shuffled.
    """
    keys = list(table.keys)
    group = f"PARTITION BY `_rule` IS NULL, {', '.join(q(k) for k in keys)}"
    content = f"to_json(struct({', '.join(q(c.name) for c in table.columns)}))"
    marked = few.withColumn("_content", F.expr(content))
    variants = f"collect_list(struct(`_content`, `_source_file`)) OVER ({group})"
    marked = marked.selectExpr(
        "*",
        f"filter({variants}, v -> v._content != `_content`) AS `_other`",
        f"row_number() OVER ({group} ORDER BY `_pos`) AS `_nth`",
    )
    conflict = "(`_rule` IS NULL AND size(`_other`) > 0)"
    copy = f"(`_rule` IS NULL AND NOT {conflict} AND `_nth` > 1)"
    what = ", ".join(f"concat({text(k + ' ')}, CAST({q(k)} AS STRING))" for k in keys)
    what = f"concat_ws(', ', {what})"
    differ = text("conflicting rows for %s: this one and one in %s differ, so both are refused")
    reason = (
        f"CASE WHEN {conflict} THEN format_string({differ}, {what}, "
        "element_at(`_other`, 1)._source_file) "
        f"ELSE concat('an exact duplicate of an earlier row for ', {what}) END"
    )
    rule = f"CASE WHEN {conflict} THEN 'conflict' ELSE 'duplicate' END"
    marked = marked.withColumn("_repeat", F.expr(f"{conflict} OR {copy}"))
    refused = _refuse(marked, "_repeat", rule, reason, table)
    return refused.drop("_repeat", "_content", "_other", "_nth")


def _without_conflicts(latest: DataFrame, checked: CheckedTable, table: InputTable) -> DataFrame:
    """``latest`` with the keys that had conflicting samples (refused after the summary was
    made) taken again from their accepted rows: their newest sample that is not refused.

    The conflicted keys are collected (one job on the few flagged rows) and handed back as
    local rows: usually there are none, and the plans then never read the telemetry again."""
    others = _others(table)
    flagged = checked.flagged.where(F.col("_rule") == "conflict").select(*others)
    keys = sorted({tuple(row) for row in flagged.collect()})
    if not keys:
        return latest
    conflicted = local_frame(latest.sparkSession, keys, flagged.schema)
    newest_first = Window.partitionBy(*others).orderBy(F.col(_ts(table)[0]).desc())
    again = (
        checked.accepted()
        .join(F.broadcast(conflicted), others)
        .withColumn("_n", F.row_number().over(newest_first))
        .where(F.col("_n") == 1)
        .select(*latest.columns)
    )
    return latest.join(conflicted, others, "left_anti").unionByName(again)


def _refuse(frame: DataFrame, flag: str, rule: Sql, reason: Sql, table: InputTable) -> DataFrame:
    """``frame`` with ``rule`` and ``reason`` set where column ``flag`` is true, and the raw
    row rendered from the typed values (a row refused by a rule needing other rows parsed
    cleanly). Elsewhere the verdict stays; all three are computed from the frame as it was."""
    hit = q(flag)
    changed = {
        "_raw": f"CASE WHEN {hit} THEN {_typed_json(table)} ELSE `_raw` END",
        "_reason": f"CASE WHEN {hit} THEN {reason} ELSE `_reason` END",
        "_rule": f"CASE WHEN {hit} THEN {rule} ELSE `_rule` END",
    }
    return frame.selectExpr(
        *(f"{changed[c]} AS {q(c)}" if c in changed else q(c) for c in frame.columns)
    )


def _typed_json(table: InputTable) -> Sql:
    return f"to_json(struct({', '.join(q(c.name) for c in table.columns)}))"
