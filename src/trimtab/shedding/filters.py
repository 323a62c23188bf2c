"""Broker filters: which brokers may own a bundle, as Pulsar's extensible load manager decides.

Goals
    Bundles under a namespace isolation policy or in an anti-affinity group move only to brokers
    their filters allow, as ``TransferShedder.isTransferable`` and the assignment's filter
    pipeline decide upstream.

Constraints
    * Isolation (``BrokerIsolationPoliciesFilter`` / ``LoadManagerShared.applyNamespacePolicies``):
      the first policy whose ``namespaces`` regex fully matches the namespace governs it. Its
      candidates are the brokers whose *host* (the broker id before the last ``:``) fully
      matches a ``primary`` regex, plus those matching ``secondary`` when fewer primaries than
      the ``min_available`` policy's ``min_limit`` are up. A namespace without a policy may use
      only *shared* brokers: those that are no policy's primary.
    * Anti-affinity (``AntiAffinityGroupPolicyFilter``): for a namespace in group G, count per
      broker the bundles it owns of namespaces in G; keep the brokers owning none, or if every
      candidate owns some, those owning the fewest. Failure domains are not modelled.
    * ``isTransferable``: a bundle with a policy is not moved unless
      ``loadBalancerSheddingBundlesWithPoliciesEnabled``; a filter that raises makes the bundle
      non-transferable (the shedder then reports NoBundles); a named destination must survive
      the filters; an unload needs some candidate other than the source.

The filters take parsed values (:meth:`IsolationPolicy.of` takes the regexes as text);
reading them from the files a Pulsar operator has (``pulsar-admin ns-isolation-policy list``
JSON, anti-affinity groups as JSON or CSV) is :mod:`trimtab.systems.pulsar.isolation`'s job.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from trimtab.config.pulsar import SheddingConfig
from trimtab.errors import InputError

__all__ = [
    "AntiAffinityGroups",
    "BrokerFilter",
    "BrokerFilterError",
    "IsolationPolicies",
    "IsolationPolicy",
    "Policies",
    "PolicyView",
    "host_of",
    "is_system_namespace",
]

_SYSTEM = re.compile(r"pulsar/system|pulsar/[^/]+/[^:/]+:\d+|pulsar/[^:/]+:\d+")


def is_system_namespace(namespace: str) -> bool:
    """``NamespaceService.isSystemServiceNamespace``: ``pulsar/system`` and heartbeat/SLA ones."""
    return _SYSTEM.fullmatch(namespace) is not None


def host_of(broker: str) -> str:
    """The host part of a broker id ``host:port`` (the whole id when it has no port)."""
    return broker.rsplit(":", 1)[0] if ":" in broker else broker


def _namespace(bundle: str) -> str:
    return bundle.rsplit("/", 1)[0] if "/" in bundle else bundle


class BrokerFilterError(Exception):
    """A filter could not decide (upstream ``BrokerFilterException``)."""


class BrokerFilter(Protocol):
    """One stage of the pipeline: the candidates that may own ``bundle``."""

    @property
    def name(self) -> str: ...

    def filter(self, candidates: frozenset[str], bundle: str, view: PolicyView) -> frozenset[str]:
        """A subset of ``candidates``; raises :class:`BrokerFilterError` when it cannot decide."""
        ...


def _regexes(values: Iterable[str], what: str) -> tuple[re.Pattern[str], ...]:
    try:
        return tuple(re.compile(v) for v in values)
    except re.error as exc:
        raise InputError(f"{what}: {exc.pattern!r} is not a regular expression ({exc})") from exc


def _full(patterns: Sequence[re.Pattern[str]], text: str) -> bool:
    return any(p.fullmatch(text) for p in patterns)


@dataclass(frozen=True, slots=True)
class IsolationPolicy:
    """One ``NamespaceIsolationData``: namespace regexes, primary and secondary host regexes,
    and the ``min_available`` failover limit."""

    name: str
    namespaces: tuple[re.Pattern[str], ...]
    primary: tuple[re.Pattern[str], ...]
    secondary: tuple[re.Pattern[str], ...] = ()
    min_limit: int = 1

    @classmethod
    def of(
        cls,
        name: str,
        namespaces: Iterable[str],
        primary: Iterable[str],
        secondary: Iterable[str] = (),
        *,
        min_limit: int = 1,
        where: str = "",
    ) -> IsolationPolicy:
        where = where or f"isolation policy {name!r}"
        return cls(
            name,
            _regexes(namespaces, where),
            _regexes(primary, where),
            _regexes(secondary, where),
            min_limit,
        )

    def governs(self, namespace: str) -> bool:
        return _full(self.namespaces, namespace)

    def is_primary(self, host: str) -> bool:
        return _full(self.primary, host)

    def is_secondary(self, host: str) -> bool:
        return _full(self.secondary, host)

    def should_failover(self, primaries: int) -> bool:
        """``MinAvailablePolicy``: fewer primaries up than ``min_limit``."""
        return primaries < self.min_limit


@dataclass(frozen=True, slots=True)
class IsolationPolicies:
    """A cluster's namespace isolation policies, in file order (the first match governs)."""

    policies: tuple[IsolationPolicy, ...] = ()

    def policy_for(self, namespace: str) -> IsolationPolicy | None:
        return next((p for p in self.policies if p.governs(namespace)), None)

    def is_shared(self, host: str) -> bool:
        return not any(p.is_primary(host) for p in self.policies)

    def candidates(self, namespace: str, brokers: Iterable[str]) -> frozenset[str]:
        """``applyNamespacePolicies``: primaries (plus secondaries on failover), or shared."""
        policy = self.policy_for(namespace)
        if policy is None:
            return frozenset(b for b in brokers if self.is_shared(host_of(b)))
        primary = [b for b in brokers if policy.is_primary(host_of(b))]
        secondary = [
            b
            for b in brokers
            if not policy.is_primary(host_of(b)) and policy.is_secondary(host_of(b))
        ]
        return frozenset(primary + secondary if policy.should_failover(len(primary)) else primary)


@dataclass(frozen=True, slots=True)
class AntiAffinityGroups:
    """Each namespace's ``antiAffinityGroup`` (namespaces without one are absent)."""

    groups: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def group_of(self, namespace: str) -> str | None:
        return self.groups.get(namespace)


@dataclass(frozen=True, slots=True)
class IsolationFilter:
    """``BrokerIsolationPoliciesFilter``."""

    policies: IsolationPolicies
    name: str = "BrokerIsolationPoliciesFilter"

    def filter(self, candidates: frozenset[str], bundle: str, view: PolicyView) -> frozenset[str]:
        return self.policies.candidates(_namespace(bundle), candidates)


@dataclass(frozen=True, slots=True)
class AntiAffinityFilter:
    """``AntiAffinityGroupPolicyFilter``: brokers owning the fewest bundles of the group."""

    groups: AntiAffinityGroups
    name: str = "AntiAffinityGroupPolicyFilter"

    def filter(self, candidates: frozenset[str], bundle: str, view: PolicyView) -> frozenset[str]:
        group = self.groups.group_of(_namespace(bundle))
        if group is None or not candidates:
            return candidates
        owned = view.group_counts(group)
        least = min(owned.get(b, 0) for b in candidates)
        return frozenset(b for b in candidates if owned.get(b, 0) == least)


@dataclass(frozen=True, slots=True)
class Policies:
    """Isolation policies, anti-affinity groups, and any further filters, in pipeline order."""

    isolation: IsolationPolicies = IsolationPolicies()
    anti_affinity: AntiAffinityGroups = AntiAffinityGroups()
    extra: tuple[BrokerFilter, ...] = ()

    @property
    def filters(self) -> tuple[BrokerFilter, ...]:
        return (
            IsolationFilter(self.isolation),
            AntiAffinityFilter(self.anti_affinity),
            *self.extra,
        )

    def has_policies(self, namespace: str) -> bool:
        """``isLoadBalancerSheddingBundlesWithPoliciesEnabled``'s test: an isolation policy or
        an anti-affinity group governs the namespace."""
        return (
            self.isolation.policy_for(namespace) is not None
            or self.anti_affinity.group_of(namespace) is not None
        )

    def bind(self, names: Sequence[str], owners: Sequence[str]) -> PolicyView:
        """The view one cycle uses: these policies over bundle ``names`` owned by ``owners``."""
        return PolicyView(self, tuple(names), tuple(owners))


@dataclass(slots=True)
class PolicyView:
    """Policies bound to one cycle's ownership; per-group counts are computed once."""

    policies: Policies
    names: tuple[str, ...]
    owners: tuple[str, ...]
    _counts: dict[str, Counter[str]] = field(default_factory=dict)

    def group_counts(self, group: str) -> Counter[str]:
        """Per broker, the bundles it owns of namespaces in ``group``."""
        if group not in self._counts:
            groups = self.policies.anti_affinity
            self._counts[group] = Counter(
                o
                for n, o in zip(self.names, self.owners, strict=True)
                if groups.group_of(_namespace(n)) == group
            )
        return self._counts[group]

    def has_policies(self, bundle: str) -> bool:
        return self.policies.has_policies(_namespace(bundle))

    def candidates(self, bundle: str, brokers: Iterable[str]) -> frozenset[str]:
        """The brokers every filter allows for ``bundle``; raises :class:`BrokerFilterError`."""
        kept = frozenset(brokers)
        for stage in self.policies.filters:
            kept = stage.filter(kept, bundle, self)
        return kept

    def transferable(
        self,
        bundle: str,
        brokers: Iterable[str],
        source: str,
        destination: str | None,
        config: SheddingConfig,
    ) -> bool:
        """Upstream ``isTransferable``: policies allowed, filters pass, and a destination."""
        if self.has_policies(bundle) and not config.shed_bundles_with_policies:
            return False
        try:
            kept = self.candidates(bundle, brokers)
        except BrokerFilterError:
            return False
        if destination is not None and destination not in kept:
            return False
        others = kept - {source}
        if destination is None or not config.transfer_enabled:
            return bool(others)
        return destination in others
