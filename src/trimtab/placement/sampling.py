"""Weighted ensemble sampling: upstream's successive draws, and inclusion-proportional plans.

Goals
    * ``successive`` (upstream ``WeightedRandomSelectionImpl``): draw one node by weight, skip
      members already chosen, repeat. A single pick is proportional to weight, but *inclusion*
      in an ensemble is not: heavy nodes saturate, light ones catch up. Exactly, 8 nodes of
      weight 1 and 2 of weight 3 with E=3 include a heavy node 56.8 % of the time and a light
      one 23.3 %: a ratio of 2.44, not 3 (:func:`successive_inclusion`).
    * ``proportional`` (trimtab): each candidate is in the ensemble with probability
      ``π_i = min(1, c·w_i)``, ``Σπ = E`` (:func:`inclusion_probabilities`), so disks fill at the
      pace of their weight. Heavy nodes no longer get too little of the traffic.

Constraints
    * Pure functions of the weights and an injected ``random.Random``.
    * A plan is only a preference: policies take the plan's nodes in order when a slot's scope
      and hard rules accept them, and fall back to a successive weighted pick otherwise (rack
      rules, coverage). With no rules (default policy) inclusion is exactly ``π``; with racks
      it is as close as the rules allow (a rack-aware slot that must avoid a rack skips the
      planned nodes of that rack, and the slot is then filled by weight inside its scope).

Algorithm (:func:`systematic_sample`, randomised systematic PPS)
    Shuffle the candidates, lay them on a line with lengths ``π_i`` (total E), draw
    ``u ~ U[0,1)`` and take the candidates under the points ``u, u+1, …, u+E-1``. Since every
    ``π_i <= 1`` a node is hit at most once, exactly E nodes are taken, and node i is taken with
    probability ``π_i``. The result is shuffled, so slot order carries no weight bias.

Worked example
    Weights 1,1,2,2,3,1 (the seed's free GB / 100), E=3: ``π = 0.3,0.3,0.6,0.6,0.9,0.3``, i.e.
    the seed's single-pick shares 0.1/0.1/0.2/0.2/0.3/0.1 times E.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cache

from trimtab.cluster import NodeId

__all__ = [
    "Plan",
    "inclusion_probabilities",
    "successive_inclusion",
    "systematic_sample",
]

Check = Callable[[NodeId], bool]


def inclusion_probabilities(weights: Sequence[float], size: int) -> list[float]:
    """``π_i = min(1, c·w_i)`` with ``Σπ = min(size, n)``; nodes that reach 1 are certain and
    the rest share what is left (the usual iterative PPS cap). All-zero weights: uniform."""
    n = len(weights)
    size = min(size, n)
    if size <= 0:
        return [0.0] * n
    if all(w <= 0 for w in weights):
        return [size / n] * n
    pi = [0.0] * n
    certain: set[int] = set()
    while True:
        rest = [i for i in range(n) if i not in certain]
        left = size - len(certain)
        total = sum(max(weights[i], 0.0) for i in rest)
        if left <= 0 or not rest:
            break
        if total <= 0:
            for i in rest:
                pi[i] = left / len(rest)
            break
        full = [i for i in rest if left * weights[i] >= total]
        if not full:
            for i in rest:
                pi[i] = left * max(weights[i], 0.0) / total
            break
        certain.update(full)
    for i in certain:
        pi[i] = 1.0
    return pi


def systematic_sample(pi: Sequence[float], rng: random.Random) -> list[int]:
    """Indices drawn by randomised systematic sampling: index i taken with probability
    ``pi[i]`` (each ``<= 1``), ``round(Σpi)`` indices in all, returned in random order."""
    order = list(range(len(pi)))
    rng.shuffle(order)
    point = rng.random()
    acc = 0.0
    taken: list[int] = []
    for i in order:
        acc += pi[i]
        if acc > point:
            taken.append(i)
            point += 1.0
    rng.shuffle(taken)
    return taken


def successive_inclusion(weights: Sequence[float], size: int) -> list[float]:
    """Exact inclusion probabilities of successive sampling (draw by weight, skip chosen) —
    upstream's behaviour — by dynamic programming over chosen sets; for ``n <= ~16``."""
    n = len(weights)
    size = min(size, n)
    total = float(sum(weights))

    @cache
    def visit(chosen: int, depth: int) -> tuple[float, ...]:
        # expected inclusion of each node given ``chosen`` and ``size - depth`` draws left
        if depth == size:
            return tuple(1.0 if chosen >> i & 1 else 0.0 for i in range(n))
        left = total - sum(weights[i] for i in range(n) if chosen >> i & 1)
        acc = [0.0] * n
        for i in range(n):
            if chosen >> i & 1 or weights[i] <= 0:
                continue
            p = weights[i] / left
            sub = visit(chosen | 1 << i, depth + 1)
            for j in range(n):
                acc[j] += p * sub[j]
        return tuple(acc)

    return list(visit(0, 0))


class Plan:
    """The nodes an inclusion-proportional sample chose for one ensemble, taken in order by
    the slots whose scope and rules accept them (see the module docstring)."""

    __slots__ = ("nodes",)

    def __init__(self, nodes: Sequence[NodeId]) -> None:
        self.nodes = list(nodes)

    def __repr__(self) -> str:
        return f"Plan({self.nodes!r})"

    def take(
        self,
        members: Collection[NodeId],
        checks: Sequence[Check],
        rack_of: Mapping[NodeId, str] | None = None,
        avoid: Collection[str] = (),
    ) -> NodeId | None:
        """Remove and return the first planned node in ``members``, outside ``avoid`` racks,
        passing every check; None when no planned node fits this slot."""
        for k, node in enumerate(self.nodes):
            if node not in members:
                continue
            if rack_of is not None and avoid and rack_of[node] in avoid:
                continue
            if all(check(node) for check in checks):
                del self.nodes[k]
                return node
        return None
