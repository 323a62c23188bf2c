"""Exact search for a rack sequence that keeps every write quorum covered, within a budget.

Goals
    The greedy random pick (one node per slot, upstream's way) can paint itself into a corner:
    with racks A(1) B(1) C(many), E=4, W=2, picking C A B leaves no node for slot 3, although
    C A C B covers every quorum. Upstream then falls back to a random node and returns FAIL.
    Here, when the greedy pass finds no acceptable node, this search decides whether *any*
    ensemble keeps the rules, so the policy raises (or falls back) only when none exists.

Constraints
    * Only racks matter: nodes of one rack are interchangeable for coverage, so the search
      works on ``rack -> how many acceptable nodes it has`` and the policy fills in nodes after.
    * Bounded: at most ``budget`` search steps; past that the answer is "unknown" and the
      caller treats it as infeasible (and says so in its error).

Algorithm
    Depth-first over slots 0…E-1. At each slot, candidate racks are those with capacity left
    that :meth:`QuorumCoverage.accepts`. Racks never used so far that share region (when region
    durability matters) and remaining capacity are interchangeable, so only one of each such
    group is tried. Candidates are tried least-present-in-the-slot's-windows first, then by most
    capacity left, ties in random order from the injected RNG. Quick refusals before searching:
    too few nodes, fewer racks than a quorum must span, fewer regions than durability needs.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from trimtab.placement.coverage import QuorumCoverage

__all__ = ["DEFAULT_BUDGET", "SearchResult", "solve_racks"]

#: Search steps allowed per call; enough for every realistic ensemble, cheap when exhausted.
DEFAULT_BUDGET = 20_000


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A rack per slot, or None; ``exhausted`` means the budget ran out before an answer."""

    racks: tuple[str, ...] | None
    exhausted: bool = False
    steps: int = 0
    reason: str = ""


def _region(rack: str) -> str:
    return rack[1:].split("/", 1)[0]


def solve_racks(
    capacity: Mapping[str, int],
    coverage: QuorumCoverage,
    rng: random.Random,
    *,
    budget: int = DEFAULT_BUDGET,
) -> SearchResult:
    """Find racks for slots ``0…E-1`` of an empty ``coverage`` honouring it and ``capacity``."""
    size = coverage.ensemble_size
    left = {rack: n for rack, n in sorted(capacity.items()) if n > 0}
    if sum(left.values()) < size:
        return SearchResult(None, reason=f"only {sum(left.values())} candidates for {size} slots")
    if coverage.check_racks and len(left) < coverage.min_racks:
        return SearchResult(
            None, reason=f"{len(left)} racks, a write quorum must span {coverage.min_racks}"
        )
    regions = {_region(r) for r in left}
    if coverage.check_durability and len(regions) < coverage.min_regions:
        return SearchResult(
            None, reason=f"{len(regions)} regions, durability needs {coverage.min_regions}"
        )
    search = _Search(left, coverage, rng, budget)
    found = search.run()
    if found is not None:
        return SearchResult(tuple(found), steps=search.steps)
    if search.steps >= budget:
        return SearchResult(None, exhausted=True, steps=search.steps, reason="search budget spent")
    return SearchResult(None, steps=search.steps, reason="no rack sequence covers every quorum")


class _Search:
    __slots__ = ("budget", "coverage", "left", "order", "rng", "slots", "steps", "used")

    def __init__(
        self, left: dict[str, int], coverage: QuorumCoverage, rng: random.Random, budget: int
    ) -> None:
        self.left = left
        self.coverage = coverage
        self.rng = rng
        self.budget = budget
        self.steps = 0
        self.used: dict[str, int] = dict.fromkeys(left, 0)
        self.slots: list[str] = []
        # A fixed random order of racks, so ties are broken randomly but reproducibly.
        racks = list(left)
        rng.shuffle(racks)
        self.order = {rack: i for i, rack in enumerate(racks)}

    def run(self) -> list[str] | None:
        return self.slots[:] if self._fill(0) else None

    def _fill(self, position: int) -> bool:
        if position == self.coverage.ensemble_size:
            return True
        for rack in self._candidates(position):
            self.steps += 1
            if self.steps > self.budget:
                return False
            region = _region(rack)
            self.coverage.add(position, rack, region)
            self.left[rack] -= 1
            self.used[rack] += 1
            self.slots.append(rack)
            if self._fill(position + 1):
                return True
            self.slots.pop()
            self.used[rack] -= 1
            self.left[rack] += 1
            self.coverage.remove(position, rack, region)
            if self.steps >= self.budget:
                return False
        return False

    def _candidates(self, position: int) -> list[str]:
        coverage = self.coverage
        by_region = coverage.check_durability
        seen_groups: set[tuple[str, int]] = set()
        scored: list[tuple[int, int, int, str]] = []
        recent = self.slots[max(0, position - coverage.write_quorum + 1) :]
        head = self.slots[: max(0, coverage.write_quorum - (coverage.ensemble_size - position))]
        nearby = recent + head  # racks sharing a window with this slot (either side of it)
        for rack, n in self.left.items():
            if n <= 0:
                continue
            region = _region(rack)
            if not self.used[rack]:
                group = (region if by_region else "", n)
                if group in seen_groups:
                    continue
                seen_groups.add(group)
            if not coverage.accepts(position, rack, region):
                continue
            crowd = nearby.count(rack)
            if by_region:
                crowd += sum(1 for r in nearby if _region(r) == region)
            scored.append((crowd, -n, self.order[rack], rack))
        scored.sort()
        return [rack for *_, rack in scored]
