"""Redpanda's (and Kafka's) settings: the partition allocator and the partition balancer.

One section of :class:`~trimtab.config.core.Config`, :class:`AllocationConfig`, under Redpanda's
cluster property names (``topic_partitions_per_shard``, ``partition_autobalancing_mode``,
``kafka_nodelete_topics``). Its defaults are the 2019 allocator RFC's; ``profile = "redpanda"``
switches the per-core capacity to today's Redpanda defaults. The allocation engine imports this
module, never the loader.
"""

from __future__ import annotations

from dataclasses import dataclass

from trimtab.config.settings import Choice, at_least, between, choices_of, setting

__all__ = [
    "ALLOCATION_PROFILES",
    "ALLOCATORS",
    "BALANCER_MODES",
    "AllocationConfig",
    "BalancerMode",
]


ALLOCATORS = {
    "constraints": "constraints",
    "rfc": "rfc",
    "rendezvous": "rendezvous",
}
ALLOCATION_PROFILES = {"rfc": "rfc", "redpanda": "redpanda"}


class BalancerMode(Choice):
    """``partition_autobalancing_mode``: what the partition balancer repairs (see
    :mod:`trimtab.allocation.planner`)."""

    OFF = "off"
    NODE_ADD = "node_add"
    CONTINUOUS = "continuous"


BALANCER_MODES: dict[str, BalancerMode] = choices_of(BalancerMode)
# (topic_partitions_per_shard, topic_partitions_reserve_shard0) of each profile.
_PROFILE_DEFAULTS = {"rfc": (7000, 2), "redpanda": (1000, 0)}


class _ProfileDefault(int):
    """A per-shard default nobody set, so ``profile`` may replace it; equal to the plain int."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationConfig:
    """Redpanda's allocator settings. Defaults are the 2019 RFC's; ``profile`` switches.

    ``profile = "redpanda"`` gives today's Redpanda defaults (1000 partitions per core, no
    core-0 reserve; lowered from 7000 in 2023) to ``topic_partitions_per_shard`` and
    ``topic_partitions_reserve_shard0`` unless those keys are set explicitly.

        >>> cfg = AllocationConfig(profile="redpanda")
        >>> cfg.topic_partitions_per_shard, cfg.topic_partitions_reserve_shard0
        (1000, 0)
    """

    profile: str = setting(
        "rfc",
        "defaults of the two keys below: rfc (7000, 2) or redpanda (1000, 0, Redpanda since 2023)",
        choices=ALLOCATION_PROFILES,
    )
    topic_partitions_per_shard: int = setting(
        _ProfileDefault(7000),
        "partition capacity per core (RFC 7000; Redpanda today 1000)",
        check=between(16, 131_072),
    )
    topic_partitions_reserve_shard0: int = setting(
        _ProfileDefault(2),
        "partitions core 0 starts with (RFC 2; Redpanda today 0)",
        check=at_least(0),
    )
    allocator: str = setting(
        "constraints",
        "rfc (round-robin, 2019 RFC), constraints (Redpanda today) or rendezvous (weighted HRW)",
        choices=ALLOCATORS,
    )
    enable_rack_awareness: bool = setting(False, "prefer distinct racks for replicas")
    topic_aware: bool = setting(
        True,
        "spread each topic's replicas in proportion to capacity before total counts",
        aliases=("partition_autobalancing_topic_aware",),
    )
    rendezvous_bias_correction: bool = setting(
        True, "reweight rendezvous hashing so replication factors > 1 stay capacity-proportional"
    )
    even_out_batch: bool = setting(
        True, "constraints mode: move a batch's own new replicas towards capacity shares"
    )
    max_disk_usage_percent: int = setting(
        80,
        "soft disk fill limit",
        aliases=("partition_autobalancing_max_disk_usage_percent",),
        check=between(0, 100),
    )
    storage_space_alert_free_threshold_percent: int = setting(
        5, "hard limit = 100 minus this", check=between(0, 100)
    )
    balancer_mode: BalancerMode = setting(
        BalancerMode.CONTINUOUS,
        "rebalance: off (drains only), node_add (and counts) or continuous (and repairs)",
        aliases=("partition_autobalancing_mode",),
        choices=BALANCER_MODES,
    )
    node_availability_timeout_sec: int = setting(
        900,
        "rebalance: a node down longer than this has its replicas moved off",
        aliases=("partition_autobalancing_node_availability_timeout_sec",),
        check=at_least(0),
    )
    concurrent_moves: int = setting(
        50,
        "rebalance: partitions one plan reassigns at most",
        aliases=("partition_autobalancing_concurrent_moves",),
        check=at_least(1),
    )
    topic_memory_per_partition: int | None = setting(
        None,
        "bytes of memory one partition replica needs: replicas ≤ nodes × smallest node memory "
        "/ this (Redpanda's check_cluster_limits; unset: no limit; Redpanda's default 4 MiB)",
        aliases=("topic_memory_per_partition",),
        check=at_least(1),
    )
    topic_fds_per_partition: int | None = setting(
        None,
        "file descriptors one partition replica needs: replicas ≤ nodes × node_open_files_limit "
        "/ this (Redpanda's check_cluster_limits; unset: no limit; Redpanda's default 5)",
        aliases=("topic_fds_per_partition",),
        check=at_least(1),
    )
    node_open_files_limit: int | None = setting(
        None,
        "the brokers' open-file limit (ulimit -n, RLIMIT_NOFILE), which topic_fds_per_partition "
        "divides (Redpanda reads its own; unset: no fd limit)",
        check=at_least(1),
    )
    internal_topics: tuple[str, ...] = setting(
        ("_redpanda.audit_log", "__consumer_offsets", "_schemas", "__transaction_state"),
        "internal topics, exempt from the per-core and cluster partition limits (Redpanda's "
        "kafka_nodelete_topics, and Kafka's __transaction_state)",
        aliases=("kafka_nodelete_topics",),
    )

    def __post_init__(self) -> None:
        per_shard, reserve = _PROFILE_DEFAULTS[self.profile]
        for name, value in (
            ("topic_partitions_per_shard", per_shard),
            ("topic_partitions_reserve_shard0", reserve),
        ):
            if type(getattr(self, name)) is _ProfileDefault:
                object.__setattr__(self, name, _ProfileDefault(value))
