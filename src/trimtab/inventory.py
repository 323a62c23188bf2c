"""Read a fleet inventory (the ``nodes`` table) into cluster snapshots, rejecting bad rows loudly.

Files are CSV, JSON-lines or Parquet, chosen by suffix; a directory is read file by file in
name order. Columns (DESIGN.md): ``cluster, node, region, rack, cores, memory_bytes,
disk_total_bytes, nic_bps, state`` and optionally ``disk_free_bytes``. Missing region or rack
mean ``/default-region/default-rack``.

A row that breaks a rule is never dropped silently: it comes back in ``Inventory.rejected``
with its file, line and a reason, and ``rows_read == accepted + len(rejected)`` always holds.
A file that cannot be used at all (missing, no required column, no rows) raises
:class:`~trimtab.errors.InventoryError` naming the file and the fix.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trimtab._settings import nearest
from trimtab.cluster import Capacity, ClusterState, Node, NodeId, NodeState, location_of
from trimtab.errors import InventoryError

__all__ = [
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "Inventory",
    "RejectedRow",
    "read_inventory",
]

REQUIRED_COLUMNS = (
    "cluster",
    "node",
    "cores",
    "memory_bytes",
    "disk_total_bytes",
    "nic_bps",
    "state",
)
OPTIONAL_COLUMNS = ("region", "rack", "disk_free_bytes")
_SUFFIXES = {".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json"}
_SUFFIXES |= {".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True, slots=True)
class RejectedRow:
    """An input row that was not accepted, whole, with where it came from and why."""

    source: str
    line: int
    reason: str
    row: Mapping[str, Any]

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Inventory:
    """Every cluster found, the rows refused, and warnings about the files themselves."""

    clusters: Mapping[str, ClusterState]
    rejected: tuple[RejectedRow, ...]
    rows_read: int
    warnings: tuple[str, ...] = ()

    @property
    def accepted(self) -> int:
        return sum(len(c) for c in self.clusters.values())


def read_inventory(path: str | Path) -> Inventory:
    """Read an inventory file or directory; see the module docstring for the rules."""
    files = _files(Path(path))
    nodes: dict[str, dict[NodeId, tuple[Node, str]]] = {}
    rejected: list[RejectedRow] = []
    warnings: list[str] = []
    rows_read = 0
    for file in files:
        rows, columns = _read_rows(file)
        _check_columns(file, columns, warnings)
        for line, raw in rows:
            rows_read += 1
            if isinstance(raw, str):  # a line that is not even a JSON object
                rejected.append(RejectedRow(str(file), line, "not a JSON object", {"_raw": raw}))
                continue
            try:
                cluster, node = _parse_row(raw)
            except ValueError as exc:
                rejected.append(RejectedRow(str(file), line, str(exc), raw))
                continue
            seen = nodes.setdefault(cluster, {})
            if node.id in seen:
                first = seen[node.id][1]
                reason = f"duplicate node {node.id} in cluster {cluster!r} (first at {first})"
                rejected.append(RejectedRow(str(file), line, reason, raw))
                continue
            seen[node.id] = (node, f"{file}:{line}")
    if rows_read == 0:
        raise InventoryError(
            f"inventory {path} has no rows: add one row per node with columns "
            + ", ".join(REQUIRED_COLUMNS)
        )
    clusters = {
        name: ClusterState.of(name, (n for n, _ in by_id.values()))
        for name, by_id in sorted(nodes.items())
    }
    return Inventory(clusters, tuple(rejected), rows_read, tuple(warnings))


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in _SUFFIXES)
        if not files:
            raise InventoryError(
                f"inventory directory {path} holds no .csv, .jsonl or .parquet files"
            )
        return files
    if not path.exists():
        raise InventoryError(f"inventory {path} does not exist: give a file or a directory")
    if path.suffix.lower() not in _SUFFIXES:
        raise InventoryError(
            f"inventory {path}: unknown format {path.suffix!r}; use .csv, .jsonl or .parquet"
        )
    return [path]


def _read_rows(file: Path) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    kind = _SUFFIXES[file.suffix.lower()]
    if kind == "csv":
        return _csv_rows(file)
    if kind == "json":
        return _json_rows(file)
    return _parquet_rows(file)


def _csv_rows(file: Path) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    # Inventories are small (one row per machine): read eagerly so no handle outlives a raise.
    rows: list[tuple[int, Any]] = []
    with file.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = [c.strip() for c in (reader.fieldnames or [])]
        start = 2  # line 1 is the header
        for record in reader:
            row: dict[str, Any] = {k.strip(): v for k, v in record.items() if k is not None}
            if None in record:
                row["_extra"] = record[None]
            rows.append((start, row))
            start = reader.line_num + 1
    return iter(rows), columns


def _json_rows(file: Path) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    lines = file.read_text(encoding="utf-8").splitlines()
    parsed: list[tuple[int, Any]] = []
    columns: set[str] = set()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            obj = text
        if isinstance(obj, dict):
            columns.update(obj)
        else:
            obj = text
        parsed.append((number, obj))
    # A JSON-lines file's "columns" are those any row has; rows lacking one are rejected per row.
    return iter(parsed), sorted(columns) if parsed else []


def _parquet_rows(file: Path) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise InventoryError(f"inventory {file} is not a readable Parquet file: {exc}") from None
    rows = table.to_pylist()
    return iter(enumerate(rows, start=1)), list(table.column_names)


def _check_columns(file: Path, columns: list[str], warnings: list[str]) -> None:
    if not columns:
        return  # an empty file: counted as zero rows
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise InventoryError(
            f"inventory {file} lacks required column(s) {', '.join(missing)}; "
            f"it has {', '.join(columns)}. Required: {', '.join(REQUIRED_COLUMNS)}"
        )
    known = list(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)
    for column in columns:
        if column not in known:
            hint = nearest(column, known)
            suffix = f" (did you mean '{hint}'?)" if hint else ""
            warnings.append(f"{file}: column '{column}' is not used{suffix}")


def _parse_row(raw: Mapping[str, Any]) -> tuple[str, Node]:
    if raw.get("_extra"):
        raise ValueError("more fields than the header has columns")
    cluster = _text(raw, "cluster", required=True)
    node_text = _text(raw, "node", required=True)
    assert cluster is not None and node_text is not None
    node_id = NodeId(node_text)
    total = _count(raw, "disk_total_bytes", required=True)
    free = _count(raw, "disk_free_bytes", required=False)
    if free is not None and total is not None and free > total:
        raise ValueError(f"disk_free_bytes {free} is above disk_total_bytes {total}")
    state_text = _text(raw, "state", required=True)
    assert state_text is not None
    capacity = Capacity(
        cores=_count(raw, "cores", required=True, positive=True) or 0,
        memory_bytes=_count(raw, "memory_bytes", required=True) or 0,
        disk_total_bytes=total or 0,
        nic_bps=_count(raw, "nic_bps", required=True, positive=True) or 0,
        disk_free_bytes=free,
    )
    node = Node(
        id=node_id,
        location=location_of(_text(raw, "region"), _text(raw, "rack")),
        capacity=capacity,
        state=NodeState.parse(state_text),
    )
    return cluster, node


def _text(raw: Mapping[str, Any], column: str, *, required: bool = False) -> str | None:
    value = raw.get(column)
    text = "" if value is None else str(value).strip()
    if not text:
        if required:
            raise ValueError(f"missing {column}")
        return None
    return text


def _count(
    raw: Mapping[str, Any], column: str, *, required: bool, positive: bool = False
) -> int | None:
    """A whole, non-negative number; ``8``, ``"8"`` and ``8.0`` are all 8."""
    value = raw.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ValueError(f"missing {column}")
        return None
    if isinstance(value, bool):
        raise ValueError(f"{column} must be a whole number, got {value!r}")
    number = _whole(value)
    if number is None:
        raise ValueError(f"{column} must be a whole number, got {value!r}")
    if number < 0 or (positive and number == 0):
        bound = "above 0" if positive else "0 or more"
        raise ValueError(f"{column} must be {bound}, got {value!r}")
    return number


def _whole(value: Any) -> int | None:
    """Exact for big integers (disk bytes exceed a float's 53 bits); ``None`` if not whole."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None
