"""Build the policy a configuration names, with its resolver (the only place config meets code).

``ensemblePlacementPolicy`` picks the class (Java class names accepted by the config layer);
``reppDnsResolverClass`` and the topology settings pick the resolver unless one is given. A
resolver that cannot start falls back to every node on the default rack, except when
``enforceMinNumRacksPerWriteQuorum`` is on, where the error is raised (upstream's rule).

Placement reads no cluster: which ZooKeeper a ``pulsar`` resolver reads ``/bookies`` from is
the caller's to say (``zk_servers``, found by :func:`trimtab.systems.zookeeper.zk_servers`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

from trimtab.config.bookkeeper import PolicyName
from trimtab.config.core import Config
from trimtab.placement.default import DefaultPolicy
from trimtab.placement.locations import LocationSource, local_host
from trimtab.placement.policy import WeightsFactory, uniform_weights
from trimtab.placement.rackaware import RackAwarePolicy
from trimtab.placement.regionaware import RegionAwarePolicy
from trimtab.placement.services import FeatureSwitches, Stats
from trimtab.placement.weights import disk_weights
from trimtab.placement.zoneaware import ZoneAwarePolicy
from trimtab.readers.rack_table import RackTableFile
from trimtab.topology import default_rack_for, make_resolver

__all__ = ["POLICIES", "Policy", "make_policy"]

#: Any of the four policies (each satisfies :class:`~trimtab.placement.contract.PlacementPolicy`).
Policy = DefaultPolicy | RackAwarePolicy | RegionAwarePolicy | ZoneAwarePolicy

POLICIES: dict[PolicyName, type[Policy]] = {
    PolicyName.DEFAULT: DefaultPolicy,
    PolicyName.RACKAWARE: RackAwarePolicy,
    PolicyName.REGIONAWARE: RegionAwarePolicy,
    PolicyName.ZONEAWARE: ZoneAwarePolicy,
}


def make_policy(
    config: Config | None = None,
    *,
    resolver: LocationSource = None,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.monotonic,
    features: FeatureSwitches | None = None,
    stats: Stats | None = None,
    local_location: str | None = None,
    weights: WeightsFactory | None = None,
    host: str | None = None,
    zk_servers: str | None = None,
) -> Policy:
    """The policy ``config.placement.ensemble_placement_policy`` names, ready for
    ``on_cluster_changed``. Without ``resolver`` one is made from ``config.topology``; without
    ``weights``, disk weights (:mod:`~trimtab.placement.weights`) when
    ``diskWeightBasedPlacementEnabled``, else uniform. Without ``local_location`` the client's
    own location is what the resolver says of ``host`` (default: this machine, by name or
    address per ``useHostnameResolveLocalNodePlacementPolicy``), unless
    ``ignoreLocalNodeInPlacementPolicy``. A resolver that reports moved nodes
    (``add_node_listener``, as the Pulsar rack resolver does) is wired to ``on_rack_change``.
    ``zk_servers`` is the ZooKeeper a ``pulsar`` resolver made here reads (None: that resolver
    cannot start)."""
    config = config if config is not None else Config()
    if weights is None:
        enabled = config.placement.disk_weight_based_placement_enabled
        weights = disk_weights(config) if enabled else uniform_weights
    kind = config.placement.ensemble_placement_policy
    default_rack = default_rack_for(kind)
    owned = None
    if resolver is None and kind != PolicyName.DEFAULT:
        topo = config.topology
        resolver = make_resolver(
            kind=topo.dns_resolver_class,
            script=topo.script_file_name,
            number_args=topo.script_number_args,
            timeout_s=topo.script_timeout_seconds,
            table=None if topo.table_file is None else RackTableFile(Path(topo.table_file)),
            default_rack=default_rack,
            strict=config.placement.enforce_min_num_racks_per_write_quorum,
            zk_servers=zk_servers,
        )
        owned = resolver
    policy = POLICIES[kind](
        config=config,
        resolver=resolver,
        rng=rng,
        clock=clock,
        features=features,
        stats=stats,
        local_location=local_location,
        local_host=_local_host(config, local_location, host),
        weights=weights,
        default_rack=default_rack,
    )
    notifier = getattr(resolver, "add_node_listener", None)
    if callable(notifier):  # upstream RackChangeNotifier: the resolver tells the policy
        notifier(policy.on_rack_change)
    closer = getattr(owned, "close", None)
    if callable(closer):  # a resolver made here (a ZooKeeper client) ends with the policy
        policy.on_close(closer)
    return policy


def _local_host(config: Config, local_location: str | None, host: str | None) -> str | None:
    placement = config.placement
    if local_location is not None or placement.ignore_local_node_in_placement_policy:
        return None
    if host is not None:
        return host
    return local_host(use_hostname=placement.use_hostname_resolve_local_node_placement_policy)
