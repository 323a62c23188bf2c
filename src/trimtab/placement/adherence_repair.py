"""Replace to adhere: the fewest replacements that make a non-adhering ensemble adhere.

Upstream ``replaceToAdherePlacementPolicy`` (#3744; rack-aware only, others throw): an auditor
finds a ledger whose ensemble breaks the placement rules and asks for one that keeps as many of
its bookies, in their positions, as possible.

Rules (upstream's)
    * An ensemble that already adheres (MEETS_SOFT or better) comes back unchanged.
    * Members that are excluded, read-only or unknown must be replaced.
    * No answer is ``EnsemblePlacement((), FAIL)`` (upstream: an empty list and FAIL), never a
      half-fixed ensemble; fewer racks than ``min(W, minNumRacksPerWriteQuorum)`` gives up at once.

Algorithm
    a. *Upstream's pass*, for rack- and region-aware: from each start position, walk the ring
       keeping each member that still lets every write quorum through it cover its racks (and
       regions) given the members kept before it; otherwise take a node that does, preferring
       racks no neighbour within ``minRacks - 1`` uses and nodes not in the old ensemble. The
       result changing fewest positions wins (ties: the earliest start).
    b. *Exact minimum*: for ``k`` = the replacements forced by excluded members, then one more
       each time, below the best count of (a): try every set of ``k`` positions (bounded by a
       budget), refill just those with the policy's own slot rules, keep the first that adheres.
       This is what makes the answer the fewest replacements, not just a good one; upstream
       stops at (a). The zone-aware policy uses (b) alone with its own slot rule.

The seam
    :class:`RepairablePolicy` is all this module asks of a policy: its adherence check, its
    candidates, its coverage rules (None: step (a) does not apply) and its slot rule for step
    (b). Each policy implements those hooks itself, so this module imports no policy class and
    the policies may import it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trimtab.cluster import NodeId
from trimtab.errors import NotEnoughNodesError
from trimtab.placement.contract import Adherence, EnsemblePlacement, check_quorums
from trimtab.placement.coverage import QuorumCoverage
from trimtab.placement.selection import CandidateIndex, Draft, pick, replacement_rules

__all__ = [
    "MAX_POSITION_SETS",
    "Gap",
    "RepairablePolicy",
    "coverage_refill",
    "replace_to_adhere",
]

#: Bound on the position sets step (b) tries, so a large ensemble cannot make it explode.
MAX_POSITION_SETS = 2_000

_COVERED = replacement_rules(keep_coverage=True)  # distinct, not excluded, quorums coverable


@dataclass(frozen=True, slots=True)
class Gap:
    """Positions of an ensemble to fill (``None`` in ``slots``) with nodes outside ``taken``."""

    slots: list[NodeId | None]
    positions: Sequence[int]
    write_quorum: int
    ack_quorum: int
    taken: set[NodeId]


@runtime_checkable
class RepairablePolicy(Protocol):
    """The hooks replace-to-adhere calls; every placement policy implements them."""

    rng: random.Random

    def is_ensemble_adhering(
        self, ensemble: Sequence[str], write_quorum: int, ack_quorum: int
    ) -> Adherence:
        """The policy's own grade of ``ensemble``."""
        ...

    def repair_candidates(self) -> CandidateIndex:
        """The nodes a repair may choose from (without the default rack where the policy
        keeps nodes off it)."""
        ...

    def repair_coverage(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int
    ) -> QuorumCoverage | None:
        """The rack (and region) rules every write quorum must keep; None for a policy
        without them (step (a) then does not apply)."""
        ...

    def repair_fill(self, index: CandidateIndex, gap: Gap) -> list[NodeId | None] | None:
        """Step (b): ``gap`` filled under the policy's slot rules, or None."""
        ...


@dataclass(frozen=True, slots=True)
class _Ask:
    """One request: the policy, its candidates, the ensemble and what may not be used."""

    policy: RepairablePolicy
    index: CandidateIndex
    members: tuple[NodeId, ...]
    wq: int
    aq: int
    excluded: frozenset[NodeId]

    def changed(self, found: Sequence[NodeId]) -> int:
        return sum(a != b for a, b in zip(found, self.members, strict=True))

    def adheres(self, ensemble: Sequence[NodeId]) -> bool:
        return self.policy.is_ensemble_adhering(ensemble, self.wq, self.aq) is not Adherence.FAIL


def replace_to_adhere(
    policy: RepairablePolicy,
    ensemble_size: int,
    write_quorum: int,
    ack_quorum: int,
    current: Sequence[str],
    exclude: Iterable[str] = (),
) -> EnsemblePlacement:
    """See the module docstring."""
    check_quorums(ensemble_size, write_quorum, ack_quorum)
    members = tuple(NodeId(n) for n in current)
    if len(members) != ensemble_size:
        raise ValueError(f"the ensemble has {len(members)} members, not {ensemble_size}")
    adherence = policy.is_ensemble_adhering(members, write_quorum, ack_quorum)
    if adherence is not Adherence.FAIL:
        return EnsemblePlacement(members, adherence)
    index = policy.repair_candidates()
    excluded = frozenset(NodeId(n) for n in exclude) | {
        n for n in members if n not in index.rack_of
    }
    racks = len(index.by_rack)
    coverage = policy.repair_coverage(ensemble_size, write_quorum, ack_quorum)
    if coverage is not None and (racks < 2 or racks < coverage.min_racks):
        return _none(f"only {racks} rack(s): no relocation can adhere")
    ask = _Ask(policy, index, members, write_quorum, ack_quorum, excluded)
    found = _fewest(ask, _upstream_pass(ask))
    if found is None:
        return _none("no ensemble within reach adheres")
    changed = ask.changed(found)
    adherence = policy.is_ensemble_adhering(found, write_quorum, ack_quorum)
    return EnsemblePlacement(found, adherence, (f"replaced {changed} of {ensemble_size}",))


def _none(why: str) -> EnsemblePlacement:
    return EnsemblePlacement((), Adherence.FAIL, (why,))


def _upstream_pass(ask: _Ask) -> tuple[NodeId, ...] | None:
    """Step (a): the ring walk from every start; the adhering result changing fewest members."""
    if ask.policy.repair_coverage(len(ask.members), ask.wq, ask.aq) is None:
        return None
    best: tuple[NodeId, ...] | None = None
    best_changed = len(ask.members) + 1
    for start in range(len(ask.members)):
        found = _walk(ask, start)
        if found is None or not ask.adheres(found):
            continue
        changed = ask.changed(found)
        if changed < best_changed:
            best, best_changed = found, changed
            if changed <= 1:
                break
    return best


def _walk(ask: _Ask, start: int) -> tuple[NodeId, ...] | None:
    policy, index, size = ask.policy, ask.index, len(ask.members)
    coverage = policy.repair_coverage(size, ask.wq, ask.aq)
    draft = Draft(index, coverage, ask.excluded)
    checks = draft.checks(_COVERED)
    slots = list(ask.members)
    reach = max(1, coverage.min_racks if coverage else 1) - 1
    for step in range(size):
        at = (start + step) % size
        draft.position = at
        node = slots[at]
        if node not in index.rack_of or not all(check(node) for check in checks):
            chosen = _choose(policy, index, checks, slots, at, reach)
            if chosen is None:
                return None
            slots[at] = node = chosen
        draft.add(node)
    return tuple(slots)


def _choose(
    policy: RepairablePolicy,
    index: CandidateIndex,
    checks: list[Callable[[NodeId], bool]],
    slots: list[NodeId],
    at: int,
    reach: int,
) -> NodeId | None:
    """Upstream's order: a rack no neighbour uses and a node new to the ensemble, then only a
    new node, then any node the rules accept."""
    size = len(slots)
    near = {index.rack_of.get(slots[(at + d) % size], "") for d in range(-reach, reach + 1) if d}
    old = frozenset(slots)
    fresh = [*checks, lambda n: n not in old]
    pool, rng = index.pool(), policy.rng
    return (
        pick(pool, fresh, rng, avoid_racks=near, rack_of=index.rack_of)
        or pick(pool, fresh, rng)
        or pick(pool, checks, rng)
    )


def coverage_refill(
    policy: RepairablePolicy, index: CandidateIndex, gap: Gap
) -> list[NodeId | None] | None:
    """Step (b) for rack-, region-aware and default: refill the gap so every write quorum
    through it stays coverable given the members kept."""
    coverage = policy.repair_coverage(len(gap.slots), gap.write_quorum, gap.ack_quorum)
    draft = Draft(index, coverage, frozenset(gap.taken))
    for at, node in enumerate(gap.slots):
        if node is not None and at not in gap.positions:
            draft.position = at
            draft.add(node)
    checks = draft.checks(_COVERED)
    out = list(gap.slots)
    for at in gap.positions:
        draft.position = at
        node = pick(index.pool(), checks, policy.rng)
        if node is None:
            return None
        draft.add(node)
        out[at] = node
    return out


def _fewest(ask: _Ask, best: tuple[NodeId, ...] | None) -> tuple[NodeId, ...] | None:
    """Step (b): fewer replacements than ``best`` if any set of positions allows it."""
    members, size = ask.members, len(ask.members)
    forced = [at for at, n in enumerate(members) if n in ask.excluded or n in members[:at]]
    limit = size if best is None else ask.changed(best)
    free = [at for at in range(size) if at not in forced]
    tried = 0
    for k in range(len(forced), limit):
        for chosen in itertools.combinations(free, k - len(forced)):
            tried += 1
            if tried > MAX_POSITION_SETS:
                return best
            positions = sorted([*forced, *chosen])
            slots: list[NodeId | None] = [
                None if at in positions else n for at, n in enumerate(members)
            ]
            gap = Gap(slots, positions, ask.wq, ask.aq, set(ask.excluded) | set(members))
            try:
                filled = ask.policy.repair_fill(ask.index, gap)
            except NotEnoughNodesError:
                filled = None
            if filled is None or any(n is None for n in filled):
                continue
            ensemble = tuple(n for n in filled if n is not None)
            if ask.adheres(ensemble):
                return ensemble
    return best
