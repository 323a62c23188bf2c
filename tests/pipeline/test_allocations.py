"""Allocation plans from the pipeline equal the allocator run directly on the same inventory."""

from __future__ import annotations

import pyarrow.parquet as pq

from tests.pipeline.conftest import FinishedRun
from trimtab.allocation import AllocationRequest, plan_allocations
from trimtab.allocation.model import PARTITION_ROLE
from trimtab.pipeline.generate import GeneratedFleet
from trimtab.readers.inventory import read_inventory


def test_pipeline_allocations_equal_the_allocators(
    dirty_run: FinishedRun, dirty_fleet: GeneratedFleet
) -> None:
    """Same inventory, requests and seed: the same replicas on the same nodes and cores, on the
    brokers only (as ``trimtab allocate`` picks them)."""
    out, summary, seed = dirty_run.out, dirty_run.summary, dirty_run.options.seed
    config = dirty_run.options.config
    rows = pq.read_table(out / "allocations").to_pylist()
    got = {
        (r["cluster"], r["topic"], r["partition"], r["replica"], r["node"], r["core"]) for r in rows
    }
    # The generated inventory without its bad rows: what the job accepts, in the same order.
    inventory = read_inventory(dirty_fleet.out / "nodes" / "nodes.parquet")
    requests = pq.read_table(dirty_fleet.out / "allocation_requests").to_pylist()
    want = set()
    for name, state in inventory.clusters.items():
        mine = sorted((r for r in requests if r["cluster"] == name), key=lambda r: r["topic"])
        plan = plan_allocations(
            state.for_role(PARTITION_ROLE),
            [
                AllocationRequest(
                    topic=r["topic"],
                    partitions=r["partitions"],
                    replication_factor=r["replication_factor"],
                    cluster=name,
                )
                for r in mine
            ],
            config.allocation,
            seed=seed,
        )
        for a in plan.assignments:
            for index, replica in enumerate(a.replicas):
                want.add((name, a.topic, a.partition, index, str(replica.node), replica.core))
        assert summary.clusters[name]["partitions_allocated"] == len(plan.assignments)
        # Host-name ids have no Kafka broker id: the export says why instead of guessing.
        assert summary.clusters[name]["kafka_reassignment"].startswith("not written")
    assert got == want
