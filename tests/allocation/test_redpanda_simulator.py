"""Redpanda's ``partition_balancer_simulator_test.cc``, under upstream's names.

Upstream's fixture runs its planner (continuous mode, 50 concurrent moves, soft 80 % and hard
95 % disk limits, rack awareness on, 1,000 partitions per core) against a simulated cluster:
nodes start 3–5 % full, a topic's partitions get sizes around its mean, and a plan's moves
copy data tick by tick. :class:`Simulator` keeps all of that but the ticks: trimtab executes
each plan whole before planning again, so ``run_to_completion(n)`` means at most ``n``
reassignments and cancellations until a plan has nothing to do. Checks are upstream's:
replica counts within 1 % of the capacity share, each topic within 3 %, and every node pair
sharing a number of partitions within mean ± 3·√mean (overall and per topic).

Upstream draws from an unseeded generator; here every random draw is seeded.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from dataclasses import dataclass, field, replace

from trimtab.allocation import AllocationRequest, PartitionAssignment, plan_allocations
from trimtab.allocation.planner import plan_rebalance
from trimtab.cluster import Capacity, ClusterState, Node, NodeId
from trimtab.config import AllocationConfig

MiB, GiB = 2**20, 2**30
PRODUCE_BATCH = MiB
CONFIG = AllocationConfig(
    topic_partitions_per_shard=1000,
    topic_partitions_reserve_shard0=0,
    enable_rack_awareness=True,
    concurrent_moves=50,
)


@dataclass
class SimNode:
    cores: int
    total: int
    initial: int  # bytes used by other files
    rack: str | None


@dataclass
class Simulator:
    """Upstream's ``partition_balancer_sim_fixture`` without the recovery ticks."""

    seed: int = 0
    nodes: dict[int, SimNode] = field(default_factory=dict)
    assignments: dict[tuple[str, int], PartitionAssignment] = field(default_factory=dict)
    draining: set[int] = field(default_factory=set)
    runs: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def add_node(self, i: int, total: int, cores: int = 4, rack: str | None = None) -> None:
        initial = self.rng.randint(3 * total // 100, 5 * total // 100)
        self.nodes[i] = SimNode(cores, total, initial, rack)

    def used(self) -> dict[int, int]:
        used = {i: node.initial for i, node in self.nodes.items()}
        for a in self.assignments.values():
            for node in a.nodes:
                used[int(node)] += a.size_bytes
        return used

    def cluster(self, *, with_partitions: bool) -> ClusterState:
        """The inventory; its used bytes count the partitions for the planner (which takes
        the known sizes out again) and not for the allocator (which adds them)."""
        used = self.used() if with_partitions else {i: n.initial for i, n in self.nodes.items()}
        return ClusterState.of(
            "sim",
            [
                Node(
                    id=NodeId(str(i)),
                    location=f"/{node.rack or f'node-{i}'}",
                    capacity=Capacity(
                        cores=node.cores,
                        memory_bytes=2 * GiB,
                        disk_total_bytes=node.total,
                        disk_free_bytes=node.total - used[i],
                        nic_bps=10**9,
                    ),
                )
                for i, node in sorted(self.nodes.items())
            ],
        )

    def add_topic(
        self, name: str, partitions: int, rf: int, mean: int, stddev: float | None = None
    ) -> None:
        """Created by the allocator; sizes around ``mean`` (upstream's produce model)."""
        request = AllocationRequest(topic=name, partitions=partitions, replication_factor=rf)
        plan = plan_allocations(
            self.cluster(with_partitions=False),
            [request],
            CONFIG,
            existing=self.assignments.values(),
            seed=self.rng.randrange(2**32),
        )
        if stddev is None:
            stddev = PRODUCE_BATCH * math.sqrt(mean / PRODUCE_BATCH)
        for a in plan.assignments:
            size = mean + max(-mean, int(stddev * self.rng.gauss(0, 1)))
            self.assignments[(a.topic, a.partition)] = replace(a, size_bytes=size)

    def total_replicas(self) -> int:
        return sum(len(a.replicas) for a in self.assignments.values())

    def run_to_completion(self, max_actions: int) -> bool:
        """Plan and execute until a plan moves nothing; False after ``max_actions``."""
        actions = 0
        while actions <= max_actions:
            plan = plan_rebalance(
                self.cluster(with_partitions=True),
                list(self.assignments.values()),
                CONFIG,
                drain=[NodeId(str(i)) for i in sorted(self.draining)],
                mode="continuous",
                seed=self.runs,
            )
            self.runs += 1
            if not plan.after and not plan.cancelled:
                return True
            actions += len(plan.after) + len(plan.cancelled)
            for a in plan.after:
                self.assignments[(a.topic, a.partition)] = a
        return False

    # -- upstream's checks ---------------------------------------------------------------------

    def replicas_on(self, i: int, topic: str | None = None) -> int:
        node = NodeId(str(i))
        return sum(
            node in a.nodes for a in self.assignments.values() if topic is None or a.topic == topic
        )

    def validate_even_replica_distribution(self) -> None:
        total = self.total_replicas()
        whole = sum(n.cores for n in self.nodes.values())
        for i, node in self.nodes.items():
            expected = math.floor(total * node.cores / whole)
            skew = math.ceil(0.01 * expected)
            assert expected - skew <= self.replicas_on(i) <= expected + skew, (i, expected)

    def validate_even_topic_distribution(self) -> None:
        whole = sum(n.cores for n in self.nodes.values())
        for topic in {t for t, _ in self.assignments}:
            total = sum(len(a.replicas) for a in self.assignments.values() if a.topic == topic)
            if total < len(self.nodes):
                continue
            for i, node in self.nodes.items():
                expected = math.ceil(total * node.cores / whole)
                skew = math.ceil(0.03 * expected)
                on = self.replicas_on(i, topic)
                assert expected - skew <= on <= expected + skew, (topic, i, on, expected)

    def validate_topic_replica_pair_frequencies(self, topic: str) -> None:
        self._validate_pairs(topic)

    def validate_replica_pair_frequencies(self) -> None:
        for topic in sorted({t for t, _ in self.assignments}):
            self._validate_pairs(topic)
        self._validate_pairs(None)

    def _validate_pairs(self, topic: str | None) -> None:
        freq: Counter[tuple[NodeId, NodeId]] = Counter()
        for a in self.assignments.values():
            if topic is None or a.topic == topic:
                freq.update(itertools.permutations(a.nodes, 2))
        n = len(self.nodes)
        expected = sum(freq.values()) / (n * (n - 1))
        low, high = expected - 3 * math.sqrt(expected), expected + 3 * math.sqrt(expected)
        ids = [NodeId(str(i)) for i in self.nodes]
        bad = [(x, y, freq[(x, y)]) for x in ids for y in ids if x != y]
        bad = [(x, y, f) for x, y, f in bad if not low <= f <= high]
        assert not bad, f"topic {topic}: pairs outside [{low:.1f}, {high:.1f}]: {bad[:5]}"


class TestPartitionBalancerSimulator:
    """``partition_balancer_simulator_test.cc`` (redpanda @1c6cff34)."""

    def test_decommission(self) -> None:
        s = Simulator()
        for i in range(4):
            s.add_node(i, 100 * GiB)
        s.add_topic("mytopic", 100, 3, 100 * MiB)
        s.draining.add(0)
        assert s.run_to_completion(100)
        assert s.replicas_on(0) == 0

    def test_two_decommissions(self) -> None:
        """Upstream starts the second drain when half of node 0's replicas have left; trimtab's
        plans move up to 50 partitions at once, so it starts after the first plan."""
        s = Simulator()
        for i in range(5):
            s.add_node(i, 100 * GiB)
        s.add_topic("mytopic", 200, 3, 100 * MiB)
        s.draining.add(0)
        start = s.replicas_on(0)
        assert not s.run_to_completion(0)  # one plan of 50 reassignments
        assert s.replicas_on(0) < start
        s.draining.add(1)
        assert s.run_to_completion(500)
        assert s.replicas_on(0) == s.replicas_on(1) == 0

    def test_counts_rebalancing(self) -> None:
        s = Simulator()
        for i in range(3):
            s.add_node(i, 1000 * GiB, 4)
        for t in range(10):
            s.add_topic(f"topic_{t}", s.rng.randint(20, 100), 3, 100 * MiB)
        s.add_node(3, 1000 * GiB, 4)
        s.add_node(4, 1000 * GiB, 8)
        assert s.run_to_completion(2000)
        s.validate_even_replica_distribution()
        s.validate_even_topic_distribution()

    def test_heterogeneous_racks_full_disk(self) -> None:
        """Nodes 1 and 2, alone in their racks, go over 80 %: the balancer moves replicas off
        them even though that puts two replicas in rack_0."""
        s = Simulator()
        for i in range(3):
            s.add_node(i, 1000 * GiB, 4, f"rack_{i}")
        s.add_node(3, 1000 * GiB, 4, "rack_0")
        s.add_topic("topic_1", 50, 3, 18 * GiB)
        assert s.run_to_completion(100)
        used = s.used()
        for i, node in s.nodes.items():
            assert used[i] / node.total < 0.8, i

    def test_smol(self) -> None:
        s = Simulator()
        for i in range(4):
            s.add_node(i, 100 * GiB)
        s.add_topic("topic_1", 3, 3, GiB, 100 * MiB)
        s.add_topic("topic_2", 3, 3, GiB, 100 * MiB)
        for i in range(4, 6):
            s.add_node(i, 100 * GiB)
        assert s.run_to_completion(10)

    def test_heterogeneous_topics(self) -> None:
        s = Simulator()
        for i in range(9):
            s.add_node(i, 300 * GiB)
        s.add_topic("topic_1", 200, 3, 2 * GiB, 200 * MiB)
        s.add_topic("topic_2", 800, 3, 10 * MiB, MiB)
        for i in range(9, 12):
            s.add_node(i, 300 * GiB)
        assert s.run_to_completion(1000)
        s.validate_even_topic_distribution()
        s.validate_even_replica_distribution()

    def test_many_topics(self) -> None:
        s = Simulator()
        for i in range(4):
            s.add_node(i, 100 * GiB)
        for t in range(100):
            size = GiB if s.rng.randint(0, 4) == 0 else 10 * MiB
            s.add_topic(f"topic_{t}", s.rng.randint(2, 5), 3, size, size / 10)
        for i in range(4, 6):
            s.add_node(i, 100 * GiB)
        assert s.run_to_completion(1000)
        s.validate_even_replica_distribution()

    def test_replica_pair_frequency(self) -> None:
        s = Simulator()
        for i in range(3):
            s.add_node(i, 300 * GiB)
        s.add_topic("topic_1", 150, 3, GiB)
        for i in range(3, 6):
            s.add_node(i, 300 * GiB)
        s.add_topic("topic_2", 150, 3, GiB)
        s.validate_topic_replica_pair_frequencies("topic_2")

        assert s.run_to_completion(1000)
        s.validate_even_replica_distribution()
        s.validate_replica_pair_frequencies()

        for i in range(6, 9):
            s.add_node(i, 300 * GiB)
        assert s.run_to_completion(1000)
        s.validate_even_replica_distribution()
        s.validate_replica_pair_frequencies()

    def test_mixed_replication_factors(self) -> None:
        s = Simulator()
        s.add_node(0, 100 * GiB, 1)
        s.add_node(1, 400 * GiB, 1)
        s.add_node(2, 100 * GiB, 1)
        shapes = [(96, 1, 3), (118, 5, 1), (1, 10, 1), (36, 5, 3), (16, 25, 3), (2, 3, 3)]
        shapes += [(37, 3, 3)]  # upstream's "topic_1_1" topics have 3 partitions of RF 3
        for k, (count, partitions, rf) in enumerate(shapes):
            for t in range(count):
                s.add_topic(f"topic_{k}_{t}", partitions, rf, 10 * MiB)
        s.add_node(4, 300 * GiB, 1)
        assert s.run_to_completion(s.total_replicas() * 3)
        s.draining.add(4)
        assert s.run_to_completion(s.total_replicas() * 3)
        assert s.replicas_on(4) == 0
