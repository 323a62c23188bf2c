"""The shared constraint machinery: hard filters, ranked soft levels, seeded tie-breaks."""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trimtab.cluster import NodeId
from trimtab.constraints import (
    MAX_SCORE,
    Constraints,
    NoEligibleNodeError,
    Soft,
    choose,
    distinct_nodes,
    distinct_racks_preferred,
    eligible,
    not_excluded,
)

NODES = [NodeId(f"n{i}:1") for i in range(6)]
RACK = {n: f"/r{i % 3}" for i, n in enumerate(NODES)}  # n0,n3 in r0; n1,n4 in r1; n2,n5 in r2


@dataclass
class Ctx:
    chosen: Collection[NodeId] = ()
    excluded: Collection[NodeId] = ()
    racks: dict[NodeId, str] = field(default_factory=lambda: RACK)

    def rack_of(self, node: NodeId) -> str | None:
        return self.racks.get(node)


RULES: Constraints[Ctx] = Constraints(hard=(distinct_nodes(), not_excluded()))


def test_hard_rules_filter_and_count_rejections() -> None:
    """Eligible nodes pass every hard rule; the first failing rule is recorded per node."""
    ctx = Ctx(chosen=[NODES[0]], excluded=[NODES[1], NODES[2]])
    passing, rejections = eligible(NODES, RULES, ctx)
    assert passing == NODES[3:]
    assert rejections == {"node must not already hold a replica": 1, "node must not be excluded": 2}


def test_no_eligible_node_says_why() -> None:
    """When nothing passes, the error names each rule and how many nodes it ruled out."""
    with pytest.raises(NoEligibleNodeError) as info:
        choose(NODES[:2], RULES, Ctx(chosen=[NODES[0]], excluded=[NODES[1]]), random.Random(1))
    assert info.value.candidates == 2
    assert "1 ruled out by 'node must not be excluded'" in str(info.value)


def test_distinct_racks_preferred_avoids_used_racks() -> None:
    """With replicas in r0 and r1, only nodes of the empty rack r2 can win."""
    rules = RULES.add_level(distinct_racks_preferred())
    ctx = Ctx(chosen=[NODES[0], NODES[1]])
    picks = {choose(NODES, rules, ctx, random.Random(seed)) for seed in range(50)}
    assert picks == {NODES[2], NODES[5]}


def test_unknown_rack_scores_zero() -> None:
    """A node with no rack never beats a node in an unused rack."""
    score = distinct_racks_preferred().prepare(Ctx(racks={NODES[0]: "/r0"}))
    assert score(NODES[0]) == MAX_SCORE and score(NODES[1]) == 0


def test_levels_are_ranked_not_summed() -> None:
    """A later level only breaks ties left by earlier ones, however large its scores."""
    first: Soft[Ctx] = Soft("prefer n1 or n2", lambda ctx: lambda n: 10 if n in NODES[1:3] else 0)
    second: Soft[Ctx] = Soft(
        "prefer n0, then n2", lambda ctx: lambda n: {NODES[0]: MAX_SCORE, NODES[2]: 5}.get(n, 0)
    )
    rules = RULES.add_level(first).add_level(second)
    assert choose(NODES, rules, Ctx(), random.Random(0)) == NODES[2]


def test_scores_within_a_level_are_averaged() -> None:
    """Two rules in one level count equally."""
    a: Soft[Ctx] = Soft("a", lambda ctx: lambda n: 10 if n == NODES[0] else 6)
    b: Soft[Ctx] = Soft("b", lambda ctx: lambda n: 0 if n == NODES[0] else 6)
    assert choose(NODES[:2], RULES.add_level(a, b), Ctx(), random.Random(0)) == NODES[1]


@given(st.integers(min_value=0, max_value=2**32), st.sets(st.sampled_from(NODES)))
def test_same_seed_same_choice_and_never_an_ineligible_node(seed: int, chosen: set[NodeId]) -> None:
    """A seed fixes the choice; a chosen node never passes distinct_nodes."""
    ctx = Ctx(chosen=chosen)
    rules = RULES.add_level(distinct_racks_preferred())
    if chosen == set(NODES):
        with pytest.raises(NoEligibleNodeError):
            choose(NODES, rules, ctx, random.Random(seed))
        return
    first = choose(NODES, rules, ctx, random.Random(seed))
    assert first == choose(NODES, rules, ctx, random.Random(seed))
    assert first not in chosen
