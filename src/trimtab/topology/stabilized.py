"""A topology that waits before forgetting a node (upstream ``StabilizeNetworkTopology``).

A bookie whose ZooKeeper session flaps disappears and comes back within seconds. Removing it at
once and adding it back churns every decision that reads the tree, so with a positive
``period_seconds`` (upstream ``networkTopologyStabilizePeriodSeconds``) a removal only marks the
node pending; the node really leaves when the period ends without it being added again.

Upstream schedules a timer per removal. Here removals expire lazily: every read first applies
the removals whose deadline has passed, using the injected ``clock``, so there is no thread and
tests move a fake clock instead of sleeping. Upstream keeps this stabilised view for a second,
last-resort placement attempt, so a flapping node is avoided but still usable when nothing else
fits; that choice belongs to the placement policy, not to this class.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from trimtab.cluster import NodeId
from trimtab.topology.tree import NetworkTopology, _as_node_id

__all__ = ["StabilizedTopology"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _read(
    method: Callable[Concatenate[NetworkTopology, _P], _R],
) -> Callable[Concatenate[StabilizedTopology, _P], _R]:
    """Wrap a NetworkTopology read so that it first applies the removals that are due."""

    def read(self: StabilizedTopology, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        self._expire()
        return method(self._topology, *args, **kwargs)

    read.__name__ = method.__name__
    read.__qualname__ = f"StabilizedTopology.{method.__name__}"
    read.__doc__ = method.__doc__
    return read


class StabilizedTopology:
    """A :class:`NetworkTopology` whose removals take effect ``period_seconds`` later.

    >>> clock = iter([0.0, 5.0, 11.0]).__next__
    >>> t = StabilizedTopology(period_seconds=10, clock=clock)
    >>> t.add("bk1:3181", "/r1"); t.remove("bk1:3181")
    True
    >>> "bk1:3181" in t, "bk1:3181" in t
    (True, False)
    """

    __slots__ = ("_clock", "_pending", "_topology", "period_seconds")

    def __init__(
        self,
        topology: NetworkTopology | None = None,
        *,
        period_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._topology = topology if topology is not None else NetworkTopology()
        self.period_seconds = period_seconds
        self._clock = clock
        self._pending: dict[NodeId, float] = {}

    def __repr__(self) -> str:
        return (
            f"StabilizedTopology({self._topology!r}, period_seconds={self.period_seconds},"
            f" {len(self._pending)} pending)"
        )

    @property
    def topology(self) -> NetworkTopology:
        """The wrapped tree, pending nodes still in it (removals due are applied first)."""
        self._expire()
        return self._topology

    def add(self, node: NodeId | str, location: str) -> None:
        """Add or move ``node``; a node seen again before its deadline is no longer removed."""
        self._expire()  # removals already due must not hold the tree at their depth
        self._topology.add(node, location)
        self._pending.pop(NodeId(node), None)

    def remove(self, node: NodeId | str) -> bool:
        """Remove ``node`` now (period ≤ 0) or when the period ends; True if it was in the tree.

        Removing a node already pending keeps its first deadline: it has been gone since then.
        """
        self._expire()
        node_id = _as_node_id(node)
        if node_id is None or node_id not in self._topology:
            return False
        if self.period_seconds <= 0:
            return self._topology.remove(node_id)
        self._pending.setdefault(node_id, self._clock() + self.period_seconds)
        return True

    def pending(self) -> dict[NodeId, float]:
        """Nodes whose removal is pending, in id order, with the clock time it takes effect."""
        self._expire()
        return dict(sorted(self._pending.items()))

    def _expire(self) -> None:
        if not self._pending:
            return
        now = self._clock()
        for node, deadline in sorted(self._pending.items()):
            if deadline <= now:
                del self._pending[node]
                self._topology.remove(node)

    @property
    def depth(self) -> int | None:
        """How many components every location has; None when empty."""
        self._expire()
        return self._topology.depth

    __contains__ = _read(NetworkTopology.__contains__)
    __len__ = _read(NetworkTopology.__len__)
    nodes = _read(NetworkTopology.nodes)
    leaves = _read(NetworkTopology.leaves)
    racks = _read(NetworkTopology.racks)
    regions = _read(NetworkTopology.regions)
    children = _read(NetworkTopology.children)
    location_of = _read(NetworkTopology.location_of)
    rack_of = _read(NetworkTopology.rack_of)
    region_of = _read(NetworkTopology.region_of)
    count_racks = _read(NetworkTopology.count_racks)
