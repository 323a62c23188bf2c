"""Balancing on top of required moves lands them elsewhere before it pays for a move of its
own (issue 40): a replica a required step moved to b and balancing moves on to c is one
move a → c, so among equally good moves the count and topic passes take those first."""

from __future__ import annotations

import pytest

from tests.allocation.helpers import make_cluster
from trimtab.allocation import PartitionAssignment, Replica
from trimtab.allocation.repair import even_out
from trimtab.allocation.state import AllocationState
from trimtab.cluster import NodeId


@pytest.mark.parametrize("free", [0, 1])
def test_the_count_pass_moves_the_free_replica_of_two_equal_ones(free: int) -> None:
    """Node 0 holds two replicas and node 1 none (a share of one each): one of node 0's must
    go, and it is the one marked free, whichever it is."""
    cluster = make_cluster([1, 1, 1])
    held = [
        PartitionAssignment("t", p, (Replica(NodeId(n), 0),))
        for p, n in enumerate(["n00", "n00", "n02"])
    ]
    state = AllocationState.of(cluster, existing=held)
    with state.transaction() as tx:
        out = even_out(state, tx, held, rack_aware=False, topic_aware=False, free=[(free, 0)])
        tx.commit()
    moved = [p for p, (a, b) in enumerate(zip(held, out, strict=True)) if a is not b]
    assert moved == [free]
    assert out[free].nodes == (NodeId("n01"),)


def test_down60_topic_balance_lands_required_moves_elsewhere() -> None:
    """bench/peers down60 (a node down, two full disks, rack repairs on 60 nodes): five of the
    nine moves of the topic and count passes move on replicas the required steps had moved,
    so the default (topic-aware) plan moves 471, not 476; without topics it moves the bound,
    467. (468 before the count pass left the full disks out of the shares, as the lower
    bound does, and before rack repairs kept the least loaded replica of a crowded rack.)"""
    rebalancer = pytest.importorskip("bench.peers.rebalancer")
    cluster, held, kw = rebalancer.scenario("down60", 7)
    config, many = rebalancer.CONFIG, 10**9
    plain = rebalancer.plan_rebalance(
        cluster, held, config, max_moves=many, topic_aware=False, **kw
    )
    assert len(plain.moves) == plain.lower_bound_moves == 467
    topics = rebalancer.plan_rebalance(cluster, held, config, max_moves=many, **kw)
    b = topics.balancing
    assert b is not None and b.included and b.topic_aware
    assert b.retargeted == 5 and len(b.moves) == 4
    assert len(topics.moves) == len(plain.moves) + len(b.moves) == 471
    # the rack repairs now leave a spread of 58 the topic pass cannot lower (it was 59 → 58)
    assert b.topic_spread_after <= b.topic_spread_before


def test_what_balancing_would_add_says_which_required_moves_it_lands_elsewhere() -> None:
    """Without --mode the down60 plan moves only what it must (467) and says what balancing
    would add: 4 moves, and 5 required moves landed elsewhere at no cost, in the table line
    and in the JSON figures."""
    rebalancer = pytest.importorskip("bench.peers.rebalancer")
    from trimtab.cli.rebalance_output import _balancing_lines

    cluster, held, kw = rebalancer.scenario("down60", 7)
    kw = {k: v for k, v in kw.items() if k != "mode"}
    plan = rebalancer.plan_rebalance(cluster, held, rebalancer.CONFIG, max_moves=10**9, **kw)
    assert len(plan.moves) == plan.lower_bound_moves == 467
    b = plan.balancing
    assert b is not None and not b.included
    assert b.figures()["moves"] == 4 and b.figures()["retargeted"] == 5
    line = _balancing_lines(plan)[0]
    assert line.startswith("count balancing would add (give --mode to include it) 4 moves (")
    assert "landing 5 required moves elsewhere at no cost" in line
