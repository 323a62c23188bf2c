"""Log dirs within a broker (issue 40 part 6): cordoned dirs (KIP-1066) and emptying a dir,
the engine alone (:mod:`trimtab.allocation.log_dirs`) and with the planner, by property."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from tests.allocation.test_lower_bound import CONFIG, _reached
from tests.allocation.test_planner import PROPERTIES, Case, cases
from trimtab.allocation.health import NodeStatus
from trimtab.allocation.log_dirs import DirMove, LogDir, closed_nodes, empty_log_dirs
from trimtab.allocation.lower_bound import LowerBounds, lower_bounds
from trimtab.allocation.planner import plan_rebalance
from trimtab.cluster import NodeHealth, NodeId
from trimtab.config.redpanda import BalancerMode

GB = 10**9
N3 = NodeId("3")


def test_the_worked_example_of_the_module() -> None:
    """Broker 3: /d1 (30 and 10 GB) emptied, /d2 with 20 GB free: the 30 GB replica leaves
    the broker, the 10 GB one moves to /d2."""
    dirs = [
        LogDir(N3, "/d1", 100 * GB, 40 * GB, replicas={("a", 0): 30 * GB, ("b", 0): 10 * GB}),
        LogDir(N3, "/d2", 100 * GB, 80 * GB),
    ]
    inside, leave = empty_log_dirs(dirs, {(N3, "/d1")})
    assert inside == [DirMove("b", 0, N3, "/d1", "/d2", 10 * GB)]
    assert leave == [("a", 0, N3)]


def test_a_cordoned_dir_takes_nothing_and_unknown_capacity_picks_the_least_used() -> None:
    dirs = [
        LogDir(N3, "/d1", replicas={("a", 0): 5, ("a", 1): 3}),
        LogDir(N3, "/d2", used_bytes=1, cordoned=True),
        LogDir(N3, "/d3", used_bytes=7),
        LogDir(N3, "/d4", used_bytes=4),
    ]
    inside, leave = empty_log_dirs(dirs, {(N3, "/d1")})
    assert leave == []
    assert [(m.topic, m.partition, m.target) for m in inside] == [("a", 0, "/d4"), ("a", 1, "/d3")]


def test_a_broker_is_closed_only_when_every_dir_is_cordoned() -> None:
    dirs = [
        LogDir(N3, "/d1", cordoned=True),
        LogDir(N3, "/d2", cordoned=True),
        LogDir(NodeId("4"), "/d1", cordoned=True),
        LogDir(NodeId("4"), "/d2"),
    ]
    assert closed_nodes(dirs) == {N3: ("/d1", "/d2")}


@st.composite
def jbod_cases(draw: st.DrawFn) -> tuple[Case, list[LogDir], set[tuple[NodeId, str]]]:
    """A planner case with each node's replicas spread over 1–3 log dirs, some cordoned,
    some with a capacity, and some dirs to empty."""
    case = draw(cases())
    dirs: list[LogDir] = []
    for node in case.cluster:
        count = draw(st.integers(1, 3))
        held = [a for a in case.held if node.id in a.nodes]
        split: list[dict[tuple[str, int], int]] = [{} for _ in range(count)]
        for a in held:
            split[draw(st.integers(0, count - 1))][(a.topic, a.partition)] = a.size_bytes
        for k, replicas in enumerate(split):
            total = draw(st.none() | st.integers(0, 4 * max(1, sum(replicas.values()))))
            cordoned = draw(st.booleans())
            used = sum(replicas.values())
            dirs.append(LogDir(node.id, f"/d{k}", total, used, cordoned, replicas))
    emptied = {(d.node, d.path) for d in dirs if draw(st.booleans()) and d.replicas}
    return case, dirs, emptied


@PROPERTIES
@given(jbod_cases())
def test_no_replica_lands_on_a_cordoned_dir_or_a_closed_broker(
    drawn: tuple[Case, list[LogDir], set[tuple[NodeId, str]]],
) -> None:
    """Property (issue 40 part 6): no planned replica goes to a cordoned or emptied dir, nor
    to a broker whose dirs are all cordoned; the bound is the planner's, and a plan that
    reaches its goals moves at least lower_bound_moves."""
    case, dirs, emptied = drawn
    case = replace(case, max_moves=10**6)
    dirs = [replace(d, cordoned=d.cordoned or (d.node, d.path) in emptied) for d in dirs]
    closed = closed_nodes(dirs)
    stated = {s.node for s in case.health}
    health = [
        *case.health,
        *(NodeStatus(n, NodeHealth.MAINTENANCE) for n in closed if n not in stated),
    ]
    inside, leave = empty_log_dirs(dirs, emptied)
    shut = {(d.node, d.path) for d in dirs if d.cordoned}
    assert all((m.node, m.target) not in shut for m in inside)
    assert len(inside) + len(leave) == sum(
        len(d.replicas) for d in dirs if (d.node, d.path) in emptied
    )
    config = replace(CONFIG, balancer_mode=BalancerMode(case.mode))
    args = {
        "health": health,
        "drain": case.drain,
        "now": 0.0,
        "mode": case.mode,
        "rack_aware": case.rack_aware,
        "evict": leave,
    }
    plan = plan_rebalance(case.cluster, case.held, config, max_moves=case.max_moves, **args)
    assert all(m.target not in closed for m in plan.moves)
    bound = lower_bounds(case.cluster, case.held, config, **args)
    assert bound == LowerBounds(
        plan.lower_bound_moves, plan.lower_bound_bytes, plan.lower_bound_terms
    )
    if _reached(case, plan):
        assert len(plan.moves) >= plan.lower_bound_moves
        assert plan.bytes_moved >= plan.lower_bound_bytes
        left = {(t, p, n) for t, p, n in leave}
        after = {(a.topic, a.partition): a.nodes for a in plan.after}
        assert all(n not in after.get((t, p), (n,)) for t, p, n in left)
