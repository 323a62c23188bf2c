"""The stream's one wide frame: every source's rows typed and checked by ingest's rules.

Why a module of its own
    Each source (Parquet, JSON lines, CSV, load reports) gives its table's columns as text
    or with the contract's types; here they are typed and ruled as ingest does (the same
    Spark expressions of :mod:`trimtab.pipeline.rules`, and the key rule ``bad_bundle``),
    then laid out as one set of columns, so that every source unions into one frame for one
    stateful step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trimtab.pipeline.loads import SAMPLE_FIELDS

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

    from trimtab.pipeline.schemas import InputTable
    from trimtab.pipeline.stream.options import StreamOptions

__all__ = ["CORRUPT", "GLOBS", "RULE_TYPE", "STREAM_TABLES", "WIDE", "checked", "wide_columns"]

#: The telemetry tables a stream reads (besides ``load_reports/``).
STREAM_TABLES = ("node_metrics", "bundle_metrics")
#: The file formats a stream reads, by glob.
GLOBS = {"parquet": "*.{parquet,pq}", "json": "*.{jsonl,json,ndjson}", "csv": "*.csv"}
CORRUPT = "_corrupt_record"
#: A rule a whole file breaks, before the row rules (a CSV header lacking a required column).
RULE_TYPE = "struct<r:string,m:string>"

#: The wide frame's columns and their types, in order (every stream gives them all).
WIDE = (
    ("_table", "string"),
    ("cluster", "string"),
    ("node", "string"),
    ("bundle", "string"),
    ("broker", "string"),
    ("ts", "timestamp"),
    ("ts_us", "long"),
    *((name, "double") for name in SAMPLE_FIELDS),
    ("disk_free_bytes", "long"),
    ("disk_total_bytes", "long"),
    ("storage_bytes", "long"),
    ("_rule", "string"),
    ("_reason", "string"),
    ("_raw", "string"),
    ("_source_file", "string"),
    ("_landed_us", "long"),
)


def wide_columns(**values: SparkColumn) -> list[SparkColumn]:
    """The wide frame's columns from ``values``, null where not given."""
    from pyspark.sql import functions as F

    return [
        values[name].cast(type_).alias(name)
        if name in values
        else F.lit(None).cast(type_).alias(name)
        for name, type_ in WIDE
    ]


def checked(
    frame: DataFrame, table: InputTable, options: StreamOptions, *, parquet: bool = False
) -> DataFrame:
    """Rows read as ``_in_<name>`` (text, or with the contract's types from ``parquet``)
    typed and ruled as ingest's ``_read_group`` does, as the wide frame's columns."""
    from pyspark.sql import functions as F

    from trimtab.pipeline.ingest.read import typed_columns
    from trimtab.pipeline.rules import key_verdict, row_rules, time_limit

    names = [c.name for c in table.columns]
    typed, errors, texts = typed_columns(table, "parquet" if parquet else "text", names, {})
    frame = frame.select("*", *typed, errors.alias("_type_errors"))
    tolerance = int(options.future_tolerance_s) * 1_000_000
    limit = time_limit(f"unix_micros(current_timestamp()) + {tolerance}")
    first = F.coalesce(F.col("_file_rule"), row_rules(table, texts, limit))
    verdict = key_verdict(table)
    if verdict is not None:  # bad_bundle: a key rule, after the row rules
        rule, reason = verdict
        first = F.coalesce(
            first, F.when(rule.isNotNull(), F.struct(rule.alias("r"), reason.alias("m")))
        )
    original = F.struct(*[F.col(f"_in_{c}").alias(c) for c in names])
    frame = frame.select("*", first.alias("_first"))
    present = set(names)
    values: dict[str, SparkColumn] = {"_table": F.lit(table.name)}
    for name, _ in WIDE:
        if name in present:
            values[name] = F.col(name)
    values |= {
        "ts_us": F.unix_micros("ts"),
        "_rule": F.col("_first.r"),
        "_reason": F.col("_first.m"),
        "_raw": F.when(F.col("_first").isNotNull(), F.to_json(original)),
        "_source_file": F.col("_source_file"),
        "_landed_us": F.col("_landed_us"),
    }
    return frame.select(*wide_columns(**values))
