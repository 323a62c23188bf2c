"""What the report reads from a run's output directory, as small pandas frames.

The outputs are small once trimmed the report's way: the latest window of ``node_load``, one
row per bookie, broker, cycle, transfer and replica, and at most :data:`QUARANTINE_ROWS`
quarantined rows (the counts per rule come whole from ``run.json``). :func:`read_output`
reads a local directory with pyarrow; the pipeline reads its staging directory with Spark
(:mod:`trimtab.pipeline.report`) through the same :data:`TABLES` list, so both give the same
:class:`ReportData`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from trimtab.errors import TrimtabError

__all__ = ["QUARANTINE_ROWS", "TABLES", "ReportData", "read_output"]

#: At most this many quarantined rows are read (for samples and per-cluster attribution).
QUARANTINE_ROWS = 5000

#: The tables the report reads and the columns it uses; a missing table reads as empty.
TABLES: dict[str, tuple[str, ...]] = {
    "inventory": (
        "cluster",
        "node",
        "region",
        "rack",
        "role",
        "state",
        "cores",
        "memory_bytes",
        "disk_total_bytes",
        "nic_bps",
    ),
    "node_load": ("cluster", "node", "window_start", "load", "latest"),
    "bookie_weights": (
        "cluster",
        "node",
        "disk_free_bytes",
        "disk_total_bytes",
        "weight",
        "probability",
    ),
    "plan_loads": ("cluster", "broker", "load_before", "load_after"),
    "plan_cycles": ("cluster", "cycle", "label", "reason", "std_before", "std_after", "transfers"),
    "transfers": ("cluster", "cycle", "bundle", "source", "destination", "throughput", "reason"),
    "allocations": ("cluster", "topic", "partition", "replica", "node", "core"),
    "quarantine": ("table", "source_file", "rule", "reason", "row"),
}


@dataclass(frozen=True, slots=True)
class ReportData:
    """``run.json`` and the report's tables; absent tables are empty frames with columns."""

    run: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def table(self, name: str) -> pd.DataFrame:
        frame = self.tables.get(name)
        if frame is None:
            return pd.DataFrame(columns=list(TABLES[name]))
        return frame


def read_output(path: Path) -> ReportData:
    """Read an output (or staging) directory written by ``trimtab pipeline run``."""
    run_file = path / "run.json"
    if not run_file.is_file():
        raise TrimtabError(f"{path} is not a pipeline output: it has no run.json")
    try:
        run = json.loads(run_file.read_text())
    except json.JSONDecodeError as exc:
        raise TrimtabError(f"{run_file} is not valid JSON: {exc}") from None
    tables: dict[str, pd.DataFrame] = {}
    for name, columns in TABLES.items():
        where = path / name
        if not where.exists():
            continue
        filters = [("latest", "=", True)] if name == "node_load" else None
        dataset = pq.ParquetDataset(str(where), filters=filters)
        present = [c for c in columns if c in dataset.schema.names]
        frame: pd.DataFrame = dataset.read(columns=present).to_pandas()
        if name == "quarantine":
            frame = frame.head(QUARANTINE_ROWS)
        tables[name] = frame.reindex(columns=list(columns))
    return ReportData(run=run, tables=tables)
