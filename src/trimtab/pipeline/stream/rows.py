"""The rows the stream's state function emits, and small helpers on its input rows.

Why a module of its own
    The state function returns one long table whose ``kind`` tells decisions, transfers,
    quarantined rows, node loads and per-cluster summaries apart (one schema, so Spark
    needs one ``applyInPandasWithState``); the checks, the decisions and the publication
    all write or read it, so its schema and row maker live below them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from trimtab.pipeline.loads import METRICS

__all__ = [
    "OUT_COLUMNS",
    "OUT_SCHEMA",
    "STATE_SCHEMA",
    "finite",
    "iso_time",
    "out_row",
    "records",
]

#: What the state function emits: one long table, ``kind`` telling the rows apart.
OUT_SCHEMA = (
    "kind string, cluster string, cycle long, at_us long, label string, reason string, "
    "broker string, bundle string, source string, destination string, throughput double, "
    "std double, std_after double, note string, table_name string, source_file string, "
    "rule string, row string, node string, window_us long, samples long, load double, "
    "msg_throughput_ema double, "
    + ", ".join(f"{m} double" for m in METRICS)
    + ", rows_in long, landed_us long"
)
OUT_COLUMNS = [c.split()[0] for c in OUT_SCHEMA.split(", ")]
STATE_SCHEMA = "blob string"


def iso_time(us: int) -> str:
    """A time as Spark's ``cast(ts as string)`` shows it in UTC (the batch job's reasons)."""
    text = datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return text.rstrip("0").rstrip(".")


def out_row(**values: Any) -> dict[str, Any]:
    """One output row: ``values``, every other column null."""
    row: dict[str, Any] = dict.fromkeys(OUT_COLUMNS)
    row.update(values)
    return row


def records(rows: pd.DataFrame, at: np.ndarray) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows ``at`` (positions) with their dicts of plain Python values (a tenth of
    ``to_dict``'s time)."""
    names = list(rows.columns)
    picked = rows.iloc[at]
    arrays = [picked[c].to_numpy(dtype=object) for c in names]
    for i, values in zip(at.tolist(), zip(*arrays, strict=True), strict=True):
        yield i, dict(zip(names, values, strict=True))


def finite(value: float) -> float | None:
    """``value``, or None for NaN (a std the shedder could not compute)."""
    return None if value is None or math.isnan(value) else float(value)
