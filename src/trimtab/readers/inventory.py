"""Read a fleet inventory (the ``nodes`` table) into cluster snapshots, rejecting bad rows loudly.

Files are CSV, JSON-lines or Parquet, chosen by suffix; a directory is read file by file in
name order. Columns (DESIGN.md): ``cluster, node, region, rack, cores, memory_bytes,
disk_total_bytes, nic_bps, state`` and optionally ``disk_free_bytes`` and ``role`` (``bookie``,
``broker``, empty = both). Missing region or rack mean ``/default-region/default-rack``. The
columns and row rules are :data:`trimtab.contract.TABLES` ``["nodes"]``, which the pipeline
applies too.

Rows for the same node of a cluster are settled by :mod:`trimtab.contract.repeats`: exact
copies keep the first (the others are ``duplicate``), rows that differ are all refused as
``conflict``. A row that breaks a rule is never dropped silently: it comes back in
``Inventory.rejected`` with its file, line and a reason, and
``rows_read == accepted + len(rejected)`` always holds. A file that cannot be used at all
(missing, no required column, no rows) raises :class:`~trimtab.errors.InputError` naming the
file and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trimtab.cluster import Capacity, ClusterState, Node, location_of
from trimtab.contract import TABLES, RejectedRow, check_row
from trimtab.readers.table_files import RawRow, TableSpec, parse_table, refuse_repeats

__all__ = [
    "NIC_SPEEDS_BPS",
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
    parsed = refuse_repeats(
        parse_table(path, NODES, _parse_row),
        lambda row: (row[0], row[1].id),
        lambda key: f"node {key[1]} of cluster {key[0]!r}",
    )
    nodes: dict[str, list[Node]] = {}
    for cluster, node in (row for row, _ in parsed.accepted):
        nodes.setdefault(cluster, []).append(node)
    clusters = {name: ClusterState.of(name, members) for name, members in sorted(nodes.items())}
    warnings = [*parsed.warnings, *_nic_in_bytes(parsed.accepted)]
    return Inventory(clusters, tuple(parsed.rejected), parsed.rows_read, tuple(warnings))


#: The speeds NICs are sold at, in bits per second (1 Gb/s to 800 Gb/s).
NIC_SPEEDS_BPS = frozenset(
    round(g * 10**9) for g in (1, 2.5, 5, 10, 25, 40, 50, 100, 200, 400, 800)
)


def _nic_in_bytes(rows: list[tuple[tuple[str, Node], RawRow]]) -> list[str]:
    """One warning per value of ``nic_bps`` that is no NIC's speed while eight times it is
    (1250000000 for 10 Gb/s): most likely bytes per second. A warning, not a refusal: a
    NIC limited to 1.25 Gb/s is possible."""
    seen: dict[int, list[str]] = {}
    for (_, node), raw in rows:
        bps = node.capacity.nic_bps
        if bps not in NIC_SPEEDS_BPS and bps * 8 in NIC_SPEEDS_BPS:
            seen.setdefault(bps, []).append(f"{raw.source}:{raw.line}")
    return [
        f"nic_bps {bps} ({len(where)} row(s), e.g. {where[0]}) is {bps / 1e9:g} Gb/s, no NIC's "
        f"speed: if it is {bps * 8 / 1e9:g} Gb/s written in bytes per second, write {bps * 8}"
        for bps, where in sorted(seen.items())
    ]


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
