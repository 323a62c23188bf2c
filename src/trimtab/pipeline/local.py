"""Rows the driver holds, handed back to Spark as a local relation.

PySpark's ``createDataFrame`` of Python rows parallelizes them as an RDD, so every later
question about them (a filter, a projection, a small write) is a Spark job of its own. A
frame made from an Arrow table is a local relation instead, which Spark's optimizer answers
on the driver: the job keeps its small results this way.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

__all__ = ["arrow_frame", "instant", "local_frame"]


def instant(value: Any) -> Any:
    """A time as an aware UTC instant. PySpark's ``collect`` gives naive local times (and its
    ``createDataFrame`` reads them back as local times); Arrow would take them as UTC."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.astimezone(UTC)
    return value


def local_frame(
    spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType
) -> DataFrame:
    """``rows`` (tuples or collected Rows, in ``schema``'s column order) as a local relation."""
    arrow = to_arrow_schema(schema, timezone="UTC")
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [() for _ in arrow]
    arrays = []
    for field, values in zip(arrow, columns, strict=True):
        if pa.types.is_timestamp(field.type):
            values = [instant(v) for v in values]
        arrays.append(pa.array(values, type=field.type))
    return arrow_frame(spark, pa.Table.from_arrays(arrays, schema=arrow), schema)


def arrow_frame(spark: SparkSession, table: pa.Table, schema: T.StructType) -> DataFrame:
    """An Arrow table as a local relation, its chunks first made one. PySpark 4.3 sends each
    chunk as a record batch, and Spark takes an empty batch after the first for the end of
    the data: the rows of every later chunk were silently lost (``concat_tables`` of a
    table with no refused rows and one with some left exactly that)."""
    return spark.createDataFrame(table.combine_chunks(), schema)
