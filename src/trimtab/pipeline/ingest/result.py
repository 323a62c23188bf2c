"""A table after every rule (:class:`CheckedTable`), every table (:class:`Ingested`), and
the quarantine drawn from them.

Why a module of its own
    What the ingest hands the job: per table every row with its verdict and the small
    *flagged* set (refused rows and candidates with copies resolved). Accepted rows are the
    clean non-candidates plus the flagged rows that passed; the quarantine is the flagged
    rows that did not, as :data:`QUARANTINE_COLUMNS` with their source file.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from trimtab.pipeline.local import arrow_frame

__all__ = ["QUARANTINE_COLUMNS", "CheckedTable", "Ingested"]


QUARANTINE_COLUMNS = ("table", "source_file", "rule", "reason", "row")


_INTERNAL = ("_rule", "_reason", "_raw", "_source_file", "_pos", "_candidate")


@dataclass(frozen=True, slots=True)
class CheckedTable:
    """One table after every rule.

    ``rows``: every row read, with ``_rule`` null where no row-local or membership rule
    refused it and ``_candidate`` true where its key repeats. ``flagged``: the refused rows
    and the candidates, with exact copies refused as ``duplicate`` (small; the job stores
    it). ``latest``: per key without its time, the newest accepted sample (the telemetry
    tables, else None). ``rows_read``: how many rows the table's files hold.
    """

    name: str
    rows: DataFrame
    flagged: DataFrame
    rows_read: int
    latest: DataFrame | None = None
    # The rows as collected when the table was checked whole; ``rows`` are then the same
    # rows as a local relation, every verdict final (see the ingest, step 7).
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
        """Every table was checked whole and is kept as local rows (see the ingest, step 7)."""
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
