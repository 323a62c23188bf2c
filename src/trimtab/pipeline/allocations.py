"""Allocation plans per cluster: the partition allocator on each cluster's inventory.

``cogroup(cluster).applyInPandas`` builds the cluster's :class:`ClusterState` from its accepted
inventory rows, keeps the nodes that serve brokers (:meth:`ClusterState.for_role`, as
``trimtab allocate`` does: partitions never land on bookies), and runs
:func:`trimtab.allocation.plan_allocations` on its accepted ``allocation_requests``: every
request of a cluster is placed or none is. A cluster whose requests cannot be met yields one
row with the reason in ``error`` and no assignments.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pyspark.sql import DataFrame

from trimtab.allocation import AllocationRequest, plan_allocations
from trimtab.allocation.model import PARTITION_ROLE
from trimtab.cluster import Capacity, ClusterState, Node, NodeId, NodeState, Role, location_of
from trimtab.config import AllocationConfig
from trimtab.errors import TrimtabError

__all__ = ["ALLOCATION_COLUMNS", "ALLOCATION_SCHEMA", "allocation_plans"]

ALLOCATION_SCHEMA = (
    "cluster string, topic string, partition int, replica int, node string, core int, error string"
)
ALLOCATION_COLUMNS = [c.split()[0] for c in ALLOCATION_SCHEMA.split(", ")]


def allocation_plans(
    nodes: DataFrame, requests: DataFrame, config: AllocationConfig, *, seed: int = 0
) -> DataFrame:
    """One row per replica placed (see the module docstring)."""

    def per_cluster(node_rows: pd.DataFrame, request_rows: pd.DataFrame) -> pd.DataFrame:
        if node_rows.empty or request_rows.empty:
            return pd.DataFrame(columns=ALLOCATION_COLUMNS)
        cluster = str(node_rows["cluster"].iloc[0])
        nodes = (_node(r) for r in node_rows.to_dict("records"))
        state = ClusterState.of(cluster, nodes).for_role(PARTITION_ROLE)
        wanted = [
            AllocationRequest(
                topic=str(r["topic"]),
                partitions=int(r["partitions"]),
                replication_factor=int(r["replication_factor"]),
                partition_size_bytes=_whole(r.get("partition_size_bytes")) or 0,
                cluster=cluster,
            )
            for r in request_rows.sort_values("topic", kind="stable").to_dict("records")
        ]
        try:
            plan = plan_allocations(state, wanted, config, seed=seed)
        except TrimtabError as exc:
            return pd.DataFrame(
                [[cluster, None, None, None, None, None, str(exc)]], columns=ALLOCATION_COLUMNS
            )
        rows = [
            [cluster, a.topic, a.partition, index, str(r.node), r.core, None]
            for a in plan.assignments
            for index, r in enumerate(a.replicas)
        ]
        return pd.DataFrame(rows, columns=ALLOCATION_COLUMNS)

    return (
        nodes.groupBy("cluster")
        .cogroup(requests.groupBy("cluster"))
        .applyInPandas(per_cluster, ALLOCATION_SCHEMA)
    )


def _whole(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _node(row: dict[Any, Any]) -> Node:
    return Node(
        id=NodeId(str(row["node"]).strip()),
        location=location_of(row.get("region"), row.get("rack")),
        capacity=Capacity(
            cores=int(row["cores"]),
            memory_bytes=int(row["memory_bytes"]),
            disk_total_bytes=int(row["disk_total_bytes"]),
            nic_bps=int(row["nic_bps"]),
            disk_free_bytes=_whole(row.get("disk_free_bytes")),
        ),
        state=NodeState.parse(str(row["state"])),
        role=Role.parse(role if isinstance(role := row.get("role"), str) else None),
    )
