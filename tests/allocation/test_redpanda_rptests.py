"""Redpanda's ducktape tests of placement and partition limits, against trimtab's planner.

``resource_limits_test.py`` (``ResourceLimitsTest``) and ``rack_aware_replica_placement_test.py``
(``RackAwarePlacementTest``) run a real 3- or 6-node cluster and create topics with rpk; here the
same cluster is an inventory and each ``create_topic`` one :func:`plan_allocations` call on the
partitions created so far. ``INVALID_PARTITIONS`` is trimtab's :class:`ClusterLimitError` (memory,
fds) or :class:`CapacityExhaustedError` (the per-core limit, checked node by node).

Departure: upstream's clusters start with their internal partitions (controller, id allocator,
``__consumer_offsets`` once used), which take part of the allowance ("not exactly 1000 because of
system partitions"); these inventories hold none, so the limits are reached exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from trimtab.allocation import AllocationRequest, PartitionAssignment, plan_allocations
from trimtab.cluster import Capacity, ClusterState, Node, NodeId
from trimtab.config import AllocationConfig
from trimtab.errors import CapacityExhaustedError, ClusterLimitError

MiB = 2**20


class RpkCluster:
    """Nodes of ``cores`` and ``memory_mb`` in the given racks, and the topics created so far."""

    def __init__(
        self, cfg: AllocationConfig, racks: Sequence[str], *, cores: int = 1, memory_mb: int = 1024
    ) -> None:
        self.cfg = cfg
        self.cluster = ClusterState.of(
            "rp",
            [
                Node(
                    id=NodeId(str(i + 1)),  # broker ids are 1-based
                    location=f"/{rack}",
                    capacity=Capacity(
                        cores=cores,
                        memory_bytes=memory_mb * MiB,
                        disk_total_bytes=0,
                        nic_bps=10**9,
                    ),
                )
                for i, rack in enumerate(racks)
            ],
        )
        self.racks = {NodeId(str(i + 1)): rack for i, rack in enumerate(racks)}
        self.held: list[PartitionAssignment] = []

    def create_topic(
        self, topic: str, partitions: int, replicas: int, *, add: bool = False
    ) -> None:
        request = AllocationRequest(topic=topic, partitions=partitions, replication_factor=replicas)
        plan = plan_allocations(
            self.cluster, [request], self.cfg, existing=self.held, add_partitions=add
        )
        self.held += plan.assignments

    def add_topic_partitions(self, topic: str, partitions: int) -> None:
        self.create_topic(topic, partitions, 3, add=True)


class TestResourceLimitsTest:
    """``resource_limits_test.py`` (redpanda @1c6cff34)."""

    def test_memory_limited(self) -> None:
        """3 nodes of 1 GiB, 10 MiB per partition: 3·1024/10 = 307 replicas."""
        rpk = RpkCluster(
            AllocationConfig(profile="redpanda", topic_memory_per_partition=10 * MiB), "ABC"
        )
        with pytest.raises(ClusterLimitError, match="memory limit of 307"):
            rpk.create_topic("toobig", 110, 3)
        rpk.create_topic("okay", 55, 3)
        with pytest.raises(ClusterLimitError):
            rpk.add_topic_partitions("okay", 55)
        rpk.add_topic_partitions("okay", 10)
        assert len(rpk.held) == 65

    def test_cpu_limited(self) -> None:
        """3 nodes of 1 core at 1,000 replicas per core: 1,000 RF3 partitions at most."""
        rpk = RpkCluster(AllocationConfig(profile="redpanda"), "ABC")
        with pytest.raises(CapacityExhaustedError):
            rpk.create_topic("toobig", 1500, 3)
        rpk.create_topic("okay", 900, 3)

    def test_fd_limited(self) -> None:
        """ulimit -n 1000 and upstream's default 5 fds per partition: 3·1000/5 = 600 replicas.
        Upstream reads the limit from its process; trimtab is told it (node_open_files_limit)."""
        cfg = AllocationConfig(
            profile="redpanda", topic_fds_per_partition=5, node_open_files_limit=1000
        )
        rpk = RpkCluster(cfg, "ABC")
        with pytest.raises(ClusterLimitError, match="fds limit of 600"):
            rpk.create_topic("toobig", 220, 3)
        rpk.create_topic("okay", 90, 3)


LAYOUTS = ["ABCDEF", "xxYYzz", "ooooFF"]


class TestRackAwarePlacementTest:
    """``rack_aware_replica_placement_test.py`` (redpanda @1c6cff34)."""

    @pytest.mark.parametrize(
        ("rack_layout_str", "num_partitions", "replication_factor"),
        [
            (layout, partitions, rf)
            for layout, partitions, rf in itertools.product(LAYOUTS, [50, 400], [3, 5])
            if 2 * partitions * rf <= 3000  # upstream's own exclusion
        ],
    )
    def test_replica_placement(
        self, rack_layout_str: str, num_partitions: int, replication_factor: int
    ) -> None:
        """Two topics on 6 nodes with rack awareness on: every partition's replicas on
        min(racks, RF) distinct racks."""
        rpk = RpkCluster(AllocationConfig(enable_rack_awareness=True), rack_layout_str, cores=4)
        for t in range(2):
            rpk.create_topic(f"topic-{t}", num_partitions, replication_factor)
        expected = min(len(set(rack_layout_str)), replication_factor)
        for a in rpk.held:
            assert len({rpk.racks[n] for n in a.nodes}) == expected, (a.topic, a.partition)
