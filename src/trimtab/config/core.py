"""One typed, immutable configuration, loadable from TOML, Java ``.properties`` or keywords.

Every setting answers to its trimtab name (``placement.min_num_racks_per_write_quorum``, or the
bare field name when it is unique) and to the key users of the upstream system already write
(``minNumRacksPerWriteQuorum`` in ``bk_server.conf``, ``loadBalancerBrokerLoadTargetStd`` in
``broker.conf``, ``topic_partitions_per_shard`` in Redpanda). Defaults are the upstream ones,
except where a trimtab default is documented as different and why.

A whole upstream file loads as it is: a key that upstream defines but trimtab does not read
(``journalDirectories``, ``managedLedgerDefaultEnsembleSize``...) is accepted and reported by
:meth:`Config.read` as ignored, with the upstream file that defines it (lists in
``trimtab/data/upstream_*.keys``). A key that is neither trimtab's nor upstream's is an error
that names it and suggests the nearest known key (``strict=False`` returns it as a warning
instead); a bad value names the key, the value and what is allowed.

    >>> Config.of(minNumRacksPerWriteQuorum=3).placement.min_num_racks_per_write_quorum
    3
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from trimtab._settings import Check, Setting, at_least, between, nearest, setting, settings_of
from trimtab._upstream import defined_in, spellings, upstream_names
from trimtab.errors import ConfigError, UnknownConfigKeyError

__all__ = [
    "BALANCER_MODES",
    "PLACEMENT_POLICIES",
    "SAMPLING",
    "SHEDDERS",
    "WEIGHTS_MODES",
    "WEIGHT_CAPS",
    "AllocationConfig",
    "BalancerMode",
    "BookieInfoConfig",
    "CapBasis",
    "Choice",
    "Config",
    "IgnoredKey",
    "LoadedConfig",
    "PlacementConfig",
    "PolicyName",
    "Sampling",
    "SheddingConfig",
    "Strategy",
    "TopologyConfig",
    "WeightsMode",
    "spelled",
]

_BK = "org.apache.bookkeeper"
_PULSAR_LB = "org.apache.pulsar.broker.loadbalance"


class Choice(StrEnum):
    """A setting's closed set of values: members are their text (``str``, JSON, Parquet and
    ``repr`` show ``'median'``, not the member), so outputs read as they did with strings."""

    def __repr__(self) -> str:
        return repr(self.value)


class PolicyName(Choice):
    """``ensemblePlacementPolicy``: BookKeeper's three ensemble placement policies."""

    DEFAULT = "default"
    RACKAWARE = "rackaware"
    REGIONAWARE = "regionaware"
    ZONEAWARE = "zoneaware"


class Strategy(Choice):
    """``loadBalancerLoadSheddingStrategy``: PIP-220's TransferShedder, trimtab's balanced
    shedder, and the older Pulsar shedders."""

    TRANSFER = "transfer"
    BALANCED = "balanced"
    THRESHOLD = "threshold"
    OVERLOAD = "overload"
    UNIFORM = "uniform"
    AVG = "avg"


class Sampling(Choice):
    """How weighted placement draws an ensemble: successive picks (upstream) or inclusion
    proportional to weight (trimtab)."""

    SUCCESSIVE = "successive"
    PROPORTIONAL = "proportional"


class CapBasis(Choice):
    """What ``bookieMaxMultipleForWeightBasedPlacement`` multiplies: the pool's median weight
    (upstream) or its smallest positive one."""

    MEDIAN = "median"
    MINIMUM = "minimum"

    @property
    def short(self) -> str:
        """The spelling tables and labels use: ``median`` or ``min``."""
        return "min" if self is CapBasis.MINIMUM else self.value


class WeightsMode(Choice):
    """The disk-fill simulator's weighting: none, free disk, or free disk and I/O load."""

    OFF = "off"
    DISK = "disk"
    DISK_LOAD = "disk+load"


_C = TypeVar("_C", bound=Choice)


def zk_hosts(url: str) -> str | None:
    """The ZooKeeper connect string of a Pulsar metadata store URL (``zk:h1:2181,h2:2181/c``,
    ``metadata-store:zk:…``, or bare hosts), or None for a store of another kind (``etcd:``,
    ``rocksdb:``, ``memory:``), which trimtab cannot read."""
    text = url.strip().removeprefix("metadata-store:").removeprefix("zk:")
    head = text.split(",", 1)[0]
    if not text or "://" in text or not head.rsplit(":", 1)[-1].split("/", 1)[0].isdigit():
        return None
    return text


def _own(kind: type[_C]) -> dict[str, _C]:
    return {member.value: member for member in kind}


def spelled(table: Mapping[str, _C], text: str) -> _C | None:
    """The value ``text`` spells in an alias ``table`` (case and outer blanks ignored)."""
    return table.get(str(text).strip().lower())


# Every accepted spelling (lower case) -> value: the one place aliases are defined.
PLACEMENT_POLICIES: dict[str, PolicyName] = {
    **_own(PolicyName),
    "rack-aware": PolicyName.RACKAWARE,
    "region-aware": PolicyName.REGIONAWARE,
    "zone-aware": PolicyName.ZONEAWARE,
    f"{_BK}.client.defaultensembleplacementpolicy": PolicyName.DEFAULT,
    f"{_BK}.client.rackawareensembleplacementpolicy": PolicyName.RACKAWARE,
    f"{_BK}.client.regionawareensembleplacementpolicy": PolicyName.REGIONAWARE,
    f"{_BK}.client.zoneawareensembleplacementpolicy": PolicyName.ZONEAWARE,
}

RESOLVERS = {
    "script": "script",
    "table": "table",
    "default": "default",
    f"{_BK}.net.scriptbasedmapping": "script",
    f"{_BK}.client.rackawareensembleplacementpolicyimpl$defaultresolver": "default",
    "pulsar": "pulsar",
    "org.apache.pulsar.bookie.rackawareness.bookierackaffinitymapping": "pulsar",
    "org.apache.pulsar.zookeeper.zkbookierackaffinitymapping": "pulsar",
    "import": "<import path>",
}

SHEDDERS: dict[str, Strategy] = {
    **_own(Strategy),
    f"{_PULSAR_LB}.extensions.scheduler.transfershedder": Strategy.TRANSFER,
    f"{_PULSAR_LB}.impl.thresholdshedder": Strategy.THRESHOLD,
    f"{_PULSAR_LB}.impl.overloadshedder": Strategy.OVERLOAD,
    f"{_PULSAR_LB}.impl.uniformloadshedder": Strategy.UNIFORM,
    f"{_PULSAR_LB}.impl.avgshedder": Strategy.AVG,
}

SAMPLING: dict[str, Sampling] = _own(Sampling)
WEIGHT_CAPS: dict[str, CapBasis] = {**_own(CapBasis), "min": CapBasis.MINIMUM}
WEIGHTS_MODES: dict[str, WeightsMode] = _own(WeightsMode)
LOAD_NORMALISATION = {"capacity": "capacity", "absolute": "absolute"}


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyConfig:
    """How node network locations are found and how membership flaps are absorbed."""

    dns_resolver_class: str = setting(
        "script",
        "resolver: script, table, default, pulsar (the /bookies znode), or module:Class",
        aliases=("reppDnsResolverClass", "bkEnsemblePlacementDnsResolverClass"),
        choices=RESOLVERS,
    )
    metadata_store_url: str | None = setting(
        None,
        "Pulsar's metadata store, where the pulsar resolver reads /bookies: zk:HOST:PORT[,...]"
        "[/chroot] or HOST:PORT[,...] (default: the BookKeeper ZooKeeper, zkServers)",
        aliases=("metadataStoreUrl", "zookeeperServers"),
        check=Check(lambda v: zk_hosts(v) is not None, "zk:HOST:PORT[,HOST:PORT][/chroot]"),
    )
    script_file_name: str | None = setting(
        None, "executable mapping hosts to racks", aliases=("networkTopologyScriptFileName",)
    )
    script_number_args: int = setting(
        100,
        "hosts passed per script call",
        aliases=("networkTopologyScriptNumberArgs",),
        check=at_least(1),
    )
    script_timeout_seconds: float = setting(
        10.0, "time-out of one script call (trimtab)", check=at_least(0.001)
    )
    table_file: str | None = setting(None, "host-to-location table for the table resolver")
    stabilize_period_seconds: int = setting(
        0,
        "delay before a departed node leaves the topology; 0 = off",
        aliases=("networkTopologyStabilizePeriodSeconds",),
        check=at_least(0),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementConfig:
    """BookKeeper's ensemble placement settings (``ClientConfiguration`` names and defaults)."""

    ensemble_placement_policy: PolicyName = setting(
        PolicyName.RACKAWARE,
        "default, rackaware, regionaware or zoneaware (Java class names accepted)",
        aliases=("ensemblePlacementPolicy",),
        choices=PLACEMENT_POLICIES,
    )
    min_num_racks_per_write_quorum: int = setting(
        2,
        "racks each write quorum should span",
        aliases=("minNumRacksPerWriteQuorum", "bookkeeperClientMinNumRacksPerWriteQuorum"),
        check=at_least(1),
    )
    enforce_min_num_racks_per_write_quorum: bool = setting(
        False,
        "error instead of falling back; never use the default rack",
        aliases=(
            "enforceMinNumRacksPerWriteQuorum",
            "bookkeeperClientEnforceMinNumRacksPerWriteQuorum",
        ),
    )
    enforce_min_num_fault_domains_for_write: bool = setting(
        False,
        "hold acks until acked bookies span the minimum racks",
        aliases=("enforceMinNumFaultDomainsForWrite",),
    )
    ignore_local_node_in_placement_policy: bool = setting(
        False,
        "do not start ensembles in the client's own rack",
        aliases=("ignoreLocalNodeInPlacementPolicy",),
    )
    use_hostname_resolve_local_node_placement_policy: bool = setting(
        False,
        "resolve the client's own rack by host name, not address",
        aliases=("useHostnameResolveLocalNodePlacementPolicy",),
    )
    reorder_read_sequence_enabled: bool = setting(
        True,
        "reorder reads by node health",
        aliases=("reorderReadSequenceEnabled", "bookkeeperClientReorderReadSequenceEnabled"),
    )
    ensemble_random_read_reordering: bool = setting(
        False, "shuffle reads instead", aliases=("ensembleRandomReadReordering",)
    )
    read_reorder_threshold_pending_requests: int = setting(
        0,
        "pending-request gap that moves the least busy node first; 0 = off",
        aliases=("readReorderThresholdPendingRequests",),
        check=at_least(0),
    )
    bookie_failure_history_expiration_ms: int = setting(
        60_000,
        "how long a failure or slowness is remembered",
        aliases=("bookieFailureHistoryExpirationMSec",),
        check=at_least(0),
    )
    regions_to_write: tuple[str, ...] = setting(
        (), "regions the region-aware policy writes to, 'R1;R2'", aliases=("reppRegionsToWrite",)
    )
    minimum_regions_for_durability: int = setting(
        2,
        "regions an ack quorum must span (used when regions are configured)",
        aliases=("reppMinimumRegionsForDurability",),
        check=at_least(0),
    )
    enable_durability_enforcement_in_replace: bool = setting(
        True,
        "keep durability coverage when replacing",
        aliases=("reppEnableDurabilityEnforcementInReplace",),
    )
    enable_validation: bool = setting(
        True, "validate region-aware ensembles", aliases=("reppEnableValidation",)
    )
    disallow_placement_in_region_feature_name: str | None = setting(
        None,
        "feature switch that, on for a region, keeps new ensembles out of it",
        aliases=("reppDisallowBookiePlacementInRegionFeatureName",),
    )
    disable_durability_feature_name: str = setting(
        "repp_disable_durability_enforcement",
        "feature switch that, on, turns region durability enforcement off",
        aliases=("reppDisableDurabilityFeatureName",),
    )
    min_num_zones_per_write_quorum: int = setting(
        2,
        "zones each write quorum must span (zone-aware)",
        aliases=("minNumZonesPerWriteQuorum",),
        check=at_least(0),
    )
    desired_num_zones_per_write_quorum: int = setting(
        3,
        "zones each write quorum should span (zone-aware)",
        aliases=("desiredNumZonesPerWriteQuorum",),
        check=at_least(1),
    )
    enforce_strict_zoneaware_placement: bool = setting(
        True,
        "zone-aware: refuse E % W != 0 and W <= min zones; never the default zone",
        aliases=("enforceStrictZoneawarePlacement",),
    )
    disk_weight_based_placement_enabled: bool = setting(
        False,
        "weight node choice by free disk",
        aliases=("diskWeightBasedPlacementEnabled", "bookkeeperDiskWeightBasedPlacementEnabled"),
    )
    bookie_max_multiple_for_weight_based_placement: int = setting(
        3,
        "cap a weight at this multiple of the candidates' median; <= 0 = no cap",
        aliases=("bookieMaxMultipleForWeightBasedPlacement",),
    )
    weight_cap_basis: CapBasis = setting(
        CapBasis.MEDIAN,
        "cap relative to the candidates' median or minimum (trimtab)",
        choices=WEIGHT_CAPS,
    )
    weighted_sampling: Sampling = setting(
        Sampling.PROPORTIONAL,
        "successive (upstream) or proportional inclusion (trimtab)",
        choices=SAMPLING,
    )
    io_utilization_threshold: float = setting(
        0.7,
        "disk I/O utilisation above which a node is weighted down (trimtab)",
        check=between(0.0, 1.0),
    )
    load_aware_weighting_enabled: bool = setting(
        False, "weight down busy disks even with free space (trimtab)"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BookieInfoConfig:
    """How often and how patiently clients ask nodes for their disk space (GET_BOOKIE_INFO)."""

    interval_seconds: int = setting(
        86_400,
        "full scan period",
        aliases=("getBookieInfoIntervalSeconds", "bookkeeperClientGetBookieInfoIntervalSeconds"),
        check=at_least(1),
    )
    retry_interval_seconds: int = setting(
        60,
        "retry period for nodes that failed",
        aliases=(
            "getBookieInfoRetryIntervalSeconds",
            "bookkeeperClientGetBookieInfoRetryIntervalSeconds",
        ),
        check=at_least(1),
    )
    timeout_seconds: int = setting(
        5, "deadline of one request", aliases=("getBookieInfoTimeoutSecs",), check=at_least(1)
    )
    disk_usage_threshold: float = setting(
        0.95,
        "used fraction at which a node turns read-only",
        aliases=("diskUsageThreshold",),
        check=between(0.0, 1.0),
    )
    disk_usage_lwm_threshold: float = setting(
        0.90,
        "used fraction below which a read-only node turns writable again",
        aliases=("diskUsageLwmThreshold",),
        check=between(0.0, 1.0),
    )
    disk_check_interval_ms: int = setting(
        10_000,
        "how often an agent measures its disks",
        aliases=("diskCheckInterval",),
        check=at_least(1),
    )
    zk_servers: str | None = setting(
        None, "ZooKeeper hosts, 'host:port,host:port'", aliases=("zkServers",)
    )
    zk_ledgers_root_path: str = setting(
        "/ledgers", "ZooKeeper root of the node registry", aliases=("zkLedgersRootPath",)
    )
    metadata_service_uri: str | None = setting(
        None,
        "zk+hierarchical://h1:2181;h2:2181/ledgers; overrides zkServers and zkLedgersRootPath",
        aliases=("metadataServiceUri",),
    )
    zk_timeout_ms: int = setting(
        10_000, "ZooKeeper session timeout", aliases=("zkTimeout",), check=at_least(1)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SheddingConfig:
    """Pulsar's load-balancer settings (``ServiceConfiguration`` names and defaults)."""

    strategy: Strategy = setting(
        Strategy.TRANSFER,
        "transfer, balanced, threshold, overload, uniform or avg (Java names accepted)",
        aliases=("loadBalancerLoadSheddingStrategy",),
        choices=SHEDDERS,
    )
    load_normalisation: str = setting(
        "capacity",
        "usage relative to each broker's own limits, or absolute (trimtab)",
        choices=LOAD_NORMALISATION,
    )
    target_std: float = setting(
        0.25,
        "std of loads to reach",
        aliases=("loadBalancerBrokerLoadTargetStd",),
        check=at_least(0.0),
    )
    hit_count_threshold: int = setting(
        3,
        "consecutive qualifying cycles needed, exclusive",
        aliases=("loadBalancerSheddingConditionHitCountThreshold",),
        check=at_least(0),
    )
    max_broker_shedding_per_cycle: int = setting(
        3,
        "most-to-least pairs per cycle",
        aliases=(
            "loadBalancerMaxNumberOfBrokerSheddingPerCycle",
            "loadBalancerMaxNumberOfBrokerTransfersPerCycle",
        ),
        check=at_least(1),
    )
    shedding_delay_seconds: int = setting(
        180,
        "cooldown after a broker unloads",
        aliases=("loadBalanceSheddingDelayInSeconds", "loadBalanceUnloadDelayInSeconds"),
        check=at_least(0),
    )
    load_data_ttl_seconds: int = setting(
        1800,
        "load older than this is skipped",
        aliases=("loadBalancerBrokerLoadDataTTLInSeconds",),
        check=at_least(0),
    )
    transfer_enabled: bool = setting(
        True, "name the destination (and allow swaps)", aliases=("loadBalancerTransferEnabled",)
    )
    shed_bundles_with_policies: bool = setting(
        False,
        "also move isolation/anti-affinity bundles",
        aliases=("loadBalancerSheddingBundlesWithPoliciesEnabled",),
    )
    max_bundles_in_load_report: int = setting(
        10,
        "top-K bundles per broker",
        aliases=("loadBalancerMaxNumberOfBundlesInBundleLoadReport",),
        check=at_least(1),
    )
    interval_minutes: float = setting(
        1, "cycle period", aliases=("loadBalancerSheddingIntervalMinutes",), check=at_least(0)
    )
    grace_period_minutes: float = setting(
        30,
        "a moved bundle is not moved again for this long",
        aliases=("loadBalancerSheddingGracePeriodMinutes",),
        check=at_least(0),
    )
    overloaded_threshold_percentage: float = setting(
        85,
        "overload rule",
        aliases=("loadBalancerBrokerOverloadedThresholdPercentage",),
        check=between(0, 1000),
    )
    history_resource_percentage: float = setting(
        0.9,
        "weight of history in the moving average",
        aliases=("loadBalancerHistoryResourcePercentage",),
        check=between(0.0, 1.0),
    )
    cpu_weight: float = setting(
        1.0,
        "weight of cpu in the max",
        aliases=("loadBalancerCPUResourceWeight",),
        check=at_least(0),
    )
    memory_weight: float = setting(
        0.0,
        "weight of memory (deprecated)",
        aliases=("loadBalancerMemoryResourceWeight",),
        check=at_least(0),
    )
    direct_memory_weight: float = setting(
        0.0,
        "weight of direct memory",
        aliases=("loadBalancerDirectMemoryResourceWeight",),
        check=at_least(0),
    )
    bandwidth_in_weight: float = setting(
        1.0,
        "weight of bandwidth in",
        aliases=("loadBalancerBandwidthInResourceWeight", "loadBalancerBandwithInResourceWeight"),
        check=at_least(0),
    )
    bandwidth_out_weight: float = setting(
        1.0,
        "weight of bandwidth out",
        aliases=("loadBalancerBandwidthOutResourceWeight", "loadBalancerBandwithOutResourceWeight"),
        check=at_least(0),
    )
    threshold_shedder_percentage: float = setting(
        10,
        "ThresholdShedder: shed above average + this",
        aliases=("loadBalancerBrokerThresholdShedderPercentage",),
        check=between(0, 100),
    )
    bundle_unload_min_throughput_mb: float = setting(
        10,
        "ThresholdShedder: smallest worthwhile unload, MB/s",
        aliases=("loadBalancerBundleUnloadMinThroughputThreshold",),
        check=at_least(0),
    )
    lower_boundary_shedding_enabled: bool = setting(
        False,
        "ThresholdShedder: also shed toward underloaded brokers",
        aliases=("lowerBoundarySheddingEnabled",),
    )
    msg_rate_difference_threshold: float = setting(
        50,
        "UniformLoadShedder: msg-rate gap, percent",
        aliases=("loadBalancerMsgRateDifferenceShedderThreshold",),
        check=at_least(0),
    )
    throughput_multiplier_threshold: float = setting(
        4,
        "UniformLoadShedder: throughput ratio (0 turns it off)",
        aliases=("loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold",),
        check=at_least(0),
    )
    max_unload_percentage: float = setting(
        0.2,
        "UniformLoadShedder: share of the gap moved",
        aliases=("maxUnloadPercentage",),
        check=between(0.0, 1.0),
    )
    min_unload_message: int = setting(
        1000,
        "UniformLoadShedder: smallest msg/s worth moving",
        aliases=("minUnloadMessage",),
        check=at_least(0),
    )
    min_unload_message_throughput: int = setting(
        1024 * 1024,
        "UniformLoadShedder: smallest bytes/s worth moving",
        aliases=("minUnloadMessageThroughput",),
        check=at_least(0),
    )
    max_unload_bundle_num_per_shedding: int = setting(
        -1,
        "UniformLoadShedder: bundles per cycle; -1 = no limit",
        aliases=("maxUnloadBundleNumPerShedding",),
    )
    avg_low_threshold: float = setting(
        15,
        "AvgShedder: score gap (points) of a pair that counts as a hit",
        aliases=("loadBalancerAvgShedderLowThreshold",),
        check=at_least(0),
    )
    avg_high_threshold: float = setting(
        40,
        "AvgShedder: score gap (points) of a pair that counts as a high hit",
        aliases=("loadBalancerAvgShedderHighThreshold",),
        check=at_least(0),
    )
    avg_hit_count_low_threshold: int = setting(
        8,
        "AvgShedder: consecutive hits before a pair unloads",
        aliases=("loadBalancerAvgShedderHitCountLowThreshold",),
        check=at_least(1),
    )
    avg_hit_count_high_threshold: int = setting(
        2,
        "AvgShedder: consecutive high hits before a pair unloads",
        aliases=("loadBalancerAvgShedderHitCountHighThreshold",),
        check=at_least(1),
    )
    debug_mode_enabled: bool = setting(
        False, "log every step", aliases=("loadBalancerDebugModeEnabled",)
    )
    throughput_signal: bool = setting(
        True, "also weigh message throughput against NIC speed, as PIP-220 lists (trimtab)"
    )
    excluded_namespaces: tuple[str, ...] = setting(
        (),
        "namespaces whose bundles are never shed (PIP-380)",
        aliases=("loadBalancerSheddingExcludedNamespaces",),
    )
    average_resource_usage_difference_threshold_percentage: float = setting(
        10,
        "placement for unload-only shedders: candidates this far below the average",
        aliases=("loadBalancerAverageResourceUsageDifferenceThresholdPercentage",),
        check=between(0, 100),
    )
    report_update_threshold_percentage: float = setting(
        10,
        "a broker re-reports its load after a change this large (simulator)",
        aliases=("loadBalancerReportUpdateThresholdPercentage",),
        check=at_least(0),
    )
    report_update_max_interval_minutes: float = setting(
        15,
        "a broker re-reports at least this often (simulator)",
        aliases=("loadBalancerReportUpdateMaxIntervalMinutes",),
        check=at_least(0),
    )


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


BALANCER_MODES: dict[str, BalancerMode] = _own(BalancerMode)
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

        >>> cfg = Config.of(profile="redpanda").allocation
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


_SECTIONS: dict[str, type] = {
    "topology": TopologyConfig,
    "placement": PlacementConfig,
    "bookie_info": BookieInfoConfig,
    "shedding": SheddingConfig,
    "allocation": AllocationConfig,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration: one immutable section per part of trimtab."""

    topology: TopologyConfig = field(default_factory=TopologyConfig)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    bookie_info: BookieInfoConfig = field(default_factory=BookieInfoConfig)
    shedding: SheddingConfig = field(default_factory=SheddingConfig)
    allocation: AllocationConfig = field(default_factory=AllocationConfig)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def of(cls, **keys: Any) -> Config:
        """From keywords, under any accepted name: ``Config.of(minNumRacksPerWriteQuorum=3)``"""
        return cls.from_mapping(keys, source="keyword arguments")[0]

    @classmethod
    def load(cls, path: str | Path, *, strict: bool = True) -> tuple[Config, list[str]]:
        """Load a ``.toml`` or Java ``.properties``/``.conf`` file; returns (config, warnings).

        Upstream keys trimtab does not read are accepted; :meth:`read` also lists them.
        """
        loaded = cls.read(path, strict=strict)
        return loaded.config, list(loaded.warnings)

    @classmethod
    def read(cls, path: str | Path, *, strict: bool = True) -> LoadedConfig:
        """Load a ``.toml`` or ``.properties``/``.conf`` file, with the upstream keys it ignored."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        if path.suffix == ".toml":
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
            except UnicodeDecodeError:
                raise ConfigError(
                    f"config file {path} is not UTF-8 text: save it as UTF-8"
                ) from None
            return _apply(_flatten(data), source=str(path), strict=strict)
        return _apply(_read_properties(path), source=str(path), strict=strict, blank_unset=True)

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, source: str | None = None, strict: bool = True
    ) -> tuple[Config, list[str]]:
        """Apply ``data`` (any accepted key names) over the defaults; returns (config, warnings)."""
        loaded = _apply(data, source=source, strict=strict)
        return loaded.config, list(loaded.warnings)

    # -- introspection ---------------------------------------------------------------------

    @staticmethod
    def settings() -> list[Setting]:
        """Every setting, for documentation and ``trimtab config``."""
        return [s for name, c in _SECTIONS.items() for s in settings_of(c, name)]

    def items(self) -> Iterator[tuple[Setting, Any]]:
        for spec in self.settings():
            yield spec, getattr(getattr(self, spec.section), spec.name)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class IgnoredKey:
    """A key upstream defines and trimtab does not read, with the upstream files defining it."""

    key: str
    defined_in: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A loaded file: the config, the upstream keys it ignored (file order), and warnings."""

    config: Config
    ignored: tuple[IgnoredKey, ...] = ()
    warnings: tuple[str, ...] = ()  # unknown keys skipped because strict=False
    explicit: frozenset[str] = frozenset()  # the settings the file sets ("shedding.strategy")


#: broker.conf's switches for the BookKeeper client a Pulsar broker makes (upstream
#: ``BookKeeperClientFactoryImpl.setDefaultEnsemblePlacementPolicy``): written true, the
#: policy is region-aware (which wins) or rack-aware, and racks come from the metadata store's
#: ``/bookies`` znode unless the file names a resolver itself (``reppDnsResolverClass``).
PULSAR_PLACEMENT_SWITCHES: dict[str, PolicyName] = {
    "bookkeeperClientRegionawarePolicyEnabled": PolicyName.REGIONAWARE,
    "bookkeeperClientRackawarePolicyEnabled": PolicyName.RACKAWARE,
}


def _pulsar_placement(
    switches: Mapping[str, Any], updates: dict[str, dict[str, Any]], source: str | None
) -> None:
    """Apply the broker.conf switches written in the file (see the table above); a policy or
    resolver the file sets by its own key is kept."""
    on = [
        policy
        for key, policy in PULSAR_PLACEMENT_SWITCHES.items()
        if key in switches and _switch(key, switches[key], source)
    ]
    if not on:
        return
    placement, topology = updates["placement"], updates["topology"]
    placement.setdefault("ensemble_placement_policy", on[0])
    topology.setdefault("dns_resolver_class", RESOLVERS["pulsar"])


def _switch(key: str, value: Any, source: str | None) -> bool:
    spec = Setting("", key, bool, (), None, None, "")
    return bool(spec.coerce(value, key=key, source=source))


def _apply(
    data: Mapping[str, Any], *, source: str | None, strict: bool, blank_unset: bool = False
) -> LoadedConfig:
    """Apply ``data`` over the defaults: trimtab keys are set, upstream-only keys ignored.

    With ``blank_unset`` (properties files) a key written with an empty value keeps its default,
    as Pulsar reads ``broker.conf``, where ``key=`` means "not set".
    """
    updates: dict[str, dict[str, Any]] = {name: {} for name in _SECTIONS}
    seen: dict[str, str] = {}
    ignored: list[IgnoredKey] = []
    warnings: list[str] = []
    switches: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = raw_key.strip()
        switch = next((k for k in spellings(key) if k in PULSAR_PLACEMENT_SWITCHES), None)
        if switch is not None:
            if not (blank_unset and isinstance(value, str) and not value.strip()):
                switches[switch] = value
            continue
        spec = _lookup(key)
        if spec is None:
            upstream = defined_in(key)
            if upstream:
                ignored.append(IgnoredKey(key, upstream))
                continue
            error = UnknownConfigKeyError(key, nearest(key, _known_names()), source)
            if strict:
                raise error
            warnings.append(f"ignored {error}")
            continue
        if blank_unset and isinstance(value, str) and not value.strip():
            continue
        if spec.key in seen:
            raise ConfigError(
                f"config key '{key}' sets {spec.key}, already set by '{seen[spec.key]}'"
                + (f" in {source}" if source else "")
            )
        seen[spec.key] = key
        updates[spec.section][spec.name] = spec.coerce(value, key=key, source=source)
    _pulsar_placement(switches, updates, source)
    sections = {name: section_cls(**updates[name]) for name, section_cls in _SECTIONS.items()}
    return LoadedConfig(Config(**sections), tuple(ignored), tuple(warnings), frozenset(seen))


def _index() -> dict[str, Setting]:
    global _INDEX
    if _INDEX is None:
        specs = Config.settings()
        bare_counts: dict[str, int] = {}
        for spec in specs:
            bare_counts[spec.name] = bare_counts.get(spec.name, 0) + 1
        index: dict[str, Setting] = {}
        for spec in specs:
            index[spec.key] = spec
            if bare_counts[spec.name] == 1:
                index[spec.name] = spec
            for alias in spec.aliases:
                index[alias] = spec
        _INDEX = index
    return _INDEX


_INDEX: dict[str, Setting] | None = None


def _lookup(key: str) -> Setting | None:
    index = _index()
    return next((index[name] for name in spellings(key) if name in index), None)


def _known_names() -> list[str]:
    """trimtab's names and upstream's, so a typo of either is pointed to the key it meant."""
    return sorted(set(_index()) | set(upstream_names()))


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML tables become dotted keys; a table named after a section keeps its prefix."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
        elif prefix and _lookup(f"{prefix}{key}") is None and key in _upstream_in(prefix):
            flat[key] = value  # an upstream name written inside its section's table
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _upstream_in(prefix: str) -> set[str]:
    """Upstream key names that belong to the section table ``prefix`` (e.g. ``'placement.'``)."""
    section = prefix.rstrip(".")
    return {a for s in Config.settings() if s.section == section for a in s.aliases}


def _read_properties(path: Path) -> dict[str, str]:
    from jproperties import Properties

    props = Properties()
    try:
        with path.open("rb") as handle:
            props.load(handle, "utf-8")
    except Exception as exc:  # jproperties raises its own parse errors
        raise ConfigError(f"config file {path} is not a valid properties file: {exc}") from None
    return {key: value for key, (value, _meta) in props.items()}
