"""Read reordering: each upstream case with its exact expected order, plus the region rules."""

from __future__ import annotations

import random

import pytest

from trimtab.config import Config
from trimtab.placement import MemoryStats, RackAwarePolicy, ReadClass, RegionAwarePolicy
from trimtab.placement.reorder import SlowNodes, reorder_reads
from trimtab.placement.services import READ_REQUESTS_REORDERED

from .support import default_policy, ids

# Upstream's fixture: four bookies, two racks plus the default rack, write set (0, 1, 2, 3).
B0, B1, B2, B3 = ENSEMBLE = ids("b0", "b1", "b2", "b3")
WHERE = {
    B0: "/default-region/rack1",
    B1: "/default-region/default-rack",
    B2: "/default-region/default-rack",
    B3: "/default-region/rack2",
}
WRITE_SET = (0, 1, 2, 3)


def policy(
    *,
    down: tuple[int, ...] = (),
    readonly: tuple[int, ...] = (),
    now: list[float] | None = None,
    stats: MemoryStats | None = None,
    **config: object,
) -> RackAwarePolicy:
    clock = now if now is not None else [0.0]
    p = RackAwarePolicy(
        config=Config.of(**config),
        resolver={str(k): v for k, v in WHERE.items()},
        rng=random.Random(1),
        clock=lambda: clock[0],
        stats=stats,
    )
    p.on_cluster_changed(ENSEMBLE, [])
    gone = {ENSEMBLE[i] for i in down + readonly}
    p.on_cluster_changed([n for n in ENSEMBLE if n not in gone], [ENSEMBLE[i] for i in readonly])
    return p


@pytest.mark.parametrize(
    ("down", "readonly", "slow", "expected"),
    [
        pytest.param((0,), (), {}, (1, 2, 3, 0), id="a node down goes last"),
        pytest.param((), (0,), {}, (0, 1, 2, 3), id="a read-only node alone changes nothing"),
        pytest.param((), (), {0: 1}, (1, 2, 3, 0), id="a slow node goes after the live ones"),
        pytest.param((), (), {0: 1, 1: 2}, (2, 3, 0, 1), id="slow nodes fewer pending first"),
        pytest.param((), (), {0: 2, 1: 1}, (2, 3, 1, 0), id="slow nodes sorted by pending"),
        pytest.param((0, 1), (), {}, (2, 3, 0, 1), id="two nodes down keep their order"),
        pytest.param((0,), (1,), {}, (2, 3, 1, 0), id="read-only before down"),
        pytest.param((1,), (), {0: 1}, (2, 3, 0, 1), id="slow before down"),
        pytest.param((0,), (1,), {2: 1}, (3, 1, 2, 0), id="read-only, then slow, then down"),
    ],
)
def test_upstream_reorder_cases(
    down: tuple[int, ...],
    readonly: tuple[int, ...],
    slow: dict[int, int],
    expected: tuple[int, ...],
) -> None:
    """The classes sort writable, read-only, slow (fewer pending first), unavailable."""
    p = policy(down=down, readonly=readonly)
    for index in slow:
        p.register_slow_bookie(ENSEMBLE[index], 0)
    pending = {str(ENSEMBLE[i]): n for i, n in slow.items()}
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET, pending_requests=pending) == expected


def test_down_nodes_with_failure_history_keep_their_order() -> None:
    """Failure history does not reorder nodes that are down: they go last, as listed."""
    p = policy(down=(1, 2))
    history = {str(B1): 5, str(B2): 1}
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET, history) == (0, 3, 1, 2)


def test_writable_nodes_with_failures_go_earlier_failure_first() -> None:
    """Among writable nodes with failures, the one whose last failure is older comes first."""
    p = policy(down=(3,))
    history = {str(B0): 7, str(B1): 3}
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET, history) == (2, 1, 0, 3)


def test_pending_requests_threshold_moves_the_least_busy_first() -> None:
    """Threshold 10, pending {20, 7, 1, 5}: node 2 moves to the front, nothing else changes."""
    stats = MemoryStats()
    p = policy(readReorderThresholdPendingRequests=10, stats=stats)
    pending = {str(n): c for n, c in zip(ENSEMBLE, (20, 7, 1, 5), strict=True)}
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET, pending_requests=pending) == (2, 0, 1, 3)
    assert stats.counters[READ_REQUESTS_REORDERED] == 1


def test_pending_gap_below_threshold_changes_nothing() -> None:
    """The first node is only 9 requests busier than the best: no move."""
    p = policy(readReorderThresholdPendingRequests=10)
    pending = {str(n): c for n, c in zip(ENSEMBLE, (10, 7, 1, 5), strict=True)}
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET, pending_requests=pending) == WRITE_SET


def test_slow_node_outside_the_write_set_does_not_reorder() -> None:
    """#4478: only the write set's members count; the counter stays at 0."""
    stats = MemoryStats()
    p = policy(stats=stats)
    p.register_slow_bookie(B3, 0)
    assert p.reorder_read_sequence(ENSEMBLE, (0, 1, 2)) == (0, 1, 2)
    assert stats.counters[READ_REQUESTS_REORDERED] == 0


def test_slow_marks_expire_with_the_failure_history_period() -> None:
    """bookieFailureHistoryExpirationMSec later, a slow node is ordinary again."""
    now = [0.0]
    p = policy(now=now, bookieFailureHistoryExpirationMSec=1000)
    p.register_slow_bookie(B0, 0)
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET) == (1, 2, 3, 0)
    now[0] = 1.5
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET) == WRITE_SET


def test_slow_nodes_are_not_registered_while_a_threshold_is_set() -> None:
    """With a pending-requests threshold, slowness is judged by pending requests instead."""
    p = policy(readReorderThresholdPendingRequests=5)
    p.register_slow_bookie(B0, 0)
    assert len(p.slow) == 0


def test_reordering_can_be_switched_off() -> None:
    """reorderReadSequenceEnabled=false: the write set comes back as given."""
    p = policy(down=(0,), reorderReadSequenceEnabled=False)
    assert p.reorder_read_sequence(ENSEMBLE, WRITE_SET) == WRITE_SET


def test_lac_reads_append_the_missing_indices() -> None:
    """LAC reads: the reordered write set, then every other ensemble index in order."""
    p = policy(down=(0,))
    assert p.reorder_read_lac_sequence(ENSEMBLE, (0, 1)) == (1, 0, 2, 3)


def test_default_policy_never_reorders_but_completes_lac() -> None:
    """Upstream's default policy: reads as given; LAC reads get the missing indices."""
    p = default_policy(WHERE)
    p.on_cluster_changed([B1, B2, B3], [])
    assert p.reorder_read_sequence(ENSEMBLE, (0, 1)) == (0, 1)
    assert p.reorder_read_lac_sequence(ENSEMBLE, (0, 1)) == (0, 1, 2, 3)


def test_random_reordering_shuffles_within_classes_only() -> None:
    """ensembleRandomReadReordering: writable members in any order, the down one still last."""
    orders = set()
    for seed in range(30):
        p = policy(down=(3,), ensembleRandomReadReordering=True)
        p.rng.seed(seed)
        order = p.reorder_read_sequence(ENSEMBLE, WRITE_SET)
        assert order[-1] == 3
        orders.add(order)
    assert len(orders) > 1


# -- region-aware -------------------------------------------------------------------------------

L1, R1, L2, R2, L3, R3 = SIX = ids("l1", "r1", "l2", "r2", "l3", "r3")
SIX_WHERE = {n: ("/dc1/a" if str(n).startswith("l") else "/dc2/a") for n in SIX}


def region(local: str | None) -> RegionAwarePolicy:
    p = RegionAwarePolicy(
        resolver={str(k): v for k, v in SIX_WHERE.items()},
        rng=random.Random(1),
        local_location=local,
    )
    p.on_cluster_changed(SIX, [])
    return p


def test_region_aware_reads_two_local_then_one_remote() -> None:
    """Local region dc1: local, local, remote, local, then the remaining remotes."""
    assert region("/dc1/a").reorder_read_sequence(SIX, range(6)) == (0, 2, 1, 4, 3, 5)


def test_region_aware_client_outside_the_ensemble_regions_changes_nothing() -> None:
    """A client in dc9: every member is remote, the first remote stays first."""
    assert region("/dc9/a").reorder_read_sequence(SIX, range(6)) == tuple(range(6))


def test_region_aware_without_a_local_region_reads_like_rack_aware() -> None:
    """Unknown local region: the rack-aware fast path applies (nothing unavailable)."""
    assert region(None).reorder_read_sequence(SIX, (1, 0, 3)) == (1, 0, 3)


def test_remote_failures_rank_after_remote_without_failures() -> None:
    """Classes in order LOCAL, LOCAL_FAIL, REMOTE, REMOTE_FAIL, READ_ONLY, SLOW, UNAVAILABLE."""
    order, changed = reorder_reads(
        SIX,
        range(6),
        writable=set(SIX),
        readonly=set(),
        slow=SlowNodes(expiry_ms=1000),
        failure_history={L1: 3, R1: 2},
        pending={},
        region_of=lambda n: SIX_WHERE[n].split("/")[1],
        local_region="dc1",
    )
    # sorted: L2 L3 L1(fail) | R2 R3 R1(fail); first remote R2 moves to slot 2
    assert changed and order == (2, 4, 3, 0, 5, 1)
    assert [c.name for c in ReadClass] == [
        "LOCAL",
        "LOCAL_FAIL",
        "REMOTE",
        "REMOTE_FAIL",
        "READ_ONLY",
        "SLOW",
        "UNAVAILABLE",
    ]
