"""Invariants every shedder keeps on random mixed-hardware clusters (hypothesis)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings

from tests.strategies import shedding_snapshots
from trimtab.config import Config
from trimtab.shedding import STRATEGIES, LoadSnapshot, ShedderState, project, shedder_for

NOW = 10_000.0
ALL = sorted(STRATEGIES)


def cycle(strategy: str, snap: LoadSnapshot, **keys: object):
    cfg = Config.of(**({"hit_count_threshold": 0, "target_std": 0.05} | keys)).shedding
    return shedder_for(cfg, strategy).cycle(snap, ShedderState(), now=NOW)


@pytest.mark.parametrize("strategy", ALL)
@settings(max_examples=40, deadline=None)
@given(snap=shedding_snapshots())
def test_no_bundle_moves_twice_and_each_leaves_its_owner(strategy: str, snap: LoadSnapshot) -> None:
    """A bundle appears in at most one move per cycle, and leaves the broker that owns it."""
    result = cycle(strategy, snap)
    names = [m.bundle for m in result.moves]
    assert len(names) == len(set(names))
    owner = {snap.bundles.names[i]: snap.bundles.broker_of(i) for i in range(len(snap.bundles))}
    assert all(owner[m.bundle] == m.source and m.source != m.destination for m in result.moves)


@pytest.mark.parametrize("strategy", ALL)
@settings(max_examples=40, deadline=None)
@given(snap=shedding_snapshots())
def test_traffic_is_conserved_by_the_moves(strategy: str, snap: LoadSnapshot) -> None:
    """Projecting the moves changes who carries the traffic, never how much there is."""
    result = cycle(strategy, snap)
    placed = [m for m in result.moves if m.destination is not None]
    after = project(snap, placed)
    before_total = sum(x.throughput for x in snap.loads.values())
    after_total = sum(x.throughput for x in after.loads.values())
    assert after_total == pytest.approx(before_total, rel=1e-9, abs=1e-3)
    assert float(after.bundles.throughput.sum()) == pytest.approx(
        float(snap.bundles.throughput.sum())
    )
    moved = Counter(after.bundles.broker_of(i) for i in range(len(after.bundles)))
    assert sum(moved.values()) == len(snap.bundles)


@pytest.mark.parametrize("pairs", [1, 2, 3])
@settings(max_examples=40, deadline=None)
@given(snap=shedding_snapshots())
def test_transfer_shedder_pairs_are_bounded_and_one_sided(pairs: int, snap: LoadSnapshot) -> None:
    """At most the configured pairs; no broker sheds in one pair and receives in another
    (swaps go back within their own pair); every destination receives from one source."""
    result = cycle("transfer", snap, max_broker_shedding_per_cycle=pairs)
    main = [m for d in result.decisions if d.move and d.note != "swap" for m in [d.move]]
    swaps = [m for d in result.decisions if d.move and d.note == "swap" for m in [d.move]]
    sources = {m.source for m in main}
    destinations = {m.destination for m in main}
    assert len({(m.source, m.destination) for m in main}) <= pairs
    assert not sources & destinations
    per_destination = Counter(dst for dst in {(m.source, m.destination) for m in main})
    assert all(n == 1 for n in Counter(d for _, d in per_destination).values())
    assert all(
        (m.destination, m.source) in {(x.source, x.destination) for x in main} for m in swaps
    )


@settings(max_examples=60, deadline=None)
@given(snap=shedding_snapshots())
def test_balanced_pairs_are_disjoint(snap: LoadSnapshot) -> None:
    """Each broker is a source or a destination of at most one pair; sources keep a bundle."""
    result = cycle("balanced", snap)
    pairs = {(m.source, m.destination) for m in result.moves}
    brokers = [b for pair in pairs for b in pair]
    assert len(brokers) == len(set(brokers))
    assert len(pairs) <= len(snap.loads) // 2
    count = Counter(snap.bundles.broker_of(i) for i in range(len(snap.bundles)))
    taken = Counter(m.source for m in result.moves)
    assert all(taken[b] < count[b] for b in taken)


@pytest.mark.parametrize("strategy", ["threshold", "overload", "uniform"])
@settings(max_examples=40, deadline=None)
@given(snap=shedding_snapshots())
def test_modular_shedders_never_shed_a_sole_bundle(strategy: str, snap: LoadSnapshot) -> None:
    """A broker with one bundle keeps it (upstream's "sole namespace bundle" rule)."""
    count = Counter(snap.bundles.broker_of(i) for i in range(len(snap.bundles)))
    result = cycle(
        strategy,
        snap,
        overloaded_threshold_percentage=10,
        loadBalancerBrokerThresholdShedderPercentage=1,
    )
    assert all(count[m.source] > 1 for m in result.moves)


@pytest.mark.parametrize("strategy", ALL)
@settings(max_examples=20, deadline=None)
@given(snap=shedding_snapshots())
def test_same_input_same_decisions(strategy: str, snap: LoadSnapshot) -> None:
    """Cycles are pure: running one twice gives the same decisions and state."""
    assert cycle(strategy, snap) == cycle(strategy, snap)
