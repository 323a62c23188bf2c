"""Rows the driver holds, handed back to Spark (trimtab.pipeline.local)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from trimtab.pipeline.local import arrow_frame

SCHEMA = T.StructType([T.StructField("a", T.LongType())])


@pytest.mark.parametrize("chunks", ["tet", "eet", "etet", "teet", "e"])
def test_arrow_frame_keeps_every_chunk_around_empty_ones(spark: SparkSession, chunks: str) -> None:
    """An Arrow table whose chunks include empty ones (``t``: two rows, ``e``: none) gives
    every row: Spark 4.3 takes an empty record batch after the first for the end of the
    data, so without merging the chunks the rows after it were lost."""
    parts = [
        pa.table({"a": pa.array(range(10 * i, 10 * i + (0 if c == "e" else 2)), pa.int64())})
        for i, c in enumerate(chunks)
    ]
    table = pa.concat_tables(parts)
    assert table.column("a").num_chunks == len(chunks)
    got = sorted(row["a"] for row in arrow_frame(spark, table, SCHEMA).collect())
    assert got == sorted(table.column("a").to_pylist())
