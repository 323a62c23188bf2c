"""Kafka and Redpanda brokers as inventory rows (``trimtab inventory --bootstrap-servers``).

Brokers and racks come from DescribeCluster (kafka-python falls back to Metadata on a broker
without it); disk totals and free space from DescribeLogDirs, whose ``total_bytes`` and
``usable_bytes`` (KIP-827, version 4 and later) are summed over a broker's log directories. A
broker answering an older version reports -1 there: its disk is left to ``--defaults``.
Cores, memory and NIC are published by no Kafka API: they come from ``--defaults`` too.
A broker whose log dirs are all cordoned (``is_cordoned``, version 5, KIP-1066, Kafka 4.3)
is written ``readonly``: it keeps its replicas and takes none, as KIP-1066's placer skips it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trimtab.systems.inventory_rows import NodeRow
from trimtab.systems.kafka.admin import AdminConnection
from trimtab.systems.kafka.command_config import read_command_config

__all__ = ["broker_rows", "rows_from_answers"]


def broker_rows(
    bootstrap: str, cluster: str, command_config: Path | None, timeout_s: float
) -> list[NodeRow]:
    """One writable broker row per broker of the cluster (a TargetError names the failure)."""
    connection = AdminConnection(bootstrap, read_command_config(command_config), timeout_s)
    try:
        described = connection.call("DescribeCluster", connection.client.describe_cluster)
        ids = [int(b["broker_id"]) for b in described["brokers"]]
        dirs = connection.call("DescribeLogDirs", connection.client.describe_log_dirs, None, ids)
    finally:
        connection.close()
    return rows_from_answers(described, dirs, cluster)


def rows_from_answers(described: dict[str, Any], dirs: list[Any], cluster: str) -> list[NodeRow]:
    """Rows from kafka-python's ``describe_cluster`` and ``describe_log_dirs`` answers."""
    by_broker = {int(entry["broker"]): entry["log_dirs"] for entry in dirs}
    rows = []
    for broker in sorted(described["brokers"], key=lambda b: int(b["broker_id"])):
        node = int(broker["broker_id"])
        row = NodeRow(cluster, str(node))
        row.measured("rack", broker.get("rack"))
        fenced = bool(broker.get("is_fenced"))
        healthy = [d for d in by_broker.get(node, []) if int(d.get("error_code", 0)) == 0]
        # KIP-1066 (DescribeLogDirs v5): every log dir cordoned, the broker takes no new
        # replica and keeps its own, as a read-only node
        closed = bool(healthy) and all(d.get("is_cordoned") for d in healthy)
        row.measured("state", "down" if fenced else "readonly" if closed else "writable")
        row.measured("role", "broker")
        totals = [int(d.get("total_bytes", -1)) for d in healthy]
        usable = [int(d.get("usable_bytes", -1)) for d in healthy]
        if totals and min(totals) >= 0:
            row.measured("disk_total_bytes", sum(totals))
        if usable and min(usable) >= 0:
            row.measured("disk_free_bytes", sum(usable))
        rows.append(row)
    return rows
