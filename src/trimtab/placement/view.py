"""Membership and topology as one policy sees them, with candidate pools rebuilt per change.

Goals
    * Turn ``on_cluster_changed(writable, readonly)`` into a plain :class:`NetworkTopology` of
      the writable nodes (what placement uses) and, when ``stabilize_period_seconds > 0``, a
      :class:`StabilizedTopology` whose removals wait out the period (what the last-resort
      attempt uses, as upstream's second policy instance does).
    * Precompute the candidate pools (:class:`CandidateIndex`) once per change, not per pick.

Constraints
    * Read-only nodes are never candidates, not even in the stabilized last resort: they refuse
      writes. A node that left is a candidate only there, and only until its period ends.
    * A node whose location does not fit the tree (wrong depth) is logged, counted and left out
      rather than failing the whole membership update (upstream does the same).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import cast

from trimtab.cluster import NodeId
from trimtab.errors import InvalidTopologyError
from trimtab.placement.locations import Locator
from trimtab.placement.selection import CandidateIndex, Weights
from trimtab.placement.services import (
    BOOKIES_JOINED,
    BOOKIES_LEFT,
    BOOKIES_REJECTED_BY_TOPOLOGY,
    NUM_WRITABLE_BOOKIES_IN_DEFAULT_RACK,
    Stats,
)
from trimtab.topology import NetworkTopology, StabilizedTopology

__all__ = ["ClusterView"]

LOG = logging.getLogger("trimtab.placement")


class ClusterView:
    """The writable/read-only sets, the topologies, and cached candidate indexes of one policy."""

    __slots__ = (
        "_indexes",
        "_stable_key",
        "locator",
        "readonly",
        "stable",
        "stats",
        "topology",
        "weights",
        "writable",
    )

    def __init__(
        self,
        *,
        locator: Locator,
        weights: Weights,
        stats: Stats,
        stabilize_period_seconds: float = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.locator = locator
        self.weights = weights
        self.stats = stats
        self.writable: frozenset[NodeId] = frozenset()
        self.readonly: frozenset[NodeId] = frozenset()
        self.topology = NetworkTopology()
        self.stable = (
            StabilizedTopology(period_seconds=stabilize_period_seconds, clock=clock)
            if stabilize_period_seconds > 0
            else None
        )
        self._indexes: dict[tuple[bool, bool], CandidateIndex] = {}
        self._stable_key: tuple[NodeId, ...] | None = None

    def __repr__(self) -> str:
        return f"ClusterView({len(self.writable)} writable, {len(self.readonly)} read-only)"

    # -- changes ---------------------------------------------------------------------------

    def update(self, writable: Iterable[str], readonly: Iterable[str]) -> frozenset[NodeId]:
        """Apply a membership change; return the nodes that left and are not read-only.

        A node listed as both writable and read-only is taken as read-only.
        """
        ro = frozenset(NodeId(n) for n in readonly)
        rw = frozenset(NodeId(n) for n in writable) - ro
        known = frozenset(self.topology.nodes())
        left = known - rw
        joined = rw - known
        for node in sorted(left):
            self.topology.remove(node)
            if self.stable is not None:
                self.stable.remove(node)
        self._add(joined, fresh=True)
        self.writable = frozenset(self.topology.nodes())
        self.readonly = ro
        if left:
            self.stats.incr(BOOKIES_LEFT, len(left))
        if joined:
            self.stats.incr(BOOKIES_JOINED, len(joined))
        self._changed()
        return frozenset(left - ro)

    def relocate(self, nodes: Iterable[str]) -> None:
        """Ask the resolver again about ``nodes`` (their rack changed) and move them."""
        named = [NodeId(n) for n in nodes]
        self.locator.forget(named)  # an away node is located anew when it returns
        self._add([n for n in named if n in self.writable])
        self.writable = frozenset(self.topology.nodes())
        self._changed()

    def set_weights(self, weights: Weights) -> None:
        """New weights (disk info changed): every pool's sampler is rebuilt on next use."""
        self.weights = weights
        self._changed()

    def _add(self, nodes: Iterable[NodeId], *, fresh: bool = False) -> None:
        located = self.locator.refresh(nodes) if fresh else self.locator.locate(nodes)
        for node, location in located.items():
            try:
                self.topology.add(node, location)
                if self.stable is not None:
                    self.stable.add(node, location)
            except InvalidTopologyError as exc:
                self.topology.remove(node)
                LOG.warning("node %s left out of placement: %s", node, exc)
                self.stats.incr(BOOKIES_REJECTED_BY_TOPOLOGY)

    def _changed(self) -> None:
        self._indexes.clear()
        self._stable_key = None
        self.stats.gauge(NUM_WRITABLE_BOOKIES_IN_DEFAULT_RACK, len(self.default_rack_nodes()))

    # -- reads -----------------------------------------------------------------------------

    def default_rack(self) -> str:
        """The default rack at the topology's depth (where unresolvable nodes went)."""
        return self.locator.fallback()

    def default_rack_nodes(self) -> tuple[NodeId, ...]:
        return self.topology.leaves(self.default_rack())

    def rack_of(self, node: str) -> str | None:
        """The rack of a writable node, or None (read-only, departed, unknown)."""
        return self.topology.rack_of(node)

    def rack_lookup(self) -> Callable[[str], str | None]:
        """:meth:`rack_of` as one dictionary lookup (the current index's map), for hot loops."""
        return cast(Callable[[str], str | None], self.index().rack_of.get)

    def remembered_rack(self, node: str) -> str | None:
        """The rack of any node ever located, departed ones included (#2642)."""
        return self.topology.rack_of(node) or self.locator.remembered(node)

    def home_rack(self, node: str) -> str:
        """The rack of ``node`` for replacing it: where it is or was, else (never seen) what
        the resolver says now, the default rack when it cannot say (upstream ``resolveNetwork
        Location`` in ``replaceBookie``)."""
        return self.remembered_rack(node) or self.locator.locate([node])[NodeId(node)]

    def index(self, *, stabilized: bool = False, skip_default_rack: bool = False) -> CandidateIndex:
        """Candidate pools of the writable nodes (or, ``stabilized``, of those plus the nodes
        whose removal is pending); ``skip_default_rack`` leaves the default rack out."""
        if stabilized and self.stable is not None:
            nodes = self.stable.nodes()
            if nodes != self._stable_key:
                self._indexes.pop((True, False), None)
                self._indexes.pop((True, True), None)
                self._stable_key = nodes
        else:
            stabilized = False
        key = (stabilized, skip_default_rack)
        found = self._indexes.get(key)
        if found is None:
            found = self._build(stabilized=stabilized, skip_default_rack=skip_default_rack)
            self._indexes[key] = found
        return found

    def _build(self, *, stabilized: bool, skip_default_rack: bool) -> CandidateIndex:
        tree = self.stable.topology if stabilized and self.stable is not None else self.topology
        skip: set[NodeId] = set(self.readonly)
        if skip_default_rack:
            skip.update(tree.leaves(self.default_rack()))
        locations = {n: loc for n in tree.nodes() if (loc := tree.location_of(n)) is not None}
        return CandidateIndex.build(locations, self.weights, skip=skip)
