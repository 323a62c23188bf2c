"""What the stream reads: the inventory on the driver, and the telemetry as file streams.

Why a module of its own
    The inventory is small and read on the driver with ingest's readers and row rules,
    then handed to the state function as plain values; its files' signature tells the
    driver when to re-read it. The telemetry is one file stream per (table, format), and one
    over ``load_reports/``, checked and unioned into one wide frame with a watermark on
    ``ts``: everything the query's stateful step consumes.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from trimtab.pipeline.inventory import Inventory, Node
from trimtab.pipeline.plans import inventory_rows
from trimtab.pipeline.stream.csv_files import csv_stream
from trimtab.pipeline.stream.options import StreamOptions, interval
from trimtab.pipeline.stream.report_files import report_streams
from trimtab.pipeline.stream.wide import CORRUPT, GLOBS, RULE_TYPE, STREAM_TABLES, checked

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from trimtab.pipeline.fs import HadoopFS
    from trimtab.pipeline.schemas import InputTable

__all__ = ["inventory_signature", "read_inventory", "telemetry_stream"]


def read_inventory(
    spark: SparkSession, fs: HadoopFS, input_dir: str, *, now: datetime
) -> Inventory:
    """The inventory's accepted rows, checked by ingest's readers and row rules; a key
    (cluster, node) given twice keeps one row if the copies are equal, none if they differ."""
    from pyspark.sql import functions as F

    from trimtab.pipeline.ingest.read import read_table
    from trimtab.pipeline.schemas import INPUT_TABLES

    frame = read_table(
        spark, fs, input_dir, INPUT_TABLES["nodes"], now=now, future_tolerance_s=300.0
    ).frame
    rows = inventory_rows(frame.where(F.col("_rule").isNull())).collect()
    seen: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        seen.setdefault((row["cluster"], row["node"]), []).append(tuple(row))
    clusters: dict[str, dict[str, Node]] = {}
    for (cluster, node), copies in sorted(seen.items()):
        if len(set(copies)) > 1:
            continue  # conflicting rows: both refused, as ingest does
        clusters.setdefault(cluster, {})[node] = Node.of(copies[0])
    return Inventory(clusters, inventory_signature(fs, input_dir))


def inventory_signature(fs: HadoopFS, input_dir: str) -> str:
    """Names, sizes and modification times of the inventory's files."""
    path = f"{input_dir.rstrip('/')}/nodes"
    if not fs.exists(path):
        return ""
    parts = [f"{name}:{size}:{modified}" for name, size, modified in fs.file_stamps(path)]
    return "|".join(sorted(parts))


def telemetry_stream(spark: SparkSession, fs: HadoopFS, options: StreamOptions) -> DataFrame:
    """Every telemetry file and load report landing under the input, checked row by row, as
    one wide frame with a watermark on ``ts``."""

    from trimtab.pipeline.schemas import INPUT_TABLES

    frames = []
    for name in STREAM_TABLES:
        table = INPUT_TABLES[name]
        path = f"{options.input.rstrip('/')}/{name}"
        parquet = _file_stream(spark, path, "parquet", table)
        frames.append(checked(parquet, table, options, parquet=True))
        frames.append(checked(_file_stream(spark, path, "json", table), table, options))
        frames.append(checked(csv_stream(spark, path, table), table, options))
    frames += report_streams(spark, fs, options)
    wide = frames[0]
    for other in frames[1:]:
        wide = wide.unionByName(other)
    return wide.withWatermark("ts", interval(options.watermark))


def _file_stream(spark: SparkSession, path: str, fmt: str, table: InputTable) -> DataFrame:
    """One table's Parquet or JSON-lines files: their columns as ``_in_<name>``, matched by
    name (Parquet with the contract's types, JSON as text, as ingest reads them)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from trimtab.pipeline.schemas import SPARK_TYPES

    names = [c.name for c in table.columns]
    if fmt == "parquet":
        schema = T.StructType([T.StructField(c.name, SPARK_TYPES[c.type]) for c in table.columns])
    else:
        schema = T.StructType([T.StructField(n, T.StringType()) for n in names])
        schema = schema.add(CORRUPT, T.StringType())
    reader = spark.readStream.schema(schema).option("pathGlobFilter", GLOBS[fmt])
    if fmt == "json":
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
    frame = reader.format(fmt).load(path)
    return frame.select(
        *(F.col(c).alias(f"_in_{c}") for c in names),
        (F.col(CORRUPT) if fmt != "parquet" else F.lit(None).cast("string")).alias("_corrupt"),
        F.lit(None).cast(RULE_TYPE).alias("_file_rule"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.unix_micros(F.col("_metadata.file_modification_time")).alias("_landed_us"),
    )
