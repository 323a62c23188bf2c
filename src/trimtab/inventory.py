"""Read a fleet inventory (the ``nodes`` table) into cluster snapshots, rejecting bad rows loudly.

Files are CSV, JSON-lines or Parquet, chosen by suffix; a directory is read file by file in
name order. Columns (DESIGN.md): ``cluster, node, region, rack, cores, memory_bytes,
disk_total_bytes, nic_bps, state`` and optionally ``disk_free_bytes``. Missing region or rack
mean ``/default-region/default-rack``.

A row that breaks a rule is never dropped silently: it comes back in ``Inventory.rejected``
with its file, line and a reason, and ``rows_read == accepted + len(rejected)`` always holds.
A file that cannot be used at all (missing, no required column, no rows) raises
:class:`~trimtab.errors.InputError` naming the file and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trimtab.cluster import Capacity, ClusterState, Node, NodeId, NodeState, location_of
from trimtab.tables import RejectedRow, TableSpec, parse_table

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
OPTIONAL_COLUMNS = ("region", "rack", "disk_free_bytes", "role")
NODES = TableSpec("inventory", REQUIRED_COLUMNS, OPTIONAL_COLUMNS)


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
    parsed = parse_table(path, NODES, _parse_row)
    rejected = list(parsed.rejected)
    nodes: dict[str, dict[NodeId, tuple[Node, str]]] = {}
    for (cluster, node), raw in parsed.accepted:
        seen = nodes.setdefault(cluster, {})
        if node.id in seen:
            first = seen[node.id][1]
            reason = f"duplicate node {node.id} in cluster {cluster!r} (first at {first})"
            rejected.append(RejectedRow(raw.source, raw.line, reason, raw.data or {}))
            continue
        seen[node.id] = (node, f"{raw.source}:{raw.line}")
    clusters = {
        name: ClusterState.of(name, (n for n, _ in by_id.values()))
        for name, by_id in sorted(nodes.items())
    }
    rejected.sort(key=lambda r: (r.source, r.line))
    return Inventory(clusters, tuple(rejected), parsed.rows_read, tuple(parsed.warnings))


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
