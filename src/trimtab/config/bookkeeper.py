"""BookKeeper's settings: ensemble placement, the rack resolver, and GET_BOOKIE_INFO polling.

Three sections of :class:`~trimtab.config.core.Config`, each under the names of BookKeeper's
``ClientConfiguration`` and ``ServerConfiguration`` (``minNumRacksPerWriteQuorum``,
``reppDnsResolverClass``, ``getBookieInfoIntervalSeconds``) and those of the BookKeeper client a
Pulsar broker makes (``bookkeeperClientMinNumRacksPerWriteQuorum``):

- :class:`PlacementConfig`: the ensemble placement policies and disk-weight based selection;
- :class:`TopologyConfig`: how a node's network location is found (script, table, Pulsar's
  ``/bookies`` znode, an importable class) and how membership flaps are absorbed;
- :class:`BookieInfoConfig`: how often and how patiently clients ask for free disk space, and
  where the registry lives;
- :class:`TlsConfig`: TLS on the agent's ports and the readers' connections, under BookKeeper's
  ``tls*`` key names (issue 41, part 1).

The closed sets of values are enumerations (:class:`PolicyName`, :class:`Sampling`,
:class:`CapBasis`, :class:`WeightsMode`) with one table of accepted spellings each (upstream's
Java class names among them). The placement engine imports this module, never the loader.
"""

from __future__ import annotations

from dataclasses import dataclass

from trimtab.config.settings import Check, Choice, at_least, between, choices_of, setting

__all__ = [
    "PLACEMENT_POLICIES",
    "RESOLVERS",
    "SAMPLING",
    "WEIGHTS_MODES",
    "WEIGHT_CAPS",
    "BookieInfoConfig",
    "CapBasis",
    "PlacementConfig",
    "PolicyName",
    "Sampling",
    "TlsConfig",
    "TopologyConfig",
    "WeightsMode",
    "zk_hosts",
]

_BK = "org.apache.bookkeeper"


class PolicyName(Choice):
    """``ensemblePlacementPolicy``: BookKeeper's three ensemble placement policies."""

    DEFAULT = "default"
    RACKAWARE = "rackaware"
    REGIONAWARE = "regionaware"
    ZONEAWARE = "zoneaware"


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


def zk_hosts(url: str) -> str | None:
    """The ZooKeeper connect string of a Pulsar metadata store URL (``zk:h1:2181,h2:2181/c``,
    ``metadata-store:zk:…``, or bare hosts), or None for a store of another kind (``etcd:``,
    ``rocksdb:``, ``memory:``), which trimtab cannot read."""
    text = url.strip().removeprefix("metadata-store:").removeprefix("zk:")
    head = text.split(",", 1)[0]
    if not text or "://" in text or not head.rsplit(":", 1)[-1].split("/", 1)[0].isdigit():
        return None
    return text


# Every accepted spelling (lower case) -> value: the one place these aliases are defined.
PLACEMENT_POLICIES: dict[str, PolicyName] = {
    **choices_of(PolicyName),
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

SAMPLING: dict[str, Sampling] = choices_of(Sampling)
WEIGHT_CAPS: dict[str, CapBasis] = {**choices_of(CapBasis), "min": CapBasis.MINIMUM}
WEIGHTS_MODES: dict[str, WeightsMode] = choices_of(WeightsMode)


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


# -- issue 41, part 1 (TLS): BookKeeper's TLS keys, PEM forms ------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsConfig:
    """TLS for GetBookieInfo under BookKeeper's key names (``bk_server.conf``, the client's
    ``ClientConfiguration``). Only PEM files are read: a ``tlsKeyStoreType`` or
    ``tlsTrustStoreType`` other than PEM is refused, naming the key, when TLS is set up.
    Command-line options (``--tls-cert``...) win over these."""

    provider_factory_class: str | None = setting(
        None,
        "set: TLS is on (upstream TLSContextFactory); readers start TLS to every node",
        aliases=("tlsProviderFactoryClass",),
    )
    provider: str = setting(
        "OpenSSL",
        "TLS implementation; trimtab always uses Python's OpenSSL",
        aliases=("tlsProvider",),
        choices={"openssl": "OpenSSL", "jdk": "JDK"},
    )
    certificate_path: str | None = setting(
        None, "PEM certificate (chain) of this node or client", aliases=("tlsCertificatePath",)
    )
    key_store: str | None = setting(
        None, "PEM private key of that certificate, unencrypted", aliases=("tlsKeyStore",)
    )
    key_store_type: str = setting("PEM", "only PEM is read", aliases=("tlsKeyStoreType",))
    key_store_password_path: str | None = setting(
        None,
        "encrypted keys are not read: give an unencrypted key (mode 600)",
        aliases=("tlsKeyStorePasswordPath",),
    )
    trust_store: str | None = setting(
        None, "PEM CA certificates peers are checked against", aliases=("tlsTrustStore",)
    )
    trust_store_type: str = setting("PEM", "only PEM is read", aliases=("tlsTrustStoreType",))
    client_authentication: bool = setting(
        False,
        "agent: require a client certificate signed by tlsTrustStore",
        aliases=("tlsClientAuthentication",),
    )
    hostname_verification_enabled: bool = setting(
        True,
        "readers: a bookie port's certificate must name the host dialled (false: the CA's "
        "signature alone; upstream's default is false); gRPC ports always check",
        aliases=("tlsHostnameVerificationEnabled",),
    )
