"""Constraints shared by placement and allocation: small named rules, prepared once per request.

Goals
    One vocabulary for "where may this replica go" across BookKeeper-style placement and
    Redpanda-style allocation, so a rule such as "distinct racks preferred" exists once.

Shape (after Redpanda's ``allocation_constraints`` and the Kubernetes scheduler framework)
    * A **hard** constraint answers pass/fail for one node. A node failing any hard constraint
      is not eligible; the constraint's ``name`` (a sentence) is the reason recorded.
    * A **soft** constraint scores a node in ``0..MAX_SCORE``. Soft constraints come in ranked
      *levels*: scores are averaged within a level and only the best-scoring nodes of one level
      go on to the next. Ties left after the last level are settled by the injected RNG.
    * ``prepare(ctx)`` runs once per decision and returns a cheap per-node closure, so work
      such as counting replicas per rack is done once, not once per node.

A *context* is whatever the caller's decision needs (the replicas chosen so far, the
exclusions, a node's rack...); shared constraints ask only for the small protocols below.

Example::

    rules = Constraints(hard=(distinct_nodes(), not_excluded()))
    rules = rules.add_level(distinct_racks_preferred())
    node = choose(candidates, rules, ctx, rng)
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from trimtab.cluster import NodeId
from trimtab.errors import TrimtabError

__all__ = [
    "MAX_SCORE",
    "Constraints",
    "Hard",
    "NoEligibleNodeError",
    "Soft",
    "choose",
    "distinct_nodes",
    "distinct_racks_preferred",
    "eligible",
    "not_excluded",
    "ties",
]

MAX_SCORE = 10_000_000

Ctx = TypeVar("Ctx")
Ctx_contra = TypeVar("Ctx_contra", contravariant=True)


class HasChosen(Protocol):
    @property
    def chosen(self) -> Collection[NodeId]: ...


class HasExcluded(Protocol):
    @property
    def excluded(self) -> Collection[NodeId]: ...


class HasRacks(HasChosen, Protocol):
    def rack_of(self, node: NodeId) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Hard(Generic[Ctx_contra]):
    """A pass/fail rule; ``name`` says what it requires ("node must not hold a replica")."""

    name: str
    prepare: Callable[[Ctx_contra], Callable[[NodeId], bool]]

    def __repr__(self) -> str:
        return f"<hard: {self.name}>"


@dataclass(frozen=True, slots=True)
class Soft(Generic[Ctx_contra]):
    """A preference scoring a node in ``0..MAX_SCORE``; higher is better."""

    name: str
    prepare: Callable[[Ctx_contra], Callable[[NodeId], int]]

    def __repr__(self) -> str:
        return f"<soft: {self.name}>"


@dataclass(frozen=True, slots=True)
class Constraints(Generic[Ctx]):
    """Hard constraints plus ranked soft levels; immutable, built up with ``add_*``."""

    hard: tuple[Hard[Ctx], ...] = ()
    levels: tuple[tuple[Soft[Ctx], ...], ...] = ()

    def add_hard(self, *rules: Hard[Ctx]) -> Constraints[Ctx]:
        return Constraints((*self.hard, *rules), self.levels)

    def add_level(self, *rules: Soft[Ctx]) -> Constraints[Ctx]:
        """A new, lower-ranked level: it only breaks ties left by the levels before it."""
        return Constraints(self.hard, (*self.levels, tuple(rules)))


class NoEligibleNodeError(TrimtabError):
    """No candidate passed the hard constraints; says which rule ruled out how many."""

    def __init__(self, candidates: int, rejections: Counter[str]) -> None:
        self.candidates = candidates
        self.rejections = rejections
        why = "; ".join(f"{n} ruled out by '{rule}'" for rule, n in rejections.most_common())
        super().__init__(f"no eligible node among {candidates} candidates: {why or 'none given'}")


def eligible(
    candidates: Sequence[NodeId], rules: Constraints[Ctx], ctx: Ctx
) -> tuple[list[NodeId], Counter[str]]:
    """The candidates passing every hard constraint, and what ruled the others out."""
    checks = [(rule.name, rule.prepare(ctx)) for rule in rules.hard]
    passing: list[NodeId] = []
    rejections: Counter[str] = Counter()
    for node in candidates:
        failed = next((name for name, ok in checks if not ok(node)), None)
        if failed is None:
            passing.append(node)
        else:
            rejections[failed] += 1
    return passing, rejections


def ties(candidates: Sequence[NodeId], rules: Constraints[Ctx], ctx: Ctx) -> list[NodeId]:
    """The candidates left after the hard rules and every soft level: all equally good.

    Raises :class:`NoEligibleNodeError` when nothing passes.
    """
    nodes, rejections = eligible(candidates, rules, ctx)
    if not nodes:
        raise NoEligibleNodeError(len(candidates), rejections)
    for level in rules.levels:
        if len(nodes) == 1:
            break
        scorers = [rule.prepare(ctx) for rule in level]
        scores = [sum(score(n) for score in scorers) / len(scorers) for n in nodes]
        best = max(scores)
        nodes = [n for n, s in zip(nodes, scores, strict=True) if s == best]
    return nodes


def choose(
    candidates: Sequence[NodeId], rules: Constraints[Ctx], ctx: Ctx, rng: random.Random
) -> NodeId:
    """Filter by hard rules, keep the best of each soft level in turn, pick one tie at random.

    Raises :class:`NoEligibleNodeError` when nothing passes. Candidates should come in a fixed
    order (sorted ids) so the same seed gives the same choice.
    """
    nodes = ties(candidates, rules, ctx)
    return nodes[0] if len(nodes) == 1 else rng.choice(nodes)


# -- rules every decider shares ----------------------------------------------------------------


def distinct_nodes() -> Hard[HasChosen]:
    """No node holds two replicas of the same thing."""

    def prepare(ctx: HasChosen) -> Callable[[NodeId], bool]:
        taken = set(ctx.chosen)
        return lambda node: node not in taken

    return Hard("node must not already hold a replica", prepare)


def not_excluded() -> Hard[HasExcluded]:
    """Nodes the caller excluded (quarantined, draining, being replaced) are never used."""

    def prepare(ctx: HasExcluded) -> Callable[[NodeId], bool]:
        banned = set(ctx.excluded)
        return lambda node: node not in banned

    return Hard("node must not be excluded", prepare)


def distinct_racks_preferred() -> Soft[HasRacks]:
    """Full score in a rack holding no replica yet, else ``MAX/(replicas there + 1)``.

    Redpanda's ``distinct_rack_preferred``; a node with no known rack scores 0.
    """

    def prepare(ctx: HasRacks) -> Callable[[NodeId], int]:
        per_rack = Counter(ctx.rack_of(n) for n in ctx.chosen)

        def score(node: NodeId) -> int:
            rack = ctx.rack_of(node)
            if rack is None:
                return 0
            return MAX_SCORE // (per_rack[rack] + 1)

        return score

    return Soft("replicas should sit in distinct racks", prepare)
