"""One aggregation per table, grouped by its key: refused rows, repeat windows, newest sample.

Why a module of its own
    A big table is never shuffled whole for its key rules: one aggregation per key without
    the time gives the count of refused rows, the windows where a sample time may repeat
    (a bitmap screen that never misses a repeat) and the newest accepted sample, in
    fixed-size aggregates Spark compiles and pre-aggregates. Membership and repeats are then
    decided on those few rows, and only the rows they name are read again.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from trimtab.pipeline.ingest.keys import all_present, other_keys, stamp_columns
from trimtab.pipeline.ingest.members import verdict_columns
from trimtab.pipeline.local import local_frame
from trimtab.pipeline.rules import Sql, q
from trimtab.pipeline.schemas import InputTable

__all__ = [
    "probe",
    "repeated_keys",
    "slot_seconds",
    "summarize",
    "window_hash",
    "window_sql",
]


def probe(
    spark: SparkSession, summary: DataFrame, table: InputTable
) -> tuple[int, int, DataFrame | None, DataFrame | None]:
    """From a stored summary (see :func:`summarize` with ``counted``, and
    :func:`with_verdict`), in one action: how many rows the table holds and how many a row
    rule refused, the keys refused by a key or membership rule (as :func:`unknown_members`
    gives them) and the ``_window_hash`` of every screened window (as :func:`repeated_keys`),
    these two as local frames or None when empty. Each would otherwise be a Spark job of its
    own on every run."""
    others = other_keys(table)
    verdict = "_member_rule" in summary.columns
    keys = verdict_columns(summary, table) if verdict else []
    hashes = f"transform(`_repeated`, `_t` -> {window_hash(table, '`_t`')})"
    listed = f"{all_present(others)} AND `_repeated` IS NOT NULL"
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
        hash_schema = T.StructType([T.StructField("_window_hash", T.LongType())])
        repeated = local_frame(spark, [(h,) for h in distinct], hash_schema)
    return int(got["rows"] or 0), int(got["bad"] or 0), unknown, repeated


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
    stamps = stamp_columns(table)
    if not stamps:
        return _SLOT_S
    key = f"xxhash64({', '.join(q(c) for c in other_keys(table))})"
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


def window_sql(table: InputTable, slot_s: int) -> Sql:
    """A row's screen window (constant for a table without a time)."""
    stamps = stamp_columns(table)
    width = _SLOTS * slot_s
    return f"floor(unix_seconds({q(stamps[0])}) / {width})" if stamps else "0L"


def window_hash(table: InputTable, window: Sql) -> Sql:
    """The hash of a key without its time and a screen window."""
    parts = [*(q(c) for c in other_keys(table)), window]
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
    stamps, others = stamp_columns(table), other_keys(table)
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
        f"{window_sql(table, slot_s)} AS `_w`",
        f"{slot} AS `_slot`",
    )
    per_window = windows.groupBy(*others, "_w").agg(*(F.expr(a) for a in first))
    bits = " + ".join(f"coalesce(bit_count(`_b{i}`), 0)" for i in range(_SLOT_LONGS))
    screened = f"{all_present(others)} AND {bits} < `_timed`"
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
    exploded = summary.select(*other_keys(table), F.explode("_repeated").alias("_w"))
    return exploded.selectExpr(f"{window_hash(table, '`_w`')} AS `_window_hash`").distinct()
