"""Property (issue 40 part 6): no planned replica lands on a broker whose log dirs are all
cordoned (KIP-1066's placer rule), and a plan reaching its goals moves at least its lower
bound."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from tests.allocation.test_lower_bound import _plan, _reached
from tests.allocation.test_planner import PROPERTIES, Case, cases
from trimtab.cli.rebalance_cordon import cordoned_brokers
from trimtab.cluster import NodeId
from trimtab.systems.kafka.readers import LogDirs


@PROPERTIES
@given(cases(), st.data())
def test_no_replica_lands_on_an_all_cordoned_broker(case: Case, data: st.DataObject) -> None:
    count = len(case.cluster)
    ids = {NodeId(str(i)): i for i in range(count)}
    dirs = LogDirs(dirs={i: tuple(f"/d{k}" for k in range(1 + i % 2)) for i in range(count)})
    closed = data.draw(st.sets(st.integers(0, count - 1), max_size=max(0, count - 3)))
    specs = [f"{i}:{d}" for i in sorted(closed) for d in dirs.dirs[i]]
    cordoned = cordoned_brokers(specs, dirs, ids)
    assert sorted(cordoned) == sorted(NodeId(str(i)) for i in closed)
    drain = [*case.drain, *(n for n in cordoned if n not in case.drain)]
    case = replace(case, drain=drain, max_moves=10**6)
    plan = _plan(case, None)
    assert not any(m.target in cordoned for m in plan.moves)
    if plan.balancing is not None:
        assert not any(m.target in cordoned for m in plan.balancing.moves)
    if _reached(case, plan):  # the bound is for plans that reach their goals
        assert len(plan.moves) >= plan.lower_bound_moves
