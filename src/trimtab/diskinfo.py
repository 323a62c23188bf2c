"""Disk info: each node's disk space as GET_BOOKIE_INFO reports it, and who consumes it.

One name per idea, shared by the engines and the systems that feed them:

* :class:`BookieInfo` — one node's total and free disk bytes (upstream ``BookieInfo``); its
  weight is the free bytes.
* :data:`InfoMap` — ``node -> BookieInfo``, what ``update_bookie_info`` takes.
* :class:`BookieInfoSink` — the consumer of membership and disk info: every placement policy,
  the ``trimtab watch`` feed, a test fake. The BookieInfo reader feeds one.
* :func:`disk_info` — a cluster's (or a table's) disk columns as disk info, with the one rule
  for a node whose free space is unknown (``trimtab place``, ``simulate diskfill`` and the
  pipeline's ``bookie_weights`` all read it here).

This is the model layer: no I/O, nothing an engine could not import.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import NamedTuple, Protocol, TypeAlias, runtime_checkable

from trimtab.cluster import ClusterState, NodeId

__all__ = ["BookieInfo", "BookieInfoSink", "DiskRow", "InfoMap", "disk_info"]


class BookieInfo(NamedTuple):
    """One node's disk space in bytes, as it answered GetBookieInfo.

    Its weight is the free bytes, as upstream's ``BookieInfo.getWeight()``: not normalised by
    capacity, so a node with twice the free space is chosen twice as often (before the policy's
    cap). A node that did not answer has *no* BookieInfo (see :func:`disk_info`). A plain
    ``(total, free)`` tuple is accepted wherever a ``BookieInfo`` is.

    >>> info = BookieInfo(total_disk_bytes=4_000, free_disk_bytes=1_000)
    >>> info.weight, info.used_fraction
    (1000, 0.75)
    """

    total_disk_bytes: int
    free_disk_bytes: int

    @property
    def weight(self) -> int:
        """Free bytes: upstream's weight, before the policy applies its cap."""
        return self.free_disk_bytes

    @property
    def used_fraction(self) -> float:
        """``1 - free/total``; 0.0 for a node that reports no capacity."""
        if self.total_disk_bytes <= 0:
            return 0.0
        return 1.0 - self.free_disk_bytes / self.total_disk_bytes

    @classmethod
    def checked(cls, total_disk_bytes: int, free_disk_bytes: int) -> BookieInfo:
        """Build one from an answer, refusing what no filesystem reports (``ValueError``)."""
        if total_disk_bytes < 0 or free_disk_bytes < 0:
            raise ValueError(
                f"negative disk space: total {total_disk_bytes}, free {free_disk_bytes}"
            )
        if free_disk_bytes > total_disk_bytes:
            raise ValueError(f"free space {free_disk_bytes} exceeds capacity {total_disk_bytes}")
        return cls(total_disk_bytes, free_disk_bytes)


#: ``node -> BookieInfo`` (or ``(total, free)``), keyed by node id or any id string.
InfoMap: TypeAlias = Mapping[NodeId, BookieInfo] | Mapping[str, BookieInfo | tuple[int, int]]


@runtime_checkable
class BookieInfoSink(Protocol):
    """The consumer of membership and disk info: a placement policy, a feed, or a test fake.

    BookKeeper's ``EnsemblePlacementPolicy`` as the BookieInfo reader sees it
    (``onClusterChanged`` and ``updateBookieInfo``). The reader calls both methods from its one
    worker thread, never at the same time, in this order for each membership change:
    ``on_cluster_changed`` first, then (after the scan it triggers) ``update_bookie_info``.
    """

    def on_cluster_changed(
        self, writable: Iterable[str], readonly: Iterable[str]
    ) -> AbstractSet[NodeId]:
        """Take the new membership; return the nodes that left and are not read-only
        (upstream returns the dead bookies)."""
        ...

    def update_bookie_info(self, info: InfoMap) -> None:
        """Take the disk space of every writable node that answered its latest request.

        Nodes absent from ``info`` have no known space and get the policy's smallest weight.
        """
        ...


#: ``(node, disk_total_bytes, disk_free_bytes)`` of a table row; None or NaN = unknown.
DiskRow: TypeAlias = tuple[str, float | None, float | None]


def disk_info(
    disks: ClusterState | Iterable[DiskRow], *, assume_unknown: bool = False
) -> dict[NodeId, BookieInfo]:
    """``node -> BookieInfo`` of a cluster's writable nodes (or of ``(node, total, free)`` rows).

    **The rule for an unknown free space** (no ``disk_free_bytes``): the node weighs as little
    as BookKeeper lets a node weigh. It has no BookieInfo, as a bookie that did not answer
    GET_BOOKIE_INFO, and BookKeeper gives such a bookie the smallest positive weight of the pool
    it is drawn from (counting 0 in the median the cap is built on). So it is still picked, at
    the smallest weight, never as an empty disk.

    Where a number is needed for every node (``assume_unknown=True``: ``simulate diskfill``,
    which must know the bytes on each disk), the node is given the smallest positive free space
    known among the others, at most its own capacity: the same smallest weight. When no node
    knows a positive free space there is nothing to compare with; every unknown disk then
    counts as empty (free = total), as BookKeeper picks uniformly among nodes without weight.

    A free space whose total is unknown takes the free space as its total (weights read the free
    space only). Nodes are in id order.
    """
    rows = _rows(disks)
    known = {n: BookieInfo(_int(t, f), _int(f)) for n, t, f in rows if _known(f)}
    if not assume_unknown:
        return known
    floor = min((i.free_disk_bytes for i in known.values() if i.free_disk_bytes > 0), default=None)
    info: dict[NodeId, BookieInfo] = {}
    for node, total, _ in rows:
        if node in known:
            info[node] = known[node]
            continue
        size = _int(total, 0)
        info[node] = BookieInfo(size, size if floor is None else min(floor, size))
    return info


def _rows(
    disks: ClusterState | Iterable[DiskRow],
) -> list[tuple[NodeId, float | None, float | None]]:
    if isinstance(disks, ClusterState):
        found = []
        for node_id in disks.writable:
            capacity = disks.node(node_id).capacity
            found.append((node_id, capacity.disk_total_bytes, capacity.disk_free_bytes))
        rows: Iterable[DiskRow] = found
    else:
        rows = disks
    return sorted(((NodeId(n), t, f) for n, t, f in rows), key=lambda row: row[0])


def _known(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def _int(value: float | None, fallback: float | None = None) -> int:
    chosen = value if _known(value) else fallback
    return int(chosen) if chosen is not None and _known(chosen) else 0
