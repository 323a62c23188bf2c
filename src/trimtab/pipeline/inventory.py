"""The accepted inventory as plain values: per cluster, each node's limits, role and state.

Why a module of its own
    The batch job (``pipeline run --replay``), the live stream and the replay all decide with
    the same small view of the inventory, read on the driver and handed to per-cluster code
    as plain values. It lives here, below all three, so that the batch job never imports the
    stream to get it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trimtab.cluster import NodeState
from trimtab.shedding import Limits

__all__ = ["Inventory", "Node", "inventory_of"]


@dataclass(frozen=True, slots=True)
class Node:
    """One accepted node: its limits, whether it is a broker, whether it takes writes."""

    limits: Limits
    broker: bool
    writable: bool

    @classmethod
    def of(cls, row: Sequence[Any]) -> Node:
        """A row of :func:`~trimtab.pipeline.plans.inventory_rows` (cluster, node, limits,
        state, broker)."""
        return cls(
            limits=Limits(cores=float(row[2]), memory_bytes=float(row[3]), nic_bps=float(row[4])),
            writable=NodeState.parse(str(row[5])) is NodeState.WRITABLE,
            broker=bool(row[6]),
        )


@dataclass(frozen=True, slots=True)
class Inventory:
    """The accepted inventory per cluster; ``signature`` tells when its files changed."""

    clusters: Mapping[str, Mapping[str, Node]]
    signature: str = ""


def inventory_of(rows: Iterable[Sequence[Any]]) -> Inventory:
    """The inventory of accepted rows of :func:`~trimtab.pipeline.plans.inventory_rows`
    (each key once: the ingest refused every repeat)."""
    by_cluster: dict[str, dict[str, Node]] = {}
    for row in rows:
        by_cluster.setdefault(str(row[0]), {})[str(row[1])] = Node.of(row)
    return Inventory(by_cluster)
