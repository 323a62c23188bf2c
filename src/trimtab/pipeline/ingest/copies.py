"""Rows that share a key, settled by what they hold: ``duplicate`` and ``conflict``.

Why a module of its own
    The repeat rule of :mod:`trimtab.contract.repeats` in Spark, with the same reasons (its
    templates as ``format_string`` patterns): among the few rows read again for their key,
    all equal keeps the first and refuses the others as ``duplicate``; any two differ
    refuses all as ``conflict``. A key whose newest sample was a conflict takes its newest
    accepted sample again.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from trimtab.contract.repeats import CONFLICT_REASON, DUPLICATE_REASON
from trimtab.pipeline.ingest.keys import other_keys, refuse, stamp_columns
from trimtab.pipeline.ingest.result import CheckedTable
from trimtab.pipeline.local import local_frame
from trimtab.pipeline.rules import q, text
from trimtab.pipeline.schemas import InputTable

__all__ = ["resolve_copies", "without_conflicts"]


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
    # The contract's reason templates as format_string patterns (they hold no other %)
    differ = text(CONFLICT_REASON.format(what="%s", where="%s"))
    copied = text(DUPLICATE_REASON.format(what="%s"))
    reason = (
        f"CASE WHEN {conflict} THEN format_string({differ}, {what}, "
        "element_at(`_other`, 1)._source_file) "
        f"ELSE format_string({copied}, {what}) END"
    )
    rule = f"CASE WHEN {conflict} THEN 'conflict' ELSE 'duplicate' END"
    marked = marked.withColumn("_repeat", F.expr(f"{conflict} OR {copy}"))
    refused = refuse(marked, "_repeat", rule, reason, table)
    return refused.drop("_repeat", "_content", "_other", "_nth")


def without_conflicts(latest: DataFrame, checked: CheckedTable, table: InputTable) -> DataFrame:
    """``latest`` with the keys that had conflicting samples (refused after the summary was
    made) taken again from their accepted rows: their newest sample that is not refused.

    The conflicted keys are collected (one job on the few flagged rows) and handed back as
    local rows: usually there are none, and the plans then never read the telemetry again."""
    others = other_keys(table)
    flagged = checked.flagged.where(F.col("_rule") == "conflict").select(*others)
    keys = sorted({tuple(row) for row in flagged.collect()})
    if not keys:
        return latest
    conflicted = local_frame(latest.sparkSession, keys, flagged.schema)
    newest_first = Window.partitionBy(*others).orderBy(F.col(stamp_columns(table)[0]).desc())
    again = (
        checked.accepted()
        .join(F.broadcast(conflicted), others)
        .withColumn("_n", F.row_number().over(newest_first))
        .where(F.col("_n") == 1)
        .select(*latest.columns)
    )
    return latest.join(conflicted, others, "left_anti").unionByName(again)
