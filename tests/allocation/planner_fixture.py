"""Redpanda's ``partition_balancer_planner_fixture.h`` for trimtab's planner.

Upstream's numbers: nodes of 4 cores and 200 MiB of disk, 150 MiB free ("unfilled"), 41 MiB
("nearly full", 79.5 % used), 5 MiB ("full", 97.5 %); partitions of 10 MiB; unavailable nodes
last seen 5 minutes ago against a 1 minute timeout; at most 2 reassignments per plan; rack
awareness on; mode continuous. Topics are created by trimtab's allocator on the nodes
registered so far, as upstream creates them with its own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from trimtab.allocation import AllocationRequest, PartitionAssignment, plan_allocations
from trimtab.allocation.balance_plan import InFlight, RebalancePlan
from trimtab.allocation.health import NodeStatus
from trimtab.allocation.planner import plan_rebalance
from trimtab.cluster import Capacity, ClusterState, Node, NodeHealth, NodeId
from trimtab.config import AllocationConfig

MiB = 2**20
NODE_SIZE = 200 * MiB
FULL_FREE = 5 * MiB
NEARLY_FULL_FREE = 41 * MiB
NOT_FULL_FREE = 150 * MiB
PARTITION_SIZE = 10 * MiB
NOW = 1_800_000_000.0
TIMEOUT_S = 60
LAST_SEEN_S = 5 * 60


def n(i: int) -> NodeId:
    return NodeId(str(i))


@dataclass
class PlannerFixture:
    """Nodes, topics and the health report of one upstream planner test."""

    racks: list[str] = field(default_factory=list)
    assignments: dict[tuple[str, int], PartitionAssignment] = field(default_factory=dict)

    def allocator_register_nodes(self, count: int, racks: Sequence[str] = ()) -> None:
        self.racks += list(racks) or ["rack"] * count

    def cluster(self, free: Mapping[int, int] | None = None) -> ClusterState:
        return ClusterState.of(
            "c",
            [
                Node(
                    id=n(i),
                    location=f"/{rack}",
                    capacity=Capacity(
                        cores=4,
                        memory_bytes=2 * 2**30,
                        disk_total_bytes=NODE_SIZE,
                        disk_free_bytes=(free or {}).get(i, NOT_FULL_FREE),
                        nic_bps=10**9,
                    ),
                )
                for i, rack in enumerate(self.racks)
            ],
        )

    def create_topic(self, name: str, partitions: int, replication_factor: int) -> None:
        request = AllocationRequest(
            topic=name, partitions=partitions, replication_factor=replication_factor
        )
        plan = plan_allocations(self.cluster(), [request], existing=self.assignments.values())
        for a in plan.assignments:
            self.assignments[(a.topic, a.partition)] = replace(a, size_bytes=PARTITION_SIZE)

    def create_topic_on(self, name: str, nodes: Sequence[Sequence[int]]) -> None:
        for p, on in enumerate(nodes):
            self.put(name, p, on)

    def put(
        self, topic: str, partition: int, nodes: Sequence[int], size: int = PARTITION_SIZE
    ) -> None:
        from trimtab.allocation import Replica

        replicas = tuple(Replica(n(i), 0) for i in nodes)
        self.assignments[(topic, partition)] = PartitionAssignment(topic, partition, replicas, size)

    def nodes_of(self, topic: str, partition: int) -> set[int]:
        return {int(x) for x in self.assignments[(topic, partition)].nodes}

    def broken_racks(self) -> set[tuple[str, int]]:
        """Partitions with two replicas in one rack (upstream's
        ``ntps_with_broken_rack_constraint``)."""
        rack = dict(enumerate(self.racks))
        return {
            key
            for key, a in self.assignments.items()
            if len({rack[int(x)] for x in a.nodes}) < len(a.nodes)
        }

    def apply(self, plan: RebalancePlan) -> None:
        """Execute the reassignments (``move_partition_replicas``)."""
        for a in plan.after:
            self.assignments[(a.topic, a.partition)] = a

    def plan(
        self,
        *,
        full: Collection[int] = (),
        nearly_full: Collection[int] = (),
        unavailable: Collection[int] = (),
        maintenance: Collection[int] = (),
        decommissioning: Collection[int] = (),
        used_extra: Mapping[int, int] | None = None,
        mode: str = "continuous",
        max_moves: int = 2,
        in_flight: Sequence[InFlight] = (),
        partition_size: int | None = None,
    ) -> RebalancePlan:
        free = dict.fromkeys(full, FULL_FREE) | dict.fromkeys(nearly_full, NEARLY_FULL_FREE)
        free = {i: free.get(i, NOT_FULL_FREE) for i in range(len(self.racks))}
        for i, extra in (used_extra or {}).items():
            free[i] -= extra
        health = [
            NodeStatus(n(i), NodeHealth.DOWN, down_since=NOW - LAST_SEEN_S) for i in unavailable
        ] + [NodeStatus(n(i), NodeHealth.MAINTENANCE) for i in maintenance]
        config = AllocationConfig(
            enable_rack_awareness=True, node_availability_timeout_sec=TIMEOUT_S
        )
        held = list(self.assignments.values())
        if partition_size is not None:
            held = [replace(a, size_bytes=partition_size) for a in held]
        return plan_rebalance(
            self.cluster(free),
            held,
            config,
            health=health,
            drain=[n(i) for i in decommissioning],
            now=NOW,
            mode=mode,
            max_moves=max_moves,
            in_flight=in_flight,
        )


def new_nodes(plan: RebalancePlan, k: int = 0) -> set[int]:
    """The nodes of the ``k``-th reassigned partition after the plan."""
    return {int(x) for x in plan.after[k].nodes}


def violations(plan: RebalancePlan) -> tuple[set[int], set[int]]:
    """(unavailable nodes, full nodes) the plan reports, as upstream's ``check_violations``."""
    return {int(x) for x in plan.unavailable}, {int(x) for x in plan.full}
