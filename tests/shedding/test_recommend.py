"""The recommendation rule: balanced by default, upstream's plan beside it, and never a plan
that raises the std (hypothesis over clusters of 1×, 2× and 4× brokers, where PIP-220's
TransferShedder is known to raise it)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.shedding.upstream import NOW
from trimtab.config import Config, SheddingConfig
from trimtab.shedding import Bundle, LoadSnapshot, Plan, Shedder, plan
from trimtab.shedding.recommend import raises_std, recommend, upstream_strategy
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


def runner(snap: LoadSnapshot) -> object:
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
    advice = recommend(config(), runner(snap), explicit=explicit)  # type: ignore[arg-type]
    if advice.apply:
        assert not raises_std(advice.plan)
        assert advice.plan.std_after <= advice.plan.std_before + 1e-6 or not advice.plan.transfers
    else:
        assert raises_std(advice.plan) and raises_std(advice.upstream)
        assert advice.sentence.startswith("Apply no transfers")
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
    advice = recommend(config(loadBalancerSheddingConditionHitCountThreshold=0), runner(snap))  # type: ignore[arg-type]
    assert advice.plan.strategy == "balanced" and advice.apply
    assert advice.plan.std_after < advice.upstream.std_after < advice.plan.std_before
    assert advice.sentence.startswith("Run the balanced plan: its ")
    assert f"{advice.upstream.std_after:.3f}" in advice.sentence
