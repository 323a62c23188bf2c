"""Dominant Resource Fairness and the dominant share as a node score."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from trimtab.allocation.drf import (
    Resources,
    dominant_share,
    dominant_share_score,
    drf,
    least_dominant_share,
)
from trimtab.cluster import Capacity, NodeId
from trimtab.constraints import Constraints, choose

GB = 10**9
PAPER_POOL = Resources(cores=9, memory_bytes=18 * GB)
A = Resources(cores=1, memory_bytes=4 * GB)
B = Resources(cores=3, memory_bytes=1 * GB)


def test_the_papers_example_gives_3_and_2_tasks() -> None:
    """9 CPU / 18 GB, tasks ⟨1, 4 GB⟩ and ⟨3, 1 GB⟩: A runs 3 tasks, B 2, both at share 2/3."""
    result = drf(PAPER_POOL, {"A": A, "B": B})
    assert dict(result.tasks) == {"A": 3, "B": 2}
    assert result.dominant_shares["A"] == pytest.approx(2 / 3)
    assert result.dominant_shares["B"] == pytest.approx(2 / 3)
    assert result.used == Resources(cores=9, memory_bytes=14 * GB)


def test_weights_scale_the_dominant_share() -> None:
    """Weighted DRF: a tenant of weight 2 gets twice the dominant share before others."""
    pool = Resources(cores=12, memory_bytes=12 * GB)
    result = drf(
        pool, {"heavy": Resources(cores=1), "light": Resources(cores=1)}, weights={"heavy": 2}
    )
    assert dict(result.tasks) == {"heavy": 8, "light": 4}


def test_the_paper_stops_at_the_first_blocked_task_unless_asked_to_go_on() -> None:
    """Progressive filling stops when the lowest-share tenant cannot fit; going on lets a
    tenant whose tasks still fit use the rest."""
    pool = Resources(cores=10, memory_bytes=10 * GB)
    demands = {"big": Resources(memory_bytes=6 * GB), "small": Resources(cores=1)}
    assert dict(drf(pool, demands).tasks) == {"big": 1, "small": 6}  # big blocked at 0.6
    more = drf(pool, demands, stop_at_first_blocked=False)
    assert dict(more.tasks) == {"big": 1, "small": 10}


def test_max_tasks_bounds_a_tenant() -> None:
    """A tenant with no more work leaves the rest to the others."""
    result = drf(PAPER_POOL, {"A": A, "B": B}, max_tasks={"A": 1})
    assert dict(result.tasks) == {"A": 1, "B": 2}


@pytest.mark.parametrize(
    ("demands", "message"),
    [({"x": Resources()}, "must need some resource"), ({"x": A}, "weight must be above 0")],
    ids=["a task needing nothing", "a weight of zero"],
)
def test_bad_tenants_are_refused(demands: dict[str, Resources], message: str) -> None:
    """Tasks that need nothing and non-positive weights are errors, not infinite loops."""
    weights = {"x": 0.0} if "weight" in message else None
    with pytest.raises(ValueError, match=message):
        drf(PAPER_POOL, demands, weights=weights)


def test_dominant_share_is_the_largest_used_fraction() -> None:
    """max over resources of used/capacity; a need for a resource the pool lacks is infinite."""
    assert dominant_share(Resources(cores=3, memory_bytes=9 * GB), PAPER_POOL) == 0.5
    assert dominant_share(Resources(nic_bps=1), PAPER_POOL) == float("inf")


def test_the_node_score_prefers_the_lowest_dominant_share_after_the_work() -> None:
    """A memory-heavy task goes to the node with memory to spare, not the one with cores."""
    demand = Resources(cores=1, memory_bytes=8 * GB)
    cpu_rich = Resources.of(Capacity(cores=32, memory_bytes=16 * GB, disk_total_bytes=0, nic_bps=1))
    mem_rich = Resources.of(Capacity(cores=8, memory_bytes=64 * GB, disk_total_bytes=0, nic_bps=1))
    assert dominant_share_score(Resources(), demand, mem_rich) > dominant_share_score(
        Resources(), demand, cpu_rich
    )
    assert dominant_share_score(Resources(memory_bytes=10 * GB), demand, cpu_rich) == 0

    @dataclass
    class Ctx:
        def load_of(self, node: NodeId) -> Resources:
            return Resources()

        def capacity_of(self, node: NodeId) -> Resources:
            return cpu_rich if node == "cpu" else mem_rich

    rules: Constraints[Ctx] = Constraints(levels=((least_dominant_share(demand),),))
    assert choose([NodeId("cpu"), NodeId("mem")], rules, Ctx(), random.Random(0)) == "mem"
