"""What a policy is given besides its config: a stats sink and feature switches.

Upstream hands ``initialize`` a ``StatsLogger`` and a ``FeatureProvider``. Here both are small
protocols with a do-nothing default and an in-memory implementation for tests and the CLI, so a
policy never needs a metrics library or a feature service to run.

Stat names are upstream's (``BookKeeperClientStats``), lower-cased, so dashboards carry over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

__all__ = [
    "BOOKIES_JOINED",
    "BOOKIES_LEFT",
    "BOOKIES_REJECTED_BY_TOPOLOGY",
    "ENSEMBLE_NOT_ADHERING",
    "FAILED_TO_RESOLVE_NETWORK_LOCATION",
    "NUM_WRITABLE_BOOKIES_IN_DEFAULT_RACK",
    "READ_REQUESTS_REORDERED",
    "REGION_AWARE_ANOMALOUS_ENSEMBLE",
    "FeatureSwitches",
    "MemoryStats",
    "NoFeatures",
    "NullStats",
    "StaticFeatures",
    "Stats",
]

BOOKIES_JOINED = "bookies_joined"
BOOKIES_LEFT = "bookies_left"
#: trimtab: writable nodes the topology refused (a location at the wrong depth).
BOOKIES_REJECTED_BY_TOPOLOGY = "bookies_rejected_by_topology"
ENSEMBLE_NOT_ADHERING = "ensemble_not_adhering_to_placement_policy_total"
FAILED_TO_RESOLVE_NETWORK_LOCATION = "failed_to_resolve_network_location_counter"
NUM_WRITABLE_BOOKIES_IN_DEFAULT_RACK = "num_writable_bookies_in_default_rack"
READ_REQUESTS_REORDERED = "read_requests_reordered"
REGION_AWARE_ANOMALOUS_ENSEMBLE = "region_aware_anomalous_ensemble"


@runtime_checkable
class Stats(Protocol):
    """Where a policy reports counters and gauges."""

    def incr(self, name: str, by: int = 1) -> None: ...

    def gauge(self, name: str, value: float) -> None: ...


class NullStats:
    """Drops everything (upstream ``NullStatsLogger``)."""

    __slots__ = ()

    def incr(self, name: str, by: int = 1) -> None:
        """Nothing is kept."""

    def gauge(self, name: str, value: float) -> None:
        """Nothing is kept."""


class MemoryStats:
    """Keeps counters and the last gauge values in dictionaries, for tests and the CLI."""

    __slots__ = ("counters", "gauges")

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.gauges: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"MemoryStats(counters={dict(self.counters)}, gauges={self.gauges})"

    def incr(self, name: str, by: int = 1) -> None:
        self.counters[name] += by

    def gauge(self, name: str, value: float) -> None:
        self.gauges[name] = value


@runtime_checkable
class FeatureSwitches(Protocol):
    """Run-time switches (upstream ``FeatureProvider``), optionally scoped (e.g. to a region)."""

    def is_on(self, name: str, scope: str | None = None) -> bool: ...


class NoFeatures:
    """Every switch off."""

    __slots__ = ()

    def is_on(self, name: str, scope: str | None = None) -> bool:
        return False


class StaticFeatures:
    """A fixed set of switches that are on: ``"name"`` everywhere, ``("scope", "name")`` in one.

    >>> f = StaticFeatures(["repp_disable_durability_enforcement", ("us-west", "no-new")])
    >>> f.is_on("repp_disable_durability_enforcement"), f.is_on("no-new", "us-west")
    (True, True)
    >>> f.is_on("no-new", "us-east")
    False
    """

    __slots__ = ("_global", "_scoped")

    def __init__(self, on: Iterable[str | tuple[str, str]] = ()) -> None:
        self._global: set[str] = set()
        self._scoped: set[tuple[str, str]] = set()
        for item in on:
            if isinstance(item, str):
                self._global.add(item)
            else:
                self._scoped.add(item)

    def __repr__(self) -> str:
        return f"StaticFeatures({sorted(self._global)}, {sorted(self._scoped)})"

    def is_on(self, name: str, scope: str | None = None) -> bool:
        return name in self._global or (scope is not None and (scope, name) in self._scoped)
