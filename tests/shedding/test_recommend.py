"""The recommendation rule: balanced by default, upstream's plan beside it, and never a plan
that raises the std (hypothesis over clusters of 1×, 2× and 4× brokers, where PIP-220's
TransferShedder is known to raise it)."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.shedding.upstream import NOW
from trimtab.config import Config, SheddingConfig
from trimtab.shedding import Bundle, LoadSnapshot, Plan, Shedder, plan
from trimtab.shedding.recommend import (
    hottest_gain,
    raises_std,
    recommend,
    upstream_strategy,
    within_target,
)
from trimtab.sim.convergence import exact_reports

CAPACITY = 1e8  # bytes/s of a 1× broker


def snapshot(brokers: list[tuple[int, list[float]]]) -> LoadSnapshot:
    """Brokers as (size multiple, bundle loads as shares of a 1× broker)."""
    caps = np.array([CAPACITY * size for size, _ in brokers])
    levels = np.array([sum(shares) * CAPACITY for _, shares in brokers]) / caps
    names = [f"b{k}" for k in range(len(brokers))]
    bundles = [
        Bundle(name=f"t/{name}/{j}", broker=name, throughput_in=x * CAPACITY)
        for name, (_, shares) in zip(names, brokers, strict=True)
        for j, x in enumerate(shares)
    ]
    return LoadSnapshot.of(exact_reports(names, levels, NOW, caps), bundles)


def runner(snap: LoadSnapshot) -> Callable[[Shedder], Plan]:
    def run(shedder: Shedder) -> Plan:
        return plan(snap, shedder, now=NOW, until_balanced=True, rng=random.Random(0))

    return run


clusters = st.lists(
    st.tuples(
        st.sampled_from([1, 2, 4]),
        st.lists(st.floats(0.01, 0.5), min_size=1, max_size=6),
    ),
    min_size=2,
    max_size=7,
)


def config(**keys: object) -> SheddingConfig:
    return Config.of(**({"loadBalancerBrokerLoadTargetStd": 0.05} | keys)).shedding


@settings(max_examples=40, deadline=None)
@given(clusters, st.sampled_from([None, "transfer", "avg", "threshold", "uniform"]))
def test_the_recommended_plan_never_raises_the_std(
    brokers: list[tuple[int, list[float]]], explicit: str | None
) -> None:
    snap = snapshot(brokers)
    advice = recommend(config(), runner(snap), explicit=explicit)
    if advice.apply:
        assert not raises_std(advice.plan)
        assert advice.plan.std_after <= advice.plan.std_before + 1e-6 or not advice.plan.transfers
    elif advice.held == "raises_std":
        assert raises_std(advice.plan) and raises_std(advice.upstream)
        assert advice.sentence.startswith("Apply no transfers")
    else:  # a plan that would not earn its moves (issue 43, point 3)
        assert not raises_std(advice.plan) and advice.plan.transfers
        assert advice.sentence.startswith("Nothing to do") and "offered" in advice.sentence
        cfg = config()
        calm = within_target(advice.plan.loads_before, cfg.target_std)
        assert (advice.held == "within_target") is calm
        assert calm or hottest_gain(advice.plan) < cfg.min_hottest_gain
    preferred = explicit or "balanced"
    if advice.apply and advice.plan.strategy != preferred:
        assert advice.plan is advice.upstream and "would raise it" in advice.sentence
    assert advice.upstream.strategy == "transfer"


def test_upstream_is_the_configured_shedder_or_transfer_for_balanced() -> None:
    assert upstream_strategy(config()) == "transfer"
    assert upstream_strategy(config(loadBalancerLoadSheddingStrategy="avg")) == "avg"
    assert upstream_strategy(config(loadBalancerLoadSheddingStrategy="balanced")) == "transfer"


def test_balanced_is_recommended_with_upstreams_outcome_in_the_sentence() -> None:
    """1× brokers beside a 4× one: transfer sizes moves in the sender's units and settles
    higher; balanced sizes them by capacity and is recommended."""
    snap = snapshot([(1, [0.3, 0.3, 0.2]), (4, [0.1]), (1, [0.2, 0.2, 0.1])])
    advice = recommend(config(loadBalancerSheddingConditionHitCountThreshold=0), runner(snap))
    assert advice.plan.strategy == "balanced" and advice.apply
    assert advice.plan.std_after < advice.upstream.std_after < advice.plan.std_before
    assert advice.sentence.startswith("Run the balanced plan: its ")
    assert f"{advice.upstream.std_after:.3f}" in advice.sentence


def test_a_cluster_within_the_target_gets_nothing_to_do_with_the_plan_offered() -> None:
    """Issue 43: loads of 0 %, 0 % and 16 %, all inside mean ± target std: the balanced plan
    would still fill the empty brokers, but the recommendation is "nothing to do"."""
    snap = snapshot([(4, []), (2, []), (2, [0.142, 0.114, 0.063])])
    advice = recommend(config(loadBalancerBrokerLoadTargetStd=0.25), runner(snap))
    assert not advice.apply and advice.held == "within_target"
    assert advice.sentence.startswith("Nothing to do: the cluster is within the target")
    assert "offered, not recommended" in advice.sentence
    assert advice.as_json()["recommendation"]["strategy"] is None


def test_a_plan_that_barely_cools_the_hottest_broker_is_not_recommended() -> None:
    snap = snapshot([(1, [0.5, 0.015625]), (1, [0.25])])
    advice = recommend(config(), runner(snap))
    assert advice.plan.transfers and hottest_gain(advice.plan) < 0.02
    assert advice.held == "small_gain" and "min_hottest_gain 0.02" in advice.sentence
    lower = recommend(config(min_hottest_gain=0.0), runner(snap))
    assert lower.apply and lower.held is None


def test_every_transfer_says_why_in_plain_words() -> None:
    snap = snapshot([(1, [0.3, 0.3, 0.2]), (1, [0.1]), (1, [0.05])])
    advice = recommend(config(), runner(snap))
    from trimtab.shedding.plain import plain_reasons

    reasons = plain_reasons(advice.plan)
    assert advice.apply and len(reasons) == len(advice.plan.transfers) > 0
    assert reasons[0].startswith("b0 at 80% is the most loaded; b2 at 5% the least")
