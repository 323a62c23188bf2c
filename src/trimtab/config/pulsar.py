"""Pulsar's settings: the load balancer's shedding (``broker.conf``, ``ServiceConfiguration``).

One section of :class:`~trimtab.config.core.Config`, :class:`SheddingConfig`, under the names
``broker.conf`` uses (``loadBalancerLoadSheddingStrategy``, ``loadBalancerBrokerLoadTargetStd``)
with upstream's defaults: PIP-220's TransferShedder, the older shedders (threshold, overload,
uniform, avg) and trimtab's balanced shedder, the resource weights, the timers and the filters.

``loadBalancerDebugModeEnabled`` is not a setting here: upstream it only adds log lines (and, in
the TransferShedder, counts swapped-in traffic, which trimtab always counts), so a file that sets
it loads with the key listed as ignored, like every upstream key trimtab does not read.

``broker.conf`` also configures the BookKeeper client a broker makes; two of its switches pick
the placement policy and the rack source (:data:`PULSAR_PLACEMENT_SWITCHES`, applied by
:mod:`trimtab.config.core`). The shedding engine imports this module, never the loader.
"""

from __future__ import annotations

from dataclasses import dataclass

from trimtab.config.bookkeeper import PolicyName
from trimtab.config.settings import Choice, at_least, between, choices_of, setting

__all__ = [
    "LOAD_NORMALISATION",
    "PULSAR_PLACEMENT_SWITCHES",
    "SHEDDERS",
    "SheddingConfig",
    "Strategy",
]

_PULSAR_LB = "org.apache.pulsar.broker.loadbalance"


class Strategy(Choice):
    """``loadBalancerLoadSheddingStrategy``: PIP-220's TransferShedder, trimtab's balanced
    shedder, and the older Pulsar shedders."""

    TRANSFER = "transfer"
    BALANCED = "balanced"
    THRESHOLD = "threshold"
    OVERLOAD = "overload"
    UNIFORM = "uniform"
    AVG = "avg"


SHEDDERS: dict[str, Strategy] = {
    **choices_of(Strategy),
    f"{_PULSAR_LB}.extensions.scheduler.transfershedder": Strategy.TRANSFER,
    f"{_PULSAR_LB}.impl.thresholdshedder": Strategy.THRESHOLD,
    f"{_PULSAR_LB}.impl.overloadshedder": Strategy.OVERLOAD,
    f"{_PULSAR_LB}.impl.uniformloadshedder": Strategy.UNIFORM,
    f"{_PULSAR_LB}.impl.avgshedder": Strategy.AVG,
}
LOAD_NORMALISATION = {"capacity": "capacity", "absolute": "absolute"}


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
    min_hottest_gain: float = setting(
        0.02,
        "a plan is recommended only if it lowers the hottest broker's settled load by at "
        "least this much (load: a fraction of capacity; trimtab)",
        check=between(0.0, 1.0),
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


#: broker.conf's switches for the BookKeeper client a Pulsar broker makes (upstream
#: ``BookKeeperClientFactoryImpl.setDefaultEnsemblePlacementPolicy``): written true, the
#: policy is region-aware (which wins) or rack-aware, and racks come from the metadata store's
#: ``/bookies`` znode unless the file names a resolver itself (``reppDnsResolverClass``).
PULSAR_PLACEMENT_SWITCHES: dict[str, PolicyName] = {
    "bookkeeperClientRegionawarePolicyEnabled": PolicyName.REGIONAWARE,
    "bookkeeperClientRackawarePolicyEnabled": PolicyName.RACKAWARE,
}
