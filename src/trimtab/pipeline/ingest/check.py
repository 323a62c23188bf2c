"""``ingest``: read and check every input table, in the order the rules need.

Why a module of its own
    This is the ingest's one entry point and its plan: the inventory first (the other
    tables are checked against it), the other tables read while it is checked and then
    checked side by side in threads; a small table checked whole by one action and kept as
    local rows, a big one by its summary, with only the rows of refused or repeated keys
    read again (see the package's algorithm).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.util import inheritable_thread_target

from trimtab.errors import InputError
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.ingest.copies import resolve_copies, without_conflicts
from trimtab.pipeline.ingest.keys import other_keys, stamp_columns
from trimtab.pipeline.ingest.members import (
    Members,
    default_cluster,
    member_verdict,
    refuse_unknown,
    unknown_members,
    verdict_keys,
    with_verdict,
)
from trimtab.pipeline.ingest.read import read_table, table_fix
from trimtab.pipeline.ingest.result import CheckedTable, Ingested
from trimtab.pipeline.ingest.summary import (
    probe,
    repeated_keys,
    slot_seconds,
    summarize,
    window_hash,
    window_sql,
)
from trimtab.pipeline.local import arrow_frame
from trimtab.pipeline.schemas import INPUT_TABLES, InputTable

__all__ = ["LOCAL_TABLE_BYTES", "Materialize", "ingest"]


#: Stores a small frame and returns it read back (the job writes it to its staging
#: directory), so that later stages read a few stored rows instead of re-running a check.
Materialize = Callable[[str, DataFrame], DataFrame]


#: A telemetry table whose files hold at most this many bytes is checked whole by one action
#: and kept as local rows, as the inventory always is: below it, the few Spark jobs of
#: storing and probing a summary cost more than collecting the rows (see the ingest, step 7).
LOCAL_TABLE_BYTES = 4 << 20


_TELEMETRY = ("node_metrics", "bundle_metrics")
# Tables whose newest accepted sample per key is summarised while checking: the plans need
# only each bundle's newest rates and each broker's newest sample (node loads read every
# sample anyway, but the plans then need not read them again).
_LATEST = ("node_metrics", "bundle_metrics")


# Summary columns that are not a sample's (dropped from ``latest``).
_SUMMARY_ONLY = ("_bad", "_repeated", "_rows", "_member_rule", "_member_reason")


def ingest(
    spark: SparkSession,
    fs: HadoopFS,
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
    probed by one action. ``fs``: the run's one :class:`HadoopFS`.
    """
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
        rows = default_cluster(read.frame, table, sorted(members or {}))
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
            summary = with_verdict(summary, members, table)
        summary = store(f"{name}_summary", summary)
        count, bad, unknown, repeated = probe(spark, summary, table)
        row_refused = bad > 0
        if count == 0:
            raise InputError(f"table {name}: {path} has no rows; {table_fix(table)}")
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
            rows.withColumn("_window_hash", F.expr(window_hash(table, window_sql(table, slot_s))))
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
        stamp = stamp_columns(table)[0]
        latest = summary.where(F.col(stamp).isNotNull())
        if "_member_rule" in summary.columns:  # the verdict travelled with the summary
            latest = latest.where(F.col("_member_rule").isNull())
        elif unknown is not None:
            latest = latest.join(unknown, verdict_keys(unknown), "left_anti")
        latest = latest.drop(*_SUMMARY_ONLY)
        if repeats:
            latest = without_conflicts(latest, result, table)
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
        rows = member_verdict(with_verdict(rows, members, table), table)
        rows = rows.drop("_unknown")
    return resolve_copies(rows.coalesce(1), table)


def _localized(spark: SparkSession, table: InputTable, every: DataFrame, path: str) -> CheckedTable:
    """A small table checked by one action (``every``: its rows with final verdicts) and
    kept as local rows: every later stage reads them without running the checks again, and
    Spark plans over local rows without a job where it can. Its rows are read here, so its
    count too; for telemetry, the newest accepted sample per key is taken from them."""
    rows = every.toArrow()
    if rows.num_rows == 0:
        raise InputError(f"table {table.name}: {path} has no rows; {table_fix(table)}")
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
    others, stamp = other_keys(table), stamp_columns(table)[0]
    values = [c.name for c in table.columns if c.name not in table.keys]
    columns = [*others, stamp, *values]
    accepted = rows.filter(pc.is_null(rows["_rule"])).select(columns)
    times = accepted.group_by(others).aggregate([(stamp, "max")])
    times = times.select([*others, f"{stamp}_max"]).rename_columns([*others, stamp])
    newest = accepted.join(times, [*others, stamp], join_type="inner").select(columns)
    return arrow_frame(spark, newest, T.StructType([schema[c] for c in columns]))
