"""The network topology tree: regions and racks as inner paths, nodes as leaves.

A node at location ``/dc1/r1`` hangs under the inner paths ``/``, ``/dc1`` and ``/dc1/r1``;
its own full path is ``/dc1/r1/<node id>``. This is BookKeeper's ``NetworkTopologyImpl`` reduced
to what placement asks of it:

* **Equal depth.** Every leaf sits at the same depth. A rack-aware policy counts racks, and a
  node at ``/default-rack`` next to nodes at ``/dc1/r1`` would be neither in a region nor
  comparable to the other racks, so upstream throws ``InvalidTopologyException`` and so do we.
  The usual cause is a default rack that does not match the resolver's depth (#2490, #4439).
* **Scopes.** ``leaves("/dc1")`` lists the nodes under an inner path; ``leaves("~/dc1/r1")``
  lists the nodes *not* under it, and ``"~/dc1/r1,/dc1/r2"`` excludes several paths, as the
  rack-aware policy accumulates racks to avoid.
* **Speed.** Placement asks for leaves once per pick, so sorted leaf tuples are cached per
  inner path and dropped only for the paths an ``add`` or ``remove`` touches.

The class is mutable and not thread-safe; whoever shares one holds a lock around it.
"""

from __future__ import annotations

from collections.abc import Iterable

from trimtab.cluster import DEFAULT_RACK, DEFAULT_REGION_RACK, NodeId, validate_location
from trimtab.errors import InvalidTopologyError

__all__ = ["NetworkTopology", "default_rack_for_depth"]

# The inner path of the whole tree.
_ROOT = "/"

# Exclusion answers are cached per scope string; placement builds many distinct strings between
# two topology changes, so the cache is bounded rather than left to grow.
_EXCLUSION_CACHE_LIMIT = 1024


def default_rack_for_depth(depth: int) -> str:
    """The default rack a resolver should use so that unresolved nodes fit a tree of ``depth``.

    >>> default_rack_for_depth(1), default_rack_for_depth(2)
    ('/default-rack', '/default-region/default-rack')
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    if depth == 1:
        return DEFAULT_RACK
    if depth == 2:
        return DEFAULT_REGION_RACK
    return "/default-region" + "/default" * (depth - 2) + "/default-rack"


def _as_node_id(node: NodeId | str) -> NodeId | None:
    """``node`` as a NodeId, or None when it cannot be one (so it is simply not in the tree)."""
    if isinstance(node, NodeId):
        return node
    try:
        return NodeId(node)
    except ValueError:
        return None


def _prefixes(location: str) -> list[str]:
    """``'/a/b'`` -> ``['/', '/a', '/a/b']``: every inner path a leaf at ``location`` is under."""
    out = [_ROOT]
    end = location.find("/", 1)
    while end != -1:
        out.append(location[:end])
        end = location.find("/", end + 1)
    out.append(location)
    return out


def _normalise_scope(scope: str) -> str:
    text = scope.strip()
    if text in ("", _ROOT):
        return _ROOT
    return text.rstrip("/") or _ROOT


class NetworkTopology:
    """A tree of inner paths (regions, racks) whose leaves are node ids, all at one depth.

    >>> t = NetworkTopology()
    >>> t.add("bk1:3181", "/dc1/r1"); t.add("bk2:3181", "/dc1/r2"); t.add("bk3:3181", "/dc2/r1")
    >>> t.leaves("/dc1"), t.leaves("~/dc1/r1")
    (('bk1:3181', 'bk2:3181'), ('bk2:3181', 'bk3:3181'))
    """

    __slots__ = ("_depth", "_excluded", "_leaves", "_location", "_members")

    def __init__(self, nodes: Iterable[tuple[NodeId | str, str]] = ()) -> None:
        self._location: dict[NodeId, str] = {}
        # Every inner path that has at least one leaf below it -> the nodes below it.
        self._members: dict[str, set[NodeId]] = {}
        self._depth: int | None = None
        # Sorted answers, per inner path (invalidated by path) and per exclusion scope (cleared).
        self._leaves: dict[str, tuple[NodeId, ...]] = {}
        self._excluded: dict[str, tuple[NodeId, ...]] = {}
        for node, location in nodes:
            self.add(node, location)

    # -- changes ---------------------------------------------------------------------------

    def add(self, node: NodeId | str, location: str) -> None:
        """Put ``node`` at ``location``; a node already in the tree moves there.

        Raises :class:`InvalidTopologyError` for a bad node id, a bad location, or a location
        whose depth differs from the leaves already in the tree.
        """
        try:
            node_id = NodeId(node)
        except ValueError as exc:
            raise InvalidTopologyError(f"cannot add node {node!r}: {exc}") from None
        try:
            where = validate_location(location)
        except ValueError as exc:
            raise InvalidTopologyError(
                f"cannot add node {node_id} at {location!r}: {exc}"
            ) from None
        previous = self._location.get(node_id)
        if previous == where:
            return
        depth = where.count("/")
        alone = previous is not None and len(self._location) == 1
        if self._depth is not None and depth != self._depth and not alone:
            raise InvalidTopologyError(self._depth_message(node_id, where, depth))
        if previous is not None:
            self._detach(node_id, previous)
        self._location[node_id] = where
        self._depth = depth
        for path in _prefixes(where):
            self._members.setdefault(path, set()).add(node_id)
            self._leaves.pop(path, None)
        self._excluded.clear()

    def remove(self, node: NodeId | str) -> bool:
        """Take ``node`` out of the tree; True if it was there. Emptied inner paths vanish."""
        node_id = _as_node_id(node)
        if node_id is None or node_id not in self._location:
            return False
        self._detach(node_id, self._location.pop(node_id))
        if not self._location:
            self._depth = None  # an empty tree accepts any depth again
        return True

    def _detach(self, node_id: NodeId, location: str) -> None:
        for path in _prefixes(location):
            members = self._members[path]
            members.discard(node_id)
            if not members:
                del self._members[path]
            self._leaves.pop(path, None)
        self._excluded.clear()

    def _depth_message(self, node: NodeId, location: str, depth: int) -> str:
        assert self._depth is not None
        example = next(loc for n, loc in sorted(self._location.items()) if n != node)
        return (
            f"cannot add node {node} at {location!r} (depth {depth}): the topology's leaves are"
            f" at depth {self._depth} (e.g. {example!r}), and every node must sit at the same"
            f" depth. If {location!r} is a default rack, make it match the resolver's depth:"
            f" {default_rack_for_depth(self._depth)!r} for a {self._depth}-level topology"
            f" ('{DEFAULT_RACK}' for one level, '{DEFAULT_REGION_RACK}' for two)."
        )

    # -- lookups ---------------------------------------------------------------------------

    def __contains__(self, node: object) -> bool:
        if not isinstance(node, str):
            return False
        node_id = _as_node_id(node)
        return node_id is not None and node_id in self._location

    def __len__(self) -> int:
        return len(self._location)

    def __repr__(self) -> str:
        return f"NetworkTopology({len(self)} nodes, {len(self.racks())} racks, depth {self.depth})"

    @property
    def depth(self) -> int | None:
        """How many components every location has (2 for ``/region/rack``); None when empty."""
        return self._depth

    def nodes(self) -> tuple[NodeId, ...]:
        """Every node, sorted."""
        return self.leaves(_ROOT)

    def location_of(self, node: NodeId | str) -> str | None:
        """The node's location (``/dc1/r1``), or None if it is not in the tree."""
        node_id = _as_node_id(node)
        return None if node_id is None else self._location.get(node_id)

    def rack_of(self, node: NodeId | str) -> str | None:
        """The full location path: rack-aware placement counts ``/dc1/r1`` and ``/dc2/r1`` apart."""
        return self.location_of(node)

    def region_of(self, node: NodeId | str) -> str | None:
        """The location's first component (``'dc1'`` for ``/dc1/r1``), as region-aware counts."""
        location = self.location_of(node)
        return None if location is None else location[1:].split("/", 1)[0]

    def leaves(self, scope: str = "/") -> tuple[NodeId, ...]:
        """The nodes under ``scope``, sorted; ``~scope[,scope…]`` gives the nodes under none.

        ``scope`` is an inner path (``/``, ``/dc1``, ``/dc1/r1``) or a node's full path
        (``/dc1/r1/bk1:3181``). An unknown scope has no leaves, so ``~unknown`` has them all.
        """
        cached = self._leaves.get(scope)
        if cached is not None:
            return cached
        if scope.startswith("~"):
            return self._leaves_outside(scope)
        path = _normalise_scope(scope)
        members = self._members.get(path)
        if members is None:
            return self._leaf_by_full_path(path)
        answer = tuple(sorted(members))
        self._leaves[path] = answer
        return answer

    def _leaf_by_full_path(self, path: str) -> tuple[NodeId, ...]:
        parent, _, name = path.rpartition("/")
        node_id = _as_node_id(name)
        if node_id is not None and parent and self._location.get(node_id) == parent:
            return (node_id,)
        return ()

    def _leaves_outside(self, scope: str) -> tuple[NodeId, ...]:
        cached = self._excluded.get(scope)
        if cached is not None:
            return cached
        excluded: set[NodeId] = set()
        for part in scope[1:].split(","):
            part = part.strip().removeprefix("~")
            if part:
                excluded.update(self.leaves(part))
        everything = self.leaves(_ROOT)
        answer = tuple(n for n in everything if n not in excluded) if excluded else everything
        if len(self._excluded) >= _EXCLUSION_CACHE_LIMIT:
            self._excluded.clear()
        self._excluded[scope] = answer
        return answer

    def racks(self) -> tuple[str, ...]:
        """The distinct rack paths (full locations), sorted."""
        depth = self._depth
        return tuple(sorted(p for p in self._members if p != _ROOT and p.count("/") == depth))

    def regions(self) -> tuple[str, ...]:
        """The distinct first components of the locations, sorted."""
        return self.children(_ROOT)

    def children(self, path: str = "/") -> tuple[str, ...]:
        """Names directly under the inner path ``path``: regions, racks or, under a rack, nodes.

        Meant for printing the tree; an unknown path has no children.
        """
        inner = _normalise_scope(path)
        if inner not in self._members:
            return ()
        level = 0 if inner == _ROOT else inner.count("/")
        if level == self._depth:
            return tuple(str(n) for n in self.leaves(inner))
        prefix = _ROOT if inner == _ROOT else inner + "/"
        return tuple(
            sorted(
                p[len(prefix) :]
                for p in self._members
                if p != _ROOT and p.startswith(prefix) and p.count("/") == level + 1
            )
        )

    def count_racks(self, nodes: Iterable[NodeId | str]) -> int:
        """How many distinct racks ``nodes`` cover; nodes not in the tree are not counted."""
        return len({r for r in map(self.rack_of, nodes) if r is not None})
