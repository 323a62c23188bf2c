"""``load_reports/<cluster>/*`` as a stream: each report file, as it lands, turned into rows.

Why a module of its own
    The batch job stages load reports as node and bundle rows before its ingest; the stream
    turns each file into the same rows in a task, with the batch job's own function
    (:func:`trimtab.pipeline.load_reports.report_rows`), then parses and checks them as the
    tables' rows, and refuses what the reader refuses as ``bad_report``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from trimtab.pipeline.stream.wide import CORRUPT, RULE_TYPE, STREAM_TABLES, checked, wide_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from trimtab.pipeline.fs import HadoopFS
    from trimtab.pipeline.stream.options import StreamOptions

__all__ = ["report_file", "report_streams"]

_BINARY_FILE = "path string, modificationTime timestamp, length long, content binary"
_REPORT_ROWS = "array<struct<table:string, line:string, cluster:string, reason:string, raw:string>>"


def report_streams(spark: SparkSession, fs: HadoopFS, options: StreamOptions) -> list[DataFrame]:
    """``load_reports/<cluster>/*`` as the batch job reads it: each file, as it lands, turned
    by :func:`trimtab.pipeline.load_reports.report_rows` into node and bundle rows (JSON
    lines, read as ingest reads its staged files), checked like the tables' rows; each
    document the reader refuses is one row of table ``load_reports``, rule ``bad_report``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from trimtab.pipeline.load_reports import LOAD_REPORTS
    from trimtab.pipeline.schemas import INPUT_TABLES

    root = f"{options.input.rstrip('/')}/{LOAD_REPORTS}"
    base = fs.qualify(root)
    # A glob (matching the directory itself) is not required to exist when the query starts.
    glob = f"{root[:-1]}[{root[-1]}]"
    files = (
        spark.readStream.schema(_BINARY_FILE)
        .format("binaryFile")
        .option("recursiveFileLookup", True)
        .load(glob)
    )
    # a plain Python UDF (a trigger brings a few files; useArrow given: no type-hint guess)
    rows_of = F.udf(partial(report_file, base), _REPORT_ROWS, useArrow=False)
    reports = files.select(
        F.explode(rows_of(F.col("_metadata.file_path"), F.col("content"))).alias("_r"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.unix_micros(F.col("_metadata.file_modification_time")).alias("_landed_us"),
    )
    frames = []
    for name in STREAM_TABLES:
        table = INPUT_TABLES[name]
        names = [c.name for c in table.columns]
        schema = T.StructType([T.StructField(n, T.StringType()) for n in names])
        schema = schema.add(CORRUPT, T.StringType())
        options_ = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
        parsed = reports.where(F.col("_r.table") == name).select(
            F.from_json("_r.line", schema, options_).alias("_j"), "_source_file", "_landed_us"
        )
        frame = parsed.select(
            *(F.col(f"_j.{c}").alias(f"_in_{c}") for c in names),
            F.col(f"_j.{CORRUPT}").alias("_corrupt"),
            F.lit(None).cast(RULE_TYPE).alias("_file_rule"),
            "_source_file",
            "_landed_us",
        )
        frames.append(checked(frame, table, options))
    refused = reports.where(F.col("_r.reason").isNotNull())
    frames.append(
        refused.select(
            *wide_columns(
                _table=F.lit(LOAD_REPORTS),
                cluster=F.col("_r.cluster"),
                _rule=F.lit("bad_report"),
                _reason=F.col("_r.reason"),
                _raw=F.col("_r.raw"),
                _source_file=F.col("_source_file"),
                _landed_us=F.col("_landed_us"),
            )
        )
    )
    return frames


def report_file(base: str, path: str, content: bytes) -> list[tuple[str | None, ...]]:
    """One load report file's rows (see :func:`report_streams`); none for a file deeper than
    ``load_reports/<cluster>/``, which the batch job does not read either."""
    from urllib.parse import unquote, urlsplit

    from trimtab.pipeline.load_reports import report_rows

    root = unquote(urlsplit(base).path).rstrip("/") + "/"
    local = unquote(urlsplit(path).path)
    parts = local.removeprefix(root).split("/") if local.startswith(root) else []
    if not 1 <= len(parts) <= 2:
        return []
    cluster = parts[0] if len(parts) == 2 else ""  # a report directly under load_reports/
    got = report_rows(path, bytes(content), cluster)
    out: list[tuple[str | None, ...]] = [
        (table, line, cluster, None, None) for table, lines in got.lines.items() for line in lines
    ]
    out += [(None, None, cluster, reason, raw) for reason, raw in got.refused]
    return out
