"""Redpanda's ``partition_balancer_planner_test.cc``, case by case, under upstream's names.

Each test builds upstream's scenario with :class:`PlannerFixture` (same disk sizes, budget,
timeout and rack awareness) and checks upstream's expectations: the violations reported, the
number of partitions reassigned (``reassignments.size()`` = ``len(plan.after)``) and their new
replica sets. Departures on purpose are asserted as trimtab's behaviour with the reason.
"""

from __future__ import annotations

from tests.allocation.planner_fixture import (
    PARTITION_SIZE,
    MiB,
    PlannerFixture,
    n,
    new_nodes,
    violations,
)
from trimtab.allocation.balance_plan import InFlight


class TestPartitionBalancerPlanner:
    """``partition_balancer_planner_test.cc`` (redpanda @1c6cff34)."""

    def test_stable(self) -> None:
        """Nothing wrong: no violation, no reassignment."""
        f = PlannerFixture()
        f.allocator_register_nodes(4)
        f.create_topic("topic-1", 1, 3)
        plan = f.plan()
        assert violations(plan) == (set(), set())
        assert plan.after == ()

    def test_node_down(self) -> None:
        """The down node's replica goes to the only node without one."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(unavailable={0})
        assert violations(plan) == ({0}, set())
        assert len(plan.after) == 1 and new_nodes(plan) == {1, 2, 3}
        assert plan.counts_by_reason["node_unavailable"] == 1

    def test_no_quorum_for_partition(self) -> None:
        """Two of three replicas down: no quorum, nothing moves; trimtab also says why."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(unavailable={0, 1})
        assert plan.after == ()
        assert {u.why.split(":")[0] for u in plan.unfixable} == {"no quorum"}

    def test_node_down_and_node_is_full_but_there_is_empty(self) -> None:
        """The emptier disk wins over a nearly full one (the disk level)."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(2)
        plan = f.plan(nearly_full={3}, unavailable={0})
        assert violations(plan) == ({0}, set())
        assert len(plan.after) == 1 and new_nodes(plan) == {1, 2, 4}

    def test_node_down_and_node_is_nearly_full(self) -> None:
        """A nearly full node still takes a drained replica (drains use the 95 % limit)."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(nearly_full={3}, unavailable={0})
        assert violations(plan) == ({0}, set())
        assert len(plan.after) == 1 and new_nodes(plan) == {1, 2, 3}

    def test_node_down_and_node_is_full(self) -> None:
        """The only free node is full: nothing moves, and the replica is reported."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(full={3}, unavailable={0})
        assert violations(plan) == ({0}, {3})
        assert plan.after == ()
        # upstream counts one failed action; trimtab also says node 3 is full with nothing of
        # the assignment on it to move
        assert [(u.reason, u.node) for u in plan.unfixable] == [
            ("node_unavailable", n(0)),
            ("disk_full", n(3)),
        ]

    def test_move_from_full_node(self) -> None:
        """A replica leaves the full node for the empty one."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(full={0})
        assert violations(plan) == (set(), {0})
        assert len(plan.after) == 1 and new_nodes(plan) == {1, 2, 3}

    def test_move_multiple_partitions_batched_node_down(self) -> None:
        """Three partitions on the down node, a budget of two: two move, one is left."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 3, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(unavailable={0})
        assert violations(plan) == ({0}, set())
        assert len(plan.after) == 2
        assert all(new_nodes(plan, k) == {1, 2, 3} for k in range(2))
        assert [u.why.split(":")[0] for u in plan.unfixable] == ["left for a later plan"]

    def test_move_multiple_partitions_batched_node_overfill(self) -> None:
        """Three full nodes and three empty ones: two partitions move whole to the empty ones."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 3, 3)
        f.allocator_register_nodes(3)
        plan = f.plan(full={0, 1, 2})
        assert violations(plan) == (set(), {0, 1, 2})
        assert len(plan.after) == 2
        assert all(new_nodes(plan, k) == {3, 4, 5} for k in range(2))

    def test_one_node_down_one_node_full(self) -> None:
        """One replica leaves the down node, another the full one."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(2)
        plan = f.plan(full={1}, unavailable={0})
        assert violations(plan) == ({0}, {1})
        assert len(plan.after) == 1 and new_nodes(plan) == {2, 3, 4}

    def test_move_part_of_replicas(self) -> None:
        """Three full nodes, two free: the two most filled nodes give their replica."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(2)
        plan = f.plan(full={0, 1, 2}, used_extra={1: 1 * MiB, 2: 2 * MiB})
        assert violations(plan) == (set(), {0, 1, 2})
        assert len(plan.after) == 1 and new_nodes(plan) == {0, 3, 4}

    def test_movement_from_more_filled_node(self) -> None:
        """The more filled node goes first; departure: its largest partitions go, not its
        smallest.

        Upstream moves partitions 1 and 2 (10 MiB less 1 and 2 KiB), smallest first. trimtab
        moves the partition that frees the most first (the issue's "largest benefit first":
        the fewest moves to get under the limit), so partitions 0 and 1.
        """
        f = PlannerFixture()
        f.allocator_register_nodes(1)
        f.create_topic("topic-1", 3, 1)
        f.allocator_register_nodes(1)
        f.create_topic("topic-2", 1, 1)
        f.allocator_register_nodes(1)
        assert f.nodes_of("topic-1", 0) == {0} and f.nodes_of("topic-2", 0) == {1}
        f.put("topic-1", 1, [0], PARTITION_SIZE - 1024)
        f.put("topic-1", 2, [0], PARTITION_SIZE - 2048)
        plan = f.plan(full={0, 1}, used_extra={0: 1 * MiB})
        assert violations(plan) == (set(), {0, 1})
        assert len(plan.after) == 2
        assert all(a.topic == "topic-1" and set(a.nodes) == {n(2)} for a in plan.after)
        assert sorted(a.partition for a in plan.after) == [0, 1]  # upstream: [1, 2]

    def test_lot_of_partitions(self) -> None:
        """2000 partitions on the down node, a budget of 50: 50 move, split evenly 25/25."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 2000, 3)
        f.allocator_register_nodes(2)
        plan = f.plan(unavailable={0}, max_moves=50, partition_size=10 * 1024)
        assert violations(plan) == ({0}, set())
        assert len(plan.after) == 50
        targets = [int(m.target) for m in plan.moves]
        assert all(len(a.nodes) == 3 and n(0) not in a.nodes for a in plan.after)
        assert targets.count(3) == targets.count(4) == 25

    def test_node_cancelation(self) -> None:
        """The move's target goes down before the move ends: the move is cancelled."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(unavailable={0})
        assert len(plan.after) == 1 and new_nodes(plan) == {1, 2, 3}
        moving = InFlight(
            "topic-1", 0, plan.before[0].nodes, plan.after[0].nodes, "node_unavailable"
        )
        f.apply(plan)
        again = f.plan(unavailable={0, 3}, in_flight=[moving])
        assert again.after == ()
        assert [(c.topic, c.partition) for c in again.cancelled] == [("topic-1", 0)]

    def test_rack_awareness(self) -> None:
        """The drained replica goes to the rack no replica uses (node 4), not to node 3."""
        f = PlannerFixture()
        f.allocator_register_nodes(3, ["rack_1", "rack_2", "rack_3"])
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(2, ["rack_3", "rack_4"])
        plan = f.plan(unavailable={0}, used_extra={4: 10 * MiB})
        assert violations(plan) == ({0}, set())
        assert len(plan.after) == 1 and new_nodes(plan) == {1, 2, 4}

    def test_interaction_with_maintenance(self) -> None:
        """Departure: a node in maintenance is never a target, so nothing moves.

        Upstream moves the down node's replica to the node in maintenance (its test comment
        says the planner "should stall" but it asserts the move). trimtab follows the issue:
        a node in maintenance keeps its replicas and takes none (it is about to restart); the
        replica is reported as unfixable with the reason.
        """
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(unavailable={0}, maintenance={3})
        assert violations(plan) == ({0}, set())
        assert plan.after == ()  # upstream: 1 reassignment to {1, 2, 3}
        assert [u.reason for u in plan.unfixable] == ["node_unavailable"]
        assert "in maintenance" in plan.unfixable[0].why

    def test_interaction_with_decommission_1(self) -> None:
        """No move to the decommissioning node; the down node's replica is a failed action."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(1)
        plan = f.plan(unavailable={0}, decommissioning={3})
        assert violations(plan) == ({0}, set())
        assert plan.after == () and len(plan.unfixable) == 1

    def test_interaction_with_decommission_2(self) -> None:
        """The decommissioning node's replica goes to the one node neither down nor used."""
        f = PlannerFixture()
        f.allocator_register_nodes(3)
        f.create_topic("topic-1", 1, 3)
        f.allocator_register_nodes(2)
        plan = f.plan(unavailable={3}, decommissioning={0})
        assert violations(plan) == ({3}, set())
        assert len(plan.after) == 1 and new_nodes(plan) == {1, 2, 4}
        assert plan.cancelled == () and plan.unfixable == ()

    def test_state_ntps_with_broken_rack_constraint(self) -> None:
        """The partition with two replicas in rack_B is the one repaired; afterwards no
        partition shares a rack (upstream checks its list of such partitions)."""
        f = PlannerFixture()
        f.allocator_register_nodes(4, ["rack_A", "rack_B", "rack_B", "rack_C"])
        f.create_topic_on("topic-1", [[0, 1, 2], [0, 1, 3]])
        assert f.broken_racks() == {("topic-1", 0)}
        plan = f.plan()
        assert plan.counts_by_reason["rack_constraint_repair"] == 1
        repaired = [m for m in plan.moves if m.reason == "rack_constraint_repair"]
        assert [(m.partition, m.source in {n(1), n(2)}) for m in repaired] == [(0, True)]
        f.apply(plan)
        assert f.broken_racks() == set()

    def test_rack_awareness_repair(self) -> None:
        """Two partitions on racks A, B, B; rack C joins: both get one replica in each rack."""
        f = PlannerFixture()
        f.allocator_register_nodes(3, ["rack_A", "rack_B", "rack_B"])
        f.create_topic("topic-1", 2, 3)
        f.allocator_register_nodes(1, ["rack_C"])
        plan = f.plan()
        assert violations(plan) == (set(), set())
        assert len(plan.after) == 2
        racks = {"0": "A", "1": "B", "2": "B", "3": "C"}
        assert all({racks[x] for x in a.nodes} == {"A", "B", "C"} for a in plan.after)
        assert plan.cancelled == () and plan.unfixable == ()
        assert plan.counts_by_reason["rack_constraint_repair"] == 2

    def test_balancing_modes(self) -> None:
        """node_add: no violation reported and no repair (full disk, down node, broken racks).

        Departure: upstream's node_add balances counts only onto nodes it saw join; trimtab
        sees a snapshot, not the join, so node_add balances counts whenever they are uneven
        and moves replicas to the empty rack_C node. With the counts step off too (mode
        ``off``), nothing moves, as upstream's node_add does here.
        """
        f = PlannerFixture()
        f.allocator_register_nodes(3, ["rack_A", "rack_B", "rack_B"])
        f.create_topic("topic-1", 2, 3)
        f.allocator_register_nodes(1, ["rack_C"])
        plan = f.plan(full={2}, unavailable={1}, mode="node_add")
        assert violations(plan) == (set(), set())
        assert set(plan.counts_by_reason) >= {"partition_count_rebalancing"}
        assert all(m.reason == "partition_count_rebalancing" for m in plan.moves)
        off = f.plan(full={2}, unavailable={1}, mode="off")
        assert violations(off) == (set(), set())
        assert off.after == () and off.cancelled == () and off.unfixable == ()
