"""The pipeline's view of the input tables: :mod:`trimtab.contract` plus Spark's types.

The tables (columns, types, keys, required or optional) and their row rules are stated once,
in :mod:`trimtab.contract`, for the plain-Python readers and the pipeline alike; this module
adds what only Spark needs: the column types as Spark types, and the role rule as a column.
"""

from __future__ import annotations

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F
from pyspark.sql import types as T

from trimtab.cluster import Role
from trimtab.contract import TABLES, Column, Table

__all__ = ["INPUT_TABLES", "SPARK_TYPES", "Column", "InputTable", "serves"]

InputTable = Table
INPUT_TABLES = TABLES
SPARK_TYPES: dict[str, T.DataType] = {
    "string": T.StringType(),
    "double": T.DoubleType(),
    "long": T.LongType(),
    "timestamp": T.TimestampType(),
}


def serves(role: Role, column: str = "role") -> SparkColumn:
    """True for inventory rows whose node serves ``role`` (:meth:`Role.serves`: an empty role
    serves both), as :meth:`trimtab.cluster.ClusterState.for_role` picks nodes."""
    value = F.lower(F.trim(F.coalesce(F.col(column), F.lit(""))))
    return value.isin(*(r.value for r in Role if r.serves(role)))
