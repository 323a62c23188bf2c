"""The state behind the Pulsar admin stand-in: brokers, namespaces and their bundles, who owns
each bundle, unloads landing in simulated time, load reports, tokens, faults and call counts.

Upstream keeps ownership in the metadata store and moves a bundle in two steps: the owner
unloads it (``NamespaceService.unloadNamespaceBundle``) and the next lookup, or the destination
set by ``destinationBroker`` (``setNamespaceBundleAffinity``), takes it. Here an unload makes the
bundle unowned at once and owned by its destination ``unload_seconds`` simulated seconds later;
``time_scale`` simulated seconds pass per real second. With no destination, the alive broker
with the fewest bundles (not the old owner) takes it, as a lookup would place it. Nothing runs
in the background: every read settles the moves that are due first (:meth:`settle`).

Fault hooks for the tests: :meth:`reown` (someone else moved a bundle), :meth:`remove_broker`
(a broker went away; its bundles are unowned), :meth:`drop_next` (the next matching request's
connection is closed without an answer), ``unload_seconds`` and :attr:`slow` (slow unloads).
:attr:`calls` counts every request, reads (GET) and writes (PUT) apart.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FULL", "Call", "PulsarCluster", "bundle_ranges"]

FULL = 0x100000000  # upstream NamespaceBundles.FULL_UPPER_BOUND is 0xffffffff, inclusive


def bundle_ranges(count: int) -> list[str]:
    """``count`` equal bundle ranges over the hash space, spelled as upstream does."""
    edges = [i * FULL // count for i in range(count)] + [0xFFFFFFFF]
    return [f"0x{lo:08x}_0x{hi:08x}" for lo, hi in itertools.pairwise(edges)]


@dataclass(frozen=True, slots=True)
class Call:
    """One request a broker answered (or dropped): who, what, and the status sent."""

    broker: str
    method: str
    path: str
    status: int


@dataclass
class _Move:
    destination: str | None
    due: float  # time.monotonic() when it lands


@dataclass
class _Broker:
    load: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(
            ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut"), 0.2
        )
    )
    web_url: str = ""
    limits: dict[str, float] = field(
        default_factory=lambda: {
            "cpu": 400.0,
            "memory": 8192.0,
            "directMemory": 4096.0,
            "bandwidthIn": 1e7,
            "bandwidthOut": 1e7,
        }
    )
    report_error: str | None = None  # the broker fails to generate its load report


class PulsarCluster:
    """One cluster's admin state, shared by the stand-in brokers (thread-safe)."""

    def __init__(
        self,
        name: str = "standalone",
        *,
        time_scale: float = 1000.0,
        unload_seconds: float = 30.0,
        tokens: Mapping[str, str] | None = None,
        superusers: Iterable[str] = ("admin",),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.time_scale = time_scale
        self.unload_seconds = unload_seconds
        self.tokens = dict(tokens or {})  # token -> role; empty: authentication disabled
        self.superusers = set(superusers)
        self.slow: dict[str, float] = {}  # bundle -> simulated seconds its unload takes
        self.calls: list[Call] = []
        self._clock = clock
        self._lock = threading.RLock()
        self._brokers: dict[str, _Broker] = {}
        self._namespaces: dict[str, list[str]] = {}
        self._owners: dict[str, str | None] = {}
        self._moves: dict[str, _Move] = {}
        self._drops: list[list[Any]] = []  # [substring, times left]
        self.on_remove: Callable[[str], None] = lambda _broker: None

    # -- set-up ----------------------------------------------------------------------------

    def add_broker(self, broker: str, web_url: str) -> None:
        with self._lock:
            self._brokers[broker] = _Broker(web_url=web_url)

    def add_namespace(self, namespace: str, bundles: int | Iterable[str]) -> list[str]:
        """Create ``namespace`` with ``bundles`` (a count or the ranges), all unowned."""
        ranges = bundle_ranges(bundles) if isinstance(bundles, int) else list(bundles)
        with self._lock:
            self._namespaces[namespace] = ranges
            for hash_range in ranges:
                self._owners[f"{namespace}/{hash_range}"] = None
        return [f"{namespace}/{r}" for r in ranges]

    def set_load(self, broker: str, **shares: float) -> None:
        """Set ``broker``'s resource usages as shares of their limits (``cpu=0.9``)."""
        with self._lock:
            self._brokers[broker].load.update(shares)

    def set_limits(self, broker: str, **limits: float) -> None:
        """Set ``broker``'s report limits (``cpu=800.0``: percent of one core times the cores;
        ``memory`` MiB; ``bandwidthIn``/``bandwidthOut`` Kbit/s), as its host has them."""
        with self._lock:
            self._brokers[broker].limits.update(limits)

    def fail_report(
        self, broker: str, reason: str | None = "Failed to generate load report"
    ) -> None:
        """Fault: ``broker``'s load report cannot be generated (upstream answers 500 with the
        exception's message; ``None`` heals it)."""
        with self._lock:
            self._brokers[broker].report_error = reason

    def report_error(self, broker: str) -> str | None:
        with self._lock:
            return self._brokers[broker].report_error

    # -- reads -----------------------------------------------------------------------------

    @property
    def brokers(self) -> list[str]:
        with self._lock:
            return sorted(self._brokers)

    def web_url(self, broker: str) -> str:
        with self._lock:
            return self._brokers[broker].web_url

    def namespaces(self) -> dict[str, list[str]]:
        with self._lock:
            return {ns: list(r) for ns, r in self._namespaces.items()}

    def owner(self, bundle: str) -> str | None:
        with self._lock:
            self.settle()
            return self._owners.get(bundle)

    def owned_by(self, broker: str) -> list[str]:
        with self._lock:
            self.settle()
            return sorted(b for b, o in self._owners.items() if o == broker)

    def is_bundle(self, bundle: str) -> bool:
        with self._lock:
            return bundle in self._owners

    def counts(self) -> dict[str, int]:
        """Requests answered so far: ``reads`` (GET) and ``writes`` (anything else)."""
        with self._lock:
            writes = sum(1 for c in self.calls if c.method != "GET")
            return {"reads": len(self.calls) - writes, "writes": writes}

    def writes(self) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method != "GET"]

    # -- changes ---------------------------------------------------------------------------

    def settle(self) -> None:
        """Land every move that is due by now."""
        with self._lock:
            now = self._clock()
            for bundle, move in list(self._moves.items()):
                if move.due <= now:
                    del self._moves[bundle]
                    self._owners[bundle] = self._place(bundle, move.destination)

    def _place(self, bundle: str, destination: str | None) -> str | None:
        if destination in self._brokers:
            return destination
        return self._least_loaded(set(self._brokers))  # the destination went away meanwhile

    def unload(self, bundle: str, destination: str | None) -> None:
        """The owner unloads ``bundle``: unowned now, owned by ``destination`` (or by the
        least-loaded other broker) after the bundle's unload time."""
        with self._lock:
            seconds = self.slow.get(bundle, self.unload_seconds)
            source = self._owners.get(bundle)
            self._owners[bundle] = None
            due = self._clock() + seconds / self.time_scale
            if destination is None:  # the next lookup never picks the broker that let it go
                destination = self._least_loaded({b for b in self._brokers if b != source})
            self._moves[bundle] = _Move(destination, due)

    def _least_loaded(self, brokers: set[str]) -> str | None:
        counts = {b: sum(1 for o in self._owners.values() if o == b) for b in brokers}
        return min(sorted(counts), key=lambda b: counts[b]) if counts else None

    def split(self, bundle: str, *, unload: bool) -> list[str]:
        """Split ``bundle`` in two halves owned by its owner (unowned with ``unload``)."""
        with self._lock:
            namespace, _, hash_range = bundle.rpartition("/")
            lo, hi = (int(x, 16) for x in hash_range.split("_"))
            mid = lo + (hi - lo + (1 if hi == 0xFFFFFFFF else 0)) // 2
            halves = [f"0x{lo:08x}_0x{mid:08x}", f"0x{mid:08x}_0x{hi:08x}"]
            ranges = self._namespaces[namespace]
            at = ranges.index(hash_range)
            ranges[at : at + 1] = halves
            owner = self._owners.pop(bundle)
            self._moves.pop(bundle, None)
            for half in halves:
                self._owners[f"{namespace}/{half}"] = None if unload else owner
            return [f"{namespace}/{h}" for h in halves]

    def reown(self, bundle: str, broker: str | None) -> None:
        """Fault: someone else moved ``bundle`` to ``broker`` (``None``: unowned)."""
        with self._lock:
            self._moves.pop(bundle, None)
            self._owners[bundle] = broker

    def remove_broker(self, broker: str) -> None:
        """Fault: ``broker`` went away: its server stops, its bundles are unowned."""
        with self._lock:
            self._brokers.pop(broker, None)
            for bundle, owner in self._owners.items():
                if owner == broker:
                    self._owners[bundle] = None
            for move in self._moves.values():
                if move.destination == broker:
                    move.destination = None
        self.on_remove(broker)

    def drop_next(self, path_part: str, times: int = 1) -> None:
        """Fault: close the connection of the next ``times`` requests whose path contains
        ``path_part``, without an answer."""
        with self._lock:
            self._drops.append([path_part, times])

    def take_drop(self, path: str) -> bool:
        with self._lock:
            for drop in self._drops:
                if drop[0] in path and drop[1] > 0:
                    drop[1] -= 1
                    return True
            return False

    def record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    # -- load reports ------------------------------------------------------------------------

    def load_report(self, broker: str) -> dict[str, Any]:
        """``broker``'s ``LocalBrokerData`` as ``broker-stats/load-report`` returns it."""
        with self._lock:
            self.settle()
            state = self._brokers[broker]
            owned = [b for b, o in self._owners.items() if o == broker]
            limits = dict(state.limits)
            doc: dict[str, Any] = {
                name: {"usage": state.load[name] * limit, "limit": limit}
                for name, limit in limits.items()
            }
            per_bundle = 1e6
            doc |= {
                "msgThroughputIn": per_bundle * len(owned),
                "msgThroughputOut": per_bundle * len(owned),
                "msgRateIn": 100.0 * len(owned),
                "msgRateOut": 100.0 * len(owned),
                "lastUpdate": int(time.time() * 1000),
                "lastStats": {
                    b: {
                        "msgRateIn": 100.0,
                        "msgThroughputIn": per_bundle,
                        "msgRateOut": 100.0,
                        "msgThroughputOut": per_bundle,
                        "consumerCount": 1,
                        "producerCount": 1,
                        "topics": 1,
                        "cacheSize": 0,
                    }
                    for b in owned
                },
                "bundles": sorted(owned),
                "webServiceUrl": state.web_url,
                "pulsarServiceUrl": f"pulsar://{broker.rpartition(':')[0]}:6650",
            }
            return doc
