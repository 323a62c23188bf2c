"""The shared selection pieces: candidate pools, the weights seam, and a pick that never spins.

Goals
    * Pick one node from a pool, uniformly or by weight, among those that pass the hard rules,
      in O(1) expected time on a large cluster, and say "none" in bounded time when nothing
      passes (upstream looped forever, #4324, and rebuilt and sorted a selector per pick).
    * One seam for weights: :class:`Weights` turns a pool into a :class:`Sampler`. Today's
      :class:`UniformWeights` draws uniformly; the disk-weight issue plugs in its own.

Constraints
    * Pools are fixed, sorted tuples built once per topology change (:class:`CandidateIndex`):
      every node, each rack's nodes, each region's nodes. Read-only and departed nodes are not
      in them, so they can never be drawn.
    * Same seed, same topology, same calls: same picks (pools are sorted; the RNG is injected).

Algorithm (:func:`pick`)
    0. *Plan* (inclusion-proportional sampling, :mod:`~trimtab.placement.sampling`): when the
       caller passes a :class:`~trimtab.placement.sampling.Plan`, its first node that is in
       the pool, outside the racks to avoid and passes every check is taken.
    1. *Rejection*: draw from the pool's sampler at most ``min(MAX_DRAWS, 2·|pool|)`` times;
       return the first draw that is outside the racks to avoid and passes every check.
    2. *Exact pass*: otherwise filter the whole pool once and let the weights choose among the
       survivors; none left means there is no acceptable node in this pool.

    Each draw is an independent sample of the pool's distribution, so the first accepted draw
    follows that distribution restricted to acceptable nodes, and so does the exact pass: the
    two steps together pick exactly by weight among acceptable nodes, in bounded time.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from trimtab.cluster import NodeId
from trimtab.constraints import Constraints, Hard, not_excluded
from trimtab.placement.coverage import QuorumCoverage, covers_write_quorums
from trimtab.placement.sampling import Plan

__all__ = [
    "MAX_DRAWS",
    "CandidateIndex",
    "ChoosingSampler",
    "Draft",
    "Planner",
    "Pool",
    "Sampler",
    "UniformWeights",
    "Weights",
    "distinct_members",
    "ensemble_rules",
    "in_regions",
    "pick",
    "plan_for",
    "region_of_rack",
    "replacement_rules",
]

#: Upper bound on rejection draws per pick before the exact pass (which is O(pool)).
MAX_DRAWS = 32

Check = Callable[[NodeId], bool]


class Sampler(Protocol):
    """Draws one member of a fixed pool per call."""

    def draw(self, rng: random.Random) -> NodeId: ...


@runtime_checkable
class ChoosingSampler(Protocol):
    """A sampler that also chooses among survivors of its pool by the pool's own distribution
    (so a weight capped at the pool's cap stays capped in the exact pass)."""

    def draw(self, rng: random.Random) -> NodeId: ...

    def choice(self, candidates: Sequence[NodeId], rng: random.Random) -> NodeId: ...


class Weights(Protocol):
    """How likely each node is to be picked: a sampler per pool, a choice among survivors."""

    def sampler(self, pool: tuple[NodeId, ...]) -> Sampler: ...

    def choice(self, candidates: Sequence[NodeId], rng: random.Random) -> NodeId: ...


class _UniformSampler:
    __slots__ = ("_n", "_pool")

    def __init__(self, pool: tuple[NodeId, ...]) -> None:
        self._pool = pool
        self._n = len(pool)

    def draw(self, rng: random.Random) -> NodeId:
        # int(random() * n) is uniform enough here and several times faster than randrange.
        return self._pool[int(rng.random() * self._n)]

    def choice(self, candidates: Sequence[NodeId], rng: random.Random) -> NodeId:
        return candidates[int(rng.random() * len(candidates))]


class UniformWeights:
    """Every node equally likely (BookKeeper without disk-weight based placement)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UniformWeights()"

    def sampler(self, pool: tuple[NodeId, ...]) -> Sampler:
        return _UniformSampler(pool)

    def choice(self, candidates: Sequence[NodeId], rng: random.Random) -> NodeId:
        return candidates[int(rng.random() * len(candidates))]


@runtime_checkable
class Planner(Protocol):
    """Weights that can plan a whole ensemble (inclusion-proportional sampling)."""

    def plan(
        self,
        nodes: tuple[NodeId, ...],
        excluded: Collection[NodeId],
        size: int,
        rng: random.Random,
        group_of: Mapping[NodeId, str] | None = None,
    ) -> Plan | None: ...


def plan_for(
    weights: Weights,
    nodes: tuple[NodeId, ...],
    excluded: Collection[NodeId],
    size: int,
    rng: random.Random,
    group_of: Mapping[NodeId, str] | None = None,
) -> Plan | None:
    """The ensemble plan of ``weights`` over ``nodes`` (None for uniform or successive);
    ``group_of`` (node -> rack) asks for at most one node per rack."""
    if not isinstance(weights, Planner):
        return None
    return weights.plan(nodes, excluded, size, rng, group_of)


def region_of_rack(rack: str) -> str:
    """The first component of a location: ``'/dc1/r1'`` -> ``'dc1'`` (upstream's region rule)."""
    return rack[1:].split("/", 1)[0]


@dataclass(slots=True)
class Pool:
    """A fixed, sorted tuple of nodes, the weights in force and the sampler they give it."""

    nodes: tuple[NodeId, ...]
    weights: Weights
    sampler: Sampler
    members: frozenset[NodeId]

    @classmethod
    def of(cls, nodes: tuple[NodeId, ...], weights: Weights) -> Pool:
        return cls(nodes, weights, weights.sampler(nodes), frozenset(nodes))


@dataclass(frozen=True, slots=True)
class CandidateIndex:
    """Writable nodes of one topology snapshot, grouped once for fast picks.

    Built on every cluster change (and when weights change); never mutated afterwards except for
    its lazily filled pool cache.
    """

    nodes: tuple[NodeId, ...]
    rack_of: Mapping[NodeId, str]
    region_of: Mapping[NodeId, str]
    by_rack: Mapping[str, tuple[NodeId, ...]]
    by_region: Mapping[str, tuple[NodeId, ...]]
    weights: Weights
    _pools: dict[str, Pool] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(
        cls, locations: Mapping[NodeId, str], weights: Weights, *, skip: Collection[NodeId] = ()
    ) -> CandidateIndex:
        """Index ``locations`` (node -> rack path), leaving out ``skip``."""
        ordered = sorted(n for n in locations if n not in skip)
        rack_of = {n: locations[n] for n in ordered}
        region_of = {n: region_of_rack(r) for n, r in rack_of.items()}
        by_rack: dict[str, list[NodeId]] = {}
        by_region: dict[str, list[NodeId]] = {}
        for node in ordered:
            by_rack.setdefault(rack_of[node], []).append(node)
            by_region.setdefault(region_of[node], []).append(node)
        return cls(
            nodes=tuple(ordered),
            rack_of=MappingProxyType(rack_of),
            region_of=MappingProxyType(region_of),
            by_rack=MappingProxyType({r: tuple(v) for r, v in sorted(by_rack.items())}),
            by_region=MappingProxyType({r: tuple(v) for r, v in sorted(by_region.items())}),
            weights=weights,
        )

    @property
    def racks(self) -> tuple[str, ...]:
        return tuple(self.by_rack)

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(self.by_region)

    def free_by_rack(self, excluded: Collection[NodeId]) -> dict[str, int]:
        """Nodes per rack outside ``excluded``, in O(racks + |excluded|)."""
        return self._free(self.by_rack, self.rack_of, excluded)

    def free_by_region(self, excluded: Collection[NodeId]) -> dict[str, int]:
        """Nodes per region outside ``excluded``."""
        return self._free(self.by_region, self.region_of, excluded)

    @staticmethod
    def _free(
        groups: Mapping[str, tuple[NodeId, ...]],
        group_of: Mapping[NodeId, str],
        excluded: Collection[NodeId],
    ) -> dict[str, int]:
        free = {g: len(members) for g, members in groups.items()}
        for node in excluded:
            group = group_of.get(node)
            if group is not None:
                free[group] -= 1
        return free

    def pool(self, key: str = "/") -> Pool:
        """``"/"`` every node; ``"/dc1/r1"`` a rack; ``"region:dc1"`` a region (cached)."""
        found = self._pools.get(key)
        if found is None:
            if key == "/":
                nodes = self.nodes
            elif key.startswith("region:"):
                nodes = self.by_region.get(key[7:], ())
            else:
                nodes = self.by_rack.get(key, ())
            found = Pool.of(nodes, self.weights)
            self._pools[key] = found
        return found


@dataclass(slots=True)
class Draft:
    """An ensemble being built: what the hard rules read (members, exclusions, coverage).

    ``position`` is the slot the next pick fills; new ensembles fill 0, 1, 2…, a replacement
    fills the replaced node's slot. Rules prepared on a draft read it live, so they are
    prepared once per ensemble, not once per pick.
    """

    index: CandidateIndex
    coverage: QuorumCoverage | None
    excluded: frozenset[NodeId]
    chosen: list[NodeId] = field(default_factory=list)
    members: set[NodeId] = field(default_factory=set)
    position: int = 0

    @property
    def racks(self) -> Mapping[NodeId, str]:
        return self.index.rack_of

    @property
    def regions(self) -> Mapping[NodeId, str]:
        return self.index.region_of

    def add(self, node: NodeId) -> None:
        """Fill ``position`` with ``node`` and move to the next slot."""
        if self.coverage is not None:
            self.coverage.add(self.position, self.index.rack_of[node], self.index.region_of[node])
        self.chosen.append(node)
        self.members.add(node)
        self.position += 1

    def checks(self, rules: Constraints[Draft]) -> list[Check]:
        """The rules' per-node checks, prepared on this draft."""
        return [rule.prepare(self) for rule in rules.hard]


def distinct_members() -> Hard[Draft]:
    """No node holds two replicas: :func:`trimtab.constraints.distinct_nodes` for a draft that
    grows while its prepared check is in use (it reads the live member set)."""

    def prepare(draft: Draft) -> Check:
        members = draft.members
        return lambda node: node not in members

    return Hard("node must not already hold a replica", prepare)


def in_regions(regions: Collection[str]) -> Hard[Draft]:
    """The node's region is one of ``regions`` (regions a feature switch has not closed)."""
    allowed = frozenset(regions)

    def prepare(draft: Draft) -> Check:
        region_of = draft.index.region_of
        return lambda node: region_of.get(node) in allowed

    return Hard("node must be in a region open to placement", prepare)


def ensemble_rules() -> Constraints[Draft]:
    """New ensembles: distinct nodes, no excluded node, every write quorum still coverable."""
    return Constraints(hard=(distinct_members(), not_excluded(), covers_write_quorums()))


def replacement_rules(*, keep_coverage: bool) -> Constraints[Draft]:
    """Replacements: distinct and not excluded; optionally keep the replaced slot's coverage."""
    hard: tuple[Hard[Draft], ...] = (distinct_members(), not_excluded())
    if keep_coverage:
        hard = (*hard, covers_write_quorums())
    return Constraints(hard=hard)


def pick(
    pool: Pool,
    checks: Sequence[Check],
    rng: random.Random,
    avoid_racks: Collection[str] | None = None,
    rack_of: Mapping[NodeId, str] | None = None,
    *,
    plan: Plan | None = None,
) -> NodeId | None:
    """One node of ``pool`` passing every check and outside ``avoid_racks``, or None.

    See the module docstring: bounded rejection, then one exact pass. Never loops unbounded.
    ``avoid_racks`` needs ``rack_of``; ``plan`` is tried first (step 0).
    """
    nodes = pool.nodes
    if not nodes:
        return None
    avoid: Collection[str] = avoid_racks or ()
    racks = rack_of if avoid else None
    if plan is not None and plan.nodes:
        planned = plan.take(pool.members, checks, racks, avoid)
        if planned is not None:
            return planned
    draw = pool.sampler.draw
    for _ in range(min(MAX_DRAWS, 2 * len(nodes))):
        node = draw(rng)
        if racks is not None and racks[node] in avoid:
            continue
        for check in checks:
            if not check(node):
                break
        else:
            return node
    survivors = [
        n for n in nodes if (racks is None or racks[n] not in avoid) and all(c(n) for c in checks)
    ]
    if not survivors:
        return None
    sampler = pool.sampler
    if isinstance(sampler, ChoosingSampler):
        return sampler.choice(survivors, rng)
    return pool.weights.choice(survivors, rng)
