"""Where each node sits, asked at each join and remembered: the policies' one door to the
resolver.

Goals
    * Ask the DNS-to-switch resolver about a node every time it joins (:meth:`Locator.refresh`),
      not on every placement; a node never seen (replacing one) is asked about on first sight.
    * Remember every answer, so a node that has left can still be located (replacing a dead
      bookie prefers its old rack; upstream lost it and used the default rack, #2642).
    * Never let a failed lookup break the topology: a node the resolver cannot place gets the
      default rack *at the depth of the other answers* (upstream #2490, #4439), and a failed
      lookup is never remembered as an answer: the next lookup asks the resolver again.

Sources
    A :class:`~trimtab.topology.Resolver` (script, table, default, a plug-in), or a plain mapping
    from node id (or host) to location, as an inventory gives. ``None`` puts every node on the
    default rack, which is upstream's fallback when no resolver is configured.
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterable, Mapping

from trimtab.cluster import NodeId, validate_location
from trimtab.placement.services import FAILED_TO_RESOLVE_NETWORK_LOCATION, NullStats, Stats
from trimtab.topology import Resolver, default_rack_for_depth, resolve_locations

__all__ = ["LocationSource", "Locator", "local_host"]

LocationSource = Resolver | Mapping[str, str] | None


class Locator:
    """Node -> location, resolved on first sight and remembered afterwards.

    >>> loc = Locator({"bk1:3181": "/dc1/r1"}, default_rack="/default-rack")
    >>> loc.locate(["bk1:3181", "bk2:3181"])
    {'bk1:3181': '/dc1/r1', 'bk2:3181': '/default-region/default-rack'}
    """

    __slots__ = ("_depths", "_failed", "_known", "_source", "_stats", "default_rack")

    def __init__(
        self, source: LocationSource, *, default_rack: str, stats: Stats | None = None
    ) -> None:
        self._source = source
        self.default_rack = validate_location(default_rack)
        self._stats: Stats = stats if stats is not None else NullStats()
        self._known: dict[NodeId, str] = {}
        self._failed: set[NodeId] = set()  # last lookup failed: default rack, asked again next
        self._depths: Counter[int] = Counter()  # depths of real (non-default) answers

    def __repr__(self) -> str:
        return f"Locator({self._source!r}, {len(self._known)} known)"

    def locate(self, nodes: Iterable[str]) -> dict[NodeId, str]:
        """Each node's location, in id order; unknown nodes are resolved in one batch."""
        wanted = sorted({NodeId(n) for n in nodes})
        fresh = [n for n in wanted if n not in self._known]
        failed: set[NodeId] = set()
        if fresh:
            for node, location in self._resolve(fresh).items():
                if location == self.default_rack:
                    self._stats.incr(FAILED_TO_RESOLVE_NETWORK_LOCATION)
                    failed.add(node)
                else:
                    self._depths[location.count("/")] += 1
                    self._known[node] = location
            self._failed |= failed
            self._failed -= self._known.keys()
        fallback = self.fallback()
        return {
            n: fallback if n in failed else self._lift(self._known[n], fallback) for n in wanted
        }

    def refresh(self, nodes: Iterable[str]) -> dict[NodeId, str]:
        """Resolve ``nodes`` again, whatever was remembered (a node is located anew every time
        it joins, as upstream; a rack change made while it was away applies on its return)."""
        wanted = list(nodes)
        self.forget(wanted)
        return self.locate(wanted)

    def where(self, host: str) -> str | None:
        """Where ``host`` sits by the source, asked now and not remembered (the client's own
        host is no node); None when the source cannot place it."""
        found = self._resolve([NodeId(host)])[NodeId(host)]
        return None if found == self.default_rack else found

    def remembered(self, node: str) -> str | None:
        """Where ``node`` was last seen, even if it has left; None if never located."""
        location = self._known.get(NodeId(node))
        if location is None:
            return self.fallback() if NodeId(node) in self._failed else None
        return self._lift(location, self.fallback())

    def forget(self, nodes: Iterable[str]) -> None:
        """Drop remembered answers (a rack change), so the next lookup asks the source again."""
        for node in nodes:
            self._failed.discard(NodeId(node))
            location = self._known.pop(NodeId(node), None)
            if location is not None and location != self.default_rack:
                self._depths[location.count("/")] -= 1

    def fallback(self) -> str:
        """The default rack, lifted to the depth most real answers have."""
        depths = +self._depths
        if not depths:
            return self.default_rack
        depth = depths.most_common(1)[0][0]
        if depth == self.default_rack.count("/"):
            return self.default_rack
        return default_rack_for_depth(depth)

    def _lift(self, location: str, fallback: str) -> str:
        return fallback if location == self.default_rack else location

    def _resolve(self, nodes: list[NodeId]) -> dict[NodeId, str]:
        source = self._source
        if source is None:
            return dict.fromkeys(nodes, self.default_rack)
        if isinstance(source, Mapping):
            out: dict[NodeId, str] = {}
            for node in nodes:
                found = source.get(node, source.get(node.host))
                out[node] = self._checked(found)
            return out
        return resolve_locations(source, nodes, default_rack=self.default_rack)

    def _checked(self, location: str | None) -> str:
        if location is None:
            return self.default_rack
        try:
            return validate_location(location)
        except ValueError:
            return self.default_rack


def local_host(*, use_hostname: bool) -> str:
    """The client's own name for the resolver, as upstream takes it: its canonical host name
    with ``useHostnameResolveLocalNodePlacementPolicy``, else its address (the host name when
    the address cannot be found)."""
    name = socket.gethostname()
    try:
        return socket.getfqdn(name) if use_hostname else socket.gethostbyname(name)
    except OSError:
        return name
