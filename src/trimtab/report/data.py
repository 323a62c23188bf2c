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
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trimtab.errors import TrimtabError
from trimtab.readers.special_files import refuse_special

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
    """Read an output (or staging) directory written by ``trimtab pipeline run``; a damaged
    one (``run.json`` not the job's, a table that is not Parquet) is a :class:`TrimtabError`."""
    run = _read_run(path / "run.json")
    tables: dict[str, pd.DataFrame] = {}
    for name, columns in TABLES.items():
        where = path / name
        if not where.exists():
            continue
        for entry in [where, *where.rglob("*")] if where.is_dir() else [where]:
            refuse_special(f"table {name}", entry)  # pyarrow would wait on a FIFO for ever
        try:
            dataset = pq.ParquetDataset(str(where))
            if not dataset.files:
                continue  # a table without rows, written as a directory without files
            present = [c for c in columns if c in dataset.schema.names]
            table = dataset.read(columns=present)
            if name == "node_load":  # each node's latest window
                table = table.filter(pc.field("latest"))
            frame: pd.DataFrame = table.to_pandas()
        except (pa.ArrowException, OSError) as exc:
            raise TrimtabError(f"{where} is not a readable Parquet table: {exc}") from None
        if name == "quarantine":
            frame = frame.head(QUARANTINE_ROWS)
        tables[name] = frame.reindex(columns=list(columns))
    return ReportData(run=run, tables=tables)


#: The numbers of ``run.json`` the report draws: per table and rule counts, per cluster figures.
_CLUSTER_NUMBERS = ("nodes", "std_before", "std_after", "transfers", "target_std")


def _read_run(run_file: Path) -> dict[str, Any]:
    """``run.json``, checked for the shape the report draws from."""
    if not run_file.is_file():
        raise TrimtabError(f"{run_file.parent} is not a pipeline output: it has no run.json")
    try:
        run: Any = json.loads(run_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TrimtabError(f"{run_file} is not valid JSON: {exc}") from None
    if not _run_shaped(run):
        raise TrimtabError(
            f"{run_file} is not a pipeline run's summary: it needs objects 'tables', "
            "'quarantine_by_rule' and 'clusters' with numbers as `trimtab pipeline run` writes"
        )
    return dict(run)


def _run_shaped(run: Any) -> bool:
    """Whether ``run`` has the objects and numbers the report reads where it has them."""
    if not isinstance(run, dict):
        return False
    counts = [run.get("tables", {}), run.get("quarantine_by_rule", {})]
    clusters = run.get("clusters", {})
    if not all(
        isinstance(c, dict) and all(isinstance(v, dict) for v in c.values()) for c in counts
    ):
        return False
    if not all(_is_number(n) for c in counts for v in c.values() for n in v.values()):
        return False
    if not isinstance(clusters, dict) or not all(isinstance(i, dict) for i in clusters.values()):
        return False
    return all(
        info[key] is None or _is_number(info[key])
        for info in clusters.values()
        for key in _CLUSTER_NUMBERS
        if key in info
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
