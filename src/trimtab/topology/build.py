"""Build a :class:`NetworkTopology` for a cluster snapshot, from the inventory or a resolver.

Upstream BookKeeper gives nodes it cannot resolve a default rack whose depth may not match the
rest of the tree, and then refuses the node (#2490, #4439). Here the default rack is lifted to
the depth the resolver's real answers have, so a failed lookup never breaks the topology.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from trimtab.cluster import DEFAULT_RACK, DEFAULT_REGION_RACK, ClusterState, NodeId
from trimtab.topology.resolvers import Resolver, resolve_locations
from trimtab.topology.tree import NetworkTopology, default_rack_for_depth

__all__ = ["default_rack_for", "locations_for", "topology_of"]

#: Upstream ``NetworkTopology.DEFAULT_ZONE_AND_UPGRADEDOMAIN``.
DEFAULT_ZONE_DOMAIN = "/default-zone/default-upgradedomain"


def default_rack_for(policy: str) -> str:
    """BookKeeper's rule: region-aware placement wants two levels, the others one; zone-aware
    has its own default fault domain, ``/default-zone/default-upgradedomain``."""
    if policy == "zoneaware":
        return DEFAULT_ZONE_DOMAIN
    return DEFAULT_REGION_RACK if policy == "regionaware" else DEFAULT_RACK


def locations_for(
    nodes: Iterable[NodeId], resolver: Resolver, *, default_rack: str
) -> dict[NodeId, str]:
    """Resolve every node's host; default-rack answers are lifted to the tree's depth."""
    resolved = resolve_locations(resolver, nodes)
    real = Counter(loc.count("/") for loc in resolved.values() if loc != default_rack)
    if not real:
        return resolved
    depth = real.most_common(1)[0][0]
    fallback = default_rack_for_depth(depth)
    return {node: fallback if loc == default_rack else loc for node, loc in resolved.items()}


def topology_of(
    cluster: ClusterState, locations: Mapping[NodeId, str] | None = None
) -> NetworkTopology:
    """Every node of ``cluster`` at its location (``locations`` overrides the inventory's)."""
    topology = NetworkTopology()
    for node in cluster:
        where = locations.get(node.id, node.location) if locations else node.location
        topology.add(node.id, where)
    return topology
