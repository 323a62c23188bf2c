"""The one shedding decision (``advise``) and the one cycle (``run_cycle``) every caller
makes: the guard against a cluster with no load to compare, the seeded plans, and the
destinations of unload-only moves."""

from __future__ import annotations

import random
from dataclasses import replace

from tests.shedding.test_recommend import config, runner, snapshot
from tests.shedding.upstream import NOW
from trimtab.config import Config
from trimtab.shedding import (
    LoadSnapshot,
    OverloadShedder,
    ShedderState,
    advise,
    assign_destinations,
    run_cycle,
)
from trimtab.shedding.recommend import recommend

UNEVEN = [(1, [0.3, 0.3, 0.2]), (1, [0.05]), (2, [0.1, 0.1]), (1, [0.25, 0.25])]


def test_advice_is_the_recommendation_of_the_seeded_plans() -> None:
    """advise(...) recommends what recommend(...) picks over the plans of the same seed."""
    snap = snapshot(UNEVEN)
    advice = advise(snap, config(), now=NOW, until_balanced=True, seed=0)
    expected = recommend(config(), runner(snap))
    assert advice.nothing_to_shed is None and advice.recommendation is not None
    assert advice.recommendation.sentence == expected.sentence
    assert advice.recommendation.plan.transfers == expected.plan.transfers


def test_a_cluster_with_no_writable_broker_has_nothing_to_shed() -> None:
    """No writable broker: no plan runs, and the advice says why."""
    snap = replace(snapshot(UNEVEN), available=frozenset())
    advice = advise(snap, config(), now=NOW)
    assert advice.recommendation is None
    assert advice.nothing_to_shed is not None and "no broker is writable" in advice.nothing_to_shed


def test_nothing_to_shed_names_the_first_refused_row() -> None:
    """Writable brokers without load data: the guard says where the data went."""
    snap = LoadSnapshot.of([], [], available=frozenset({"b0", "b1"}))
    advice = advise(snap, config(), now=NOW, refused=["m.csv:3: cpu is not a fraction"])
    assert advice.nothing_to_shed == (
        "none of the 2 writable broker(s) has a usable node_metrics sample: 1 row(s) were "
        "rejected, the first m.csv:3: cpu is not a fraction"
    )


def test_run_cycle_is_the_cycle_then_its_destinations() -> None:
    """An unload-only shedder's moves get the destinations a fresh lookup gives them."""
    cfg = Config.of(overloaded_threshold_percentage=50).shedding
    snap = snapshot(UNEVEN)
    shedder = OverloadShedder(cfg)
    by_hand = assign_destinations(
        shedder.cycle(snap, ShedderState(), now=NOW), snap, cfg, random.Random(7), now=NOW
    )
    result = run_cycle(shedder, snap, ShedderState(), now=NOW, rng=random.Random(7))
    assert result == by_hand
    assert result.moves and all(m.destination is not None for m in result.moves)
