"""The values allocators take and give: requests, replicas, assignments, and the balance figure.

A request asks for ``partitions`` new partitions of ``topic``, each with ``replication_factor``
replicas on distinct nodes. An assignment names, for one partition, the nodes holding its
replicas and the core (shard) of each, in order: the first replica is the preferred leader, as
Kafka's reassignment JSON reads it.

Balance is measured relative to capacity, as Redpanda's partition balancer logs it:

    balance = N · Σ xᵢ² / (Σ xᵢ)²,  xᵢ = replicasᵢ / capacityᵢ

which is 1.0 when every node holds the same share of its capacity and grows with the spread
(it is 1 + the squared coefficient of variation of x). For example replicas (10, 10, 20) on
capacities (1000, 1000, 2000) give x = (0.01, 0.01, 0.01) and a balance of 1.0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from trimtab.cluster import NodeId, Role

__all__ = [
    "PARTITION_ROLE",
    "AllocationRequest",
    "PartitionAssignment",
    "Replica",
    "balance",
    "proportional_shares",
    "validate_topic",
]

#: The nodes partitions go to (Kafka/Redpanda brokers; an inventory node of empty role serves
#: both): ``trimtab allocate`` and the pipeline pick them with ``ClusterState.for_role``.
PARTITION_ROLE = Role.BROKER

# Kafka's rule (``Topic.validate``): at most 249 characters of [a-zA-Z0-9._-], not "." or "..".
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def validate_topic(topic: str) -> str:
    """``topic`` if Kafka accepts it as a topic name, else ``ValueError`` saying why."""
    if not _TOPIC.match(topic) or topic in (".", ".."):
        raise ValueError(
            f"bad topic name {topic!r}: use 1 to 249 characters from a-z, A-Z, 0-9, '.', '_', '-'"
        )
    return topic


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationRequest:
    """New partitions for one topic; ``partition_size_bytes`` is the expected size of each replica
    (0 when unknown) and feeds the disk rules. ``cluster`` may be left out when there is one."""

    topic: str
    partitions: int
    replication_factor: int
    partition_size_bytes: int = 0
    cluster: str | None = None

    def __post_init__(self) -> None:
        validate_topic(self.topic)
        for name in ("partitions", "replication_factor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        if self.partition_size_bytes < 0:
            raise ValueError(
                f"partition_size_bytes must be 0 or more, got {self.partition_size_bytes}"
            )

    @property
    def replicas(self) -> int:
        return self.partitions * self.replication_factor


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica: the node holding it and the core (shard) serving it there."""

    node: NodeId
    core: int


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    """Where one partition's replicas live; ``replicas[0]`` is the preferred leader."""

    topic: str
    partition: int
    replicas: tuple[Replica, ...]
    size_bytes: int = 0

    @property
    def nodes(self) -> tuple[NodeId, ...]:
        return tuple(r.node for r in self.replicas)


def balance(counts: Sequence[float], capacities: Sequence[float]) -> float:
    """N·Σx²/(Σx)² with x = count/capacity over nodes of positive capacity; 1.0 = perfect.

    >>> round(balance([10, 10, 20], [1000, 1000, 2000]), 12), balance([0, 30], [1, 1])
    (1.0, 2.0)
    """
    xs = [c / cap for c, cap in zip(counts, capacities, strict=True) if cap > 0]
    total = sum(xs)
    if not xs or total == 0:
        return 1.0
    return len(xs) * sum(x * x for x in xs) / (total * total)


def proportional_shares(total: int, capacities: Sequence[float]) -> list[float]:
    """Each node's capacity-proportional share of ``total`` replicas: total·capᵢ/Σcap."""
    whole = sum(capacities)
    if whole <= 0:
        return [0.0 for _ in capacities]
    return [total * cap / whole for cap in capacities]
