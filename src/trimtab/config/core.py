"""The whole configuration, and the one place a key name becomes a setting.

:class:`Config` holds one immutable section per system: ``topology``, ``placement`` and
``bookie_info`` (BookKeeper, :mod:`trimtab.config.bookkeeper`), ``shedding`` (Pulsar,
:mod:`trimtab.config.pulsar`), ``allocation`` (Redpanda, :mod:`trimtab.config.redpanda`) and
``zookeeper`` (authentication, TLS and ACLs, :mod:`trimtab.config.zookeeper`).

Every setting answers to its trimtab name (``placement.min_num_racks_per_write_quorum``, or the
bare field name when it is unique) and to the key users of the upstream system already write
(``minNumRacksPerWriteQuorum`` in ``bk_server.conf``, ``loadBalancerBrokerLoadTargetStd`` in
``broker.conf``, ``topic_partitions_per_shard`` in Redpanda). :func:`apply_keys` maps any of
them onto the defaults, for keywords (:meth:`Config.of`) and for files alike (the loader,
:mod:`trimtab.config.loader`, turns a file into such a mapping). A key that upstream defines
but trimtab does not read (``journalDirectories``, ``managedLedgerDefaultEnsembleSize``...) is
accepted and listed as ignored, with the upstream file that defines it
(:mod:`trimtab.config.upstream`). A key that is neither trimtab's nor upstream's is an error
that names it and suggests the nearest known key (``strict=False`` returns it as a warning
instead); a bad value names the key, the value and what is allowed.

    >>> Config.of(minNumRacksPerWriteQuorum=3).placement.min_num_racks_per_write_quorum
    3
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from trimtab.config.bookkeeper import (
    RESOLVERS,
    BookieInfoConfig,
    PlacementConfig,
    TlsConfig,
    TopologyConfig,
)
from trimtab.config.pulsar import PULSAR_PLACEMENT_SWITCHES, SheddingConfig
from trimtab.config.redpanda import AllocationConfig
from trimtab.config.secrets import REDACTED, is_secret_name, remember_secret
from trimtab.config.settings import Setting, nearest, settings_of
from trimtab.config.upstream import PASSTHROUGH_PREFIXES, defined_in, spellings, upstream_names
from trimtab.config.zookeeper import ZooKeeperConfig  # issue 41 part 2 (zksec)
from trimtab.errors import ConfigError, UnknownConfigKeyError

__all__ = [
    "SUPERSEDED_BY",
    "Config",
    "IgnoredKey",
    "LoadedConfig",
    "apply_keys",
    "is_secret_setting",
    "lookup",
]


_SECTIONS: dict[str, type] = {
    "topology": TopologyConfig,
    "placement": PlacementConfig,
    "bookie_info": BookieInfoConfig,
    "shedding": SheddingConfig,
    "allocation": AllocationConfig,
    # issue 41: TLS of the agent and readers; ZooKeeper authentication, TLS and ACLs
    "tls": TlsConfig,
    "zookeeper": ZooKeeperConfig,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration: one immutable section per part of trimtab.

    Built from keywords with :meth:`of`, from a mapping with :meth:`from_mapping`, and from a
    file (TOML, ``bk_server.conf``, ``broker.conf``) with
    :func:`trimtab.config.loader.read_config`.
    """

    topology: TopologyConfig = field(default_factory=TopologyConfig)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    bookie_info: BookieInfoConfig = field(default_factory=BookieInfoConfig)
    shedding: SheddingConfig = field(default_factory=SheddingConfig)
    allocation: AllocationConfig = field(default_factory=AllocationConfig)
    # issue 41: TLS of the agent and readers; ZooKeeper authentication, TLS and ACLs
    tls: TlsConfig = field(default_factory=TlsConfig)
    zookeeper: ZooKeeperConfig = field(default_factory=ZooKeeperConfig)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def of(cls, **keys: Any) -> Config:
        """From keywords, under any accepted name: ``Config.of(minNumRacksPerWriteQuorum=3)``"""
        return cls.from_mapping(keys, source="keyword arguments")[0]

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, source: str | None = None, strict: bool = True
    ) -> tuple[Config, list[str]]:
        """Apply ``data`` (any accepted key names) over the defaults; returns (config, warnings)."""
        loaded = apply_keys(data, source=source, strict=strict)
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
        """Every section as plain values; a secret's value (a password) shows as ``***``."""
        doc = dataclasses.asdict(self)
        for spec in self.settings():
            if doc[spec.section][spec.name] is not None and is_secret_setting(spec):
                doc[spec.section][spec.name] = REDACTED
        return doc


def is_secret_setting(spec: Setting) -> bool:
    """Whether a setting holds a secret, by its names (:mod:`trimtab.config.secrets`)."""
    return any(is_secret_name(name) for name in (spec.key, *spec.aliases))


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


def _passed_through(key: str) -> bool:
    """Whether ``key`` carries a passthrough prefix (``bookkeeper_``...): meant for the
    BookKeeper client, so it wins over the same key written bare in the same file."""
    return key.startswith(PASSTHROUGH_PREFIXES)


def apply_keys(
    data: Mapping[str, Any], *, source: str | None, strict: bool, blank_unset: bool = False
) -> LoadedConfig:
    """Apply ``data`` over the defaults: trimtab keys are set, upstream-only keys ignored
    (listed in the result), a key of neither refused (with ``strict``) or returned as a warning.

    With ``blank_unset`` (properties files) a key written with an empty value keeps its default,
    as Pulsar reads ``broker.conf``, where ``key=`` means "not set".
    """
    updates: dict[str, dict[str, Any]] = {name: {} for name in _SECTIONS}
    superseded = _superseded(data, blank_unset=blank_unset)
    seen: dict[str, str] = {}
    ignored: list[IgnoredKey] = []
    warnings: list[str] = []
    switches: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = raw_key.strip()
        if isinstance(value, str) and value and is_secret_name(key):
            remember_secret(value)  # kept out of every output by value too (crash reports)
        switch = next((k for k in spellings(key) if k in PULSAR_PLACEMENT_SWITCHES), None)
        if switch is not None:
            if not (blank_unset and isinstance(value, str) and not value.strip()):
                switches[switch] = value
            continue
        if key in superseded:
            ignored.append(IgnoredKey(key, superseded[key]))
            continue
        spec = lookup(key)
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
        if spec.key in seen and _passed_through(key) != _passed_through(seen[spec.key]):
            # broker.conf: 'bookkeeper_X' is for its BookKeeper client, bare 'X' Pulsar's own
            if not _passed_through(key):
                ignored.append(IgnoredKey(key, defined_in(key)))
                continue
            ignored.append(IgnoredKey(seen[spec.key], defined_in(seen[spec.key])))
        elif spec.key in seen:
            raise ConfigError(
                f"config key '{key}' sets {spec.key}, already set by '{seen[spec.key]}'"
                + (f" in {source}" if source else "")
            )
        seen[spec.key] = key
        updates[spec.section][spec.name] = spec.coerce(value, key=key, source=source)
    _pulsar_placement(switches, updates, source)
    sections = {name: section_cls(**updates[name]) for name, section_cls in _SECTIONS.items()}
    return LoadedConfig(Config(**sections), tuple(ignored), tuple(warnings), frozenset(seen))


#: A legacy key -> the key that wins over it when a file sets both, as upstream reads them.
#: Pulsar's ``ServiceConfiguration.getMetadataStoreUrl()`` returns ``metadataStoreUrl`` when it
#: is not blank and only otherwise ``zookeeperServers`` (Pulsar 3.x's container image writes
#: both), so the legacy key is then ignored rather than a conflict.
SUPERSEDED_BY = {"zookeeperServers": "metadataStoreUrl"}


def _superseded(data: Mapping[str, Any], *, blank_unset: bool) -> dict[str, tuple[str, ...]]:
    """The legacy keys of ``data`` that a newer key also set in ``data`` overrides, each with
    the note shown beside an ignored key."""
    keys = {str(k).strip(): v for k, v in data.items()}
    out: dict[str, tuple[str, ...]] = {}
    for legacy, newer in SUPERSEDED_BY.items():
        value = keys.get(newer)
        unset = value is None or (blank_unset and isinstance(value, str) and not value.strip())
        if legacy in keys and not unset:
            out[legacy] = (f"Pulsar broker.conf (superseded by {newer}, as the broker reads it)",)
    return out


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


def lookup(key: str) -> Setting | None:
    """The setting ``key`` names (any accepted spelling, also behind a passthrough prefix)."""
    index = _index()
    return next((index[name] for name in spellings(key) if name in index), None)


def _known_names() -> list[str]:
    """trimtab's names and upstream's, so a typo of either is pointed to the key it meant."""
    return sorted(set(_index()) | set(upstream_names()))
