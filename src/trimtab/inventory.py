"""Read a fleet inventory (the ``nodes`` table) into cluster snapshots, rejecting bad rows loudly.

Files are CSV, JSON-lines or Parquet, chosen by suffix; a directory is read file by file in
name order. Columns (DESIGN.md): ``cluster, node, region, rack, cores, memory_bytes,
disk_total_bytes, nic_bps, state`` and optionally ``disk_free_bytes`` and ``role`` (``bookie``,
``broker``, empty = both). Missing region or rack mean ``/default-region/default-rack``. The
columns and row rules are :data:`trimtab.contract.TABLES` ``["nodes"]``, which the pipeline
applies too.

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

from trimtab.cluster import Capacity, ClusterState, Node, NodeId, location_of
from trimtab.contract import TABLES, check_row
from trimtab.tables import RejectedRow, TableSpec, parse_table

__all__ = [
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "Inventory",
    "RejectedRow",
    "read_inventory",
]

_NODES = TABLES["nodes"]
REQUIRED_COLUMNS = _NODES.required
OPTIONAL_COLUMNS = _NODES.optional_columns
NODES = TableSpec.of(_NODES)


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
            rejected.append(RejectedRow(raw.source, raw.line, reason, raw.data or {}, "duplicate"))
            continue
        seen[node.id] = (node, f"{raw.source}:{raw.line}")
    clusters = {
        name: ClusterState.of(name, (n for n, _ in by_id.values()))
        for name, by_id in sorted(nodes.items())
    }
    rejected.sort(key=lambda r: (r.source, r.line))
    return Inventory(clusters, tuple(rejected), parsed.rows_read, tuple(parsed.warnings))


def _parse_row(raw: Mapping[str, Any]) -> tuple[str, Node]:
    row = check_row(_NODES, raw)
    capacity = Capacity(
        cores=row["cores"],
        memory_bytes=row["memory_bytes"],
        disk_total_bytes=row["disk_total_bytes"],
        nic_bps=row["nic_bps"],
        disk_free_bytes=row["disk_free_bytes"],
    )
    node = Node(
        id=row["node"],
        location=location_of(row["region"], row["rack"]),
        capacity=capacity,
        state=row["state"],
        role=row["role"],
    )
    return row["cluster"], node
