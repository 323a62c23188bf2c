"""A BookKeeper client's placement policy as its configuration names it.

This is where configuration meets code for placement, as a BookKeeper client builds its
``EnsemblePlacementPolicy`` from ``ClientConfiguration``: ``ensemblePlacementPolicy`` picks the
class (Java class names accepted by the config layer); ``reppDnsResolverClass`` and the topology
settings pick the resolver:

* ``script`` runs ``networkTopologyScriptFileName`` (upstream's default, Hadoop's
  ``ScriptBasedMapping``); ``table`` reads ``topologyTableFile``; ``pulsar`` follows Pulsar's
  ``/bookies`` znode on ``zk_servers``; ``default`` puts every host on the default rack; anything
  else is an import path (``package.module:ClassName``) of a class with ``resolve`` and
  ``reload_cached_mappings``.
* A resolver that cannot start (no script configured, a script that fails its check, an import
  path that does not load, a ZooKeeper that does not answer) is logged and replaced by every
  node on the default rack, except when ``enforceMinNumRacksPerWriteQuorum`` is on (``strict``),
  where the :class:`~trimtab.errors.ResolverError` is raised: a cluster on one default rack could
  never meet the minimum (upstream's rule).

It lives with BookKeeper's adapters because it opens files and dials ZooKeeper; the policies
themselves (:mod:`trimtab.placement`) and the tree (:mod:`trimtab.topology`) decide on what they
are handed.
"""

from __future__ import annotations

import importlib
import os
import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

from trimtab.cluster import DEFAULT_RACK
from trimtab.config.bookkeeper import PolicyName
from trimtab.config.core import Config
from trimtab.errors import ResolverError
from trimtab.placement.catalog import POLICIES, Policy
from trimtab.placement.locations import LocationSource, local_host
from trimtab.placement.policy import WeightsFactory, uniform_weights
from trimtab.placement.services import FeatureSwitches, Stats
from trimtab.placement.weights import disk_weights
from trimtab.readers.rack_table import RackTableFile
from trimtab.systems.pulsar.bookies import PulsarRackResolver
from trimtab.systems.zookeeper.security import NO_SECURITY, ZkSecurity
from trimtab.systems.zookeeper.security import zk_security as zk_security_of
from trimtab.topology import (
    DefaultResolver,
    Resolver,
    ScriptResolver,
    TableResolver,
    default_rack_for,
)
from trimtab.topology._common import LOG
from trimtab.topology.table import TableFile

__all__ = ["load_resolver", "make_policy", "make_resolver"]

# The built-in kinds :func:`make_resolver` knows by name; anything else is an import path.
_KINDS = ("default", "script", "table", "pulsar")


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
    zk_security: ZkSecurity | None = None,
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
    cannot start), logged in to with ``zk_security`` (default: the configuration's own,
    :func:`~trimtab.systems.zookeeper.security.zk_security`)."""
    config = config if config is not None else Config()
    if weights is None:
        enabled = config.placement.disk_weight_based_placement_enabled
        weights = disk_weights(config) if enabled else uniform_weights
    kind = config.placement.ensemble_placement_policy
    default_rack = default_rack_for(kind)
    owned = None
    if resolver is None and kind != PolicyName.DEFAULT:
        topo = config.topology
        if zk_security is None and topo.dns_resolver_class == "pulsar":
            zk_security = zk_security_of(config)
        resolver = make_resolver(
            kind=topo.dns_resolver_class,
            script=topo.script_file_name,
            number_args=topo.script_number_args,
            timeout_s=topo.script_timeout_seconds,
            table=None if topo.table_file is None else RackTableFile(Path(topo.table_file)),
            default_rack=default_rack,
            strict=config.placement.enforce_min_num_racks_per_write_quorum,
            zk_servers=zk_servers,
            zk_security=zk_security,
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


def load_resolver(import_path: str, **kwargs: object) -> Resolver:
    """Import ``"package.module:ClassName"`` (or ``"package.module.ClassName"``), build it.

    Raises :class:`ResolverError` naming the path if the module or class is missing, the
    constructor fails, or the object lacks ``resolve`` / ``reload_cached_mappings``.
    """
    path = import_path.strip()
    if ":" in path:
        module_name, _, attribute = path.partition(":")
    else:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise ResolverError(
            f"bad resolver import path {import_path!r}: expected 'package.module:ClassName'"
        )
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise ResolverError(
            f"cannot load resolver {import_path!r}: module {module_name!r} not importable ({exc})"
        ) from None
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise ResolverError(
                f"cannot load resolver {import_path!r}: {module_name!r} has no {attribute!r}"
            )
        target = getattr(target, name)
    if not callable(target):
        raise ResolverError(f"cannot load resolver {import_path!r}: it is not a class")
    try:
        resolver = target(**kwargs)
    except ResolverError:
        raise
    except Exception as exc:  # a plug-in's constructor may fail in any way; say which one failed
        raise ResolverError(
            f"cannot construct resolver {import_path!r}: {type(exc).__name__}: {exc}"
        ) from exc
    missing = [m for m in ("resolve", "reload_cached_mappings") if not _has_method(resolver, m)]
    if missing:
        raise ResolverError(
            f"{import_path!r} is not a resolver: it has no {' or '.join(missing)} method"
        )
    return cast(Resolver, resolver)


def _has_method(obj: object, name: str) -> bool:
    return callable(getattr(obj, name, None))


def make_resolver(
    *,
    kind: str,
    script: str | os.PathLike[str] | None = None,
    number_args: int = 100,
    timeout_s: float = 10.0,
    table: Mapping[str, str] | TableFile | None = None,
    default_rack: str = DEFAULT_RACK,
    strict: bool = False,
    zk_servers: str | None = None,
    zk_security: ZkSecurity | None = None,
) -> Resolver:
    """Build the resolver ``kind`` names: ``script``, ``table``, ``default``, ``pulsar`` (the
    ``/bookies`` znode on ``zk_servers``) or an import path. ``table`` is a mapping or a
    :class:`~trimtab.topology.table.TableFile` the caller opened
    (:class:`trimtab.readers.rack_table.RackTableFile`): this module reads no file format.

    A resolver that cannot start is logged and replaced by ``DefaultResolver(default_rack)``;
    with ``strict`` the :class:`ResolverError` is raised instead. An unknown ``kind`` that is
    not an import path either is a configuration mistake, so it raises ``ValueError`` always.
    """
    fallback = DefaultResolver(default_rack)
    name = kind.strip()
    try:
        return _build(
            name,
            script=script,
            number_args=number_args,
            timeout_s=timeout_s,
            table=table,
            default_rack=fallback.default_rack,
            zk_servers=zk_servers,
            zk_security=zk_security or NO_SECURITY,
        )
    except ResolverError as exc:
        if strict:
            raise
        LOG.warning(
            "resolver %r could not start (%s); every node goes to the default rack %s",
            name,
            exc,
            fallback.default_rack,
        )
        return fallback


def _build(
    name: str,
    *,
    script: str | os.PathLike[str] | None,
    number_args: int,
    timeout_s: float,
    table: Mapping[str, str] | TableFile | None,
    default_rack: str,
    zk_servers: str | None = None,
    zk_security: ZkSecurity = NO_SECURITY,
) -> Resolver:
    match name.lower():
        case "default":
            return DefaultResolver(default_rack)
        case "script":
            if script is None or not str(script).strip():
                raise ResolverError(
                    "resolver kind 'script' needs a script (networkTopologyScriptFileName),"
                    " and none is configured"
                )
            return ScriptResolver(
                Path(script),
                number_args=number_args,
                timeout_s=timeout_s,
                default_rack=default_rack,
            )
        case "table":
            if table is None:
                raise ResolverError("resolver kind 'table' needs a table file or mapping")
            if isinstance(table, Mapping):
                return TableResolver(table, default_rack=default_rack)
            return TableResolver(default_rack=default_rack, file=table)
        case "pulsar":
            return PulsarRackResolver(
                zk_servers, default_rack=default_rack, timeout_s=timeout_s, security=zk_security
            )
    if "." in name or ":" in name:
        return load_resolver(name)
    raise ValueError(
        f"unknown resolver kind {name!r}: expected one of {', '.join(_KINDS)}"
        " or an import path such as 'package.module:ClassName'"
    )
