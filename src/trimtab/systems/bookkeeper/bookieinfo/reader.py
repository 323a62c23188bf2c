"""BookieInfoReader: keep every writable node's disk space known, and feed it to the policy.

Goals (BookKeeper's ``BookieInfoReader`` after BOOKKEEPER-1102, ``bookkeeper.md`` §3):

* a FULL scan of every writable node every ``getBookieInfoIntervalSeconds``, the first at once;
* a PARTIAL scan (only writable nodes without info) at once when membership changes, which is
  how a node that joins gets its weight;
* info of nodes that left is purged; a node that errors or times out loses its info (the policy
  then gives it the minimum weight) and is retried alone, ``getBookieInfoRetryIntervalSeconds``
  later, not on every membership change in between;
* the map is pushed to the sink (``update_bookie_info``) after every scan, even an empty one;
* one worker thread, which is also the only thread that calls the sink, so the sink never sees
  two calls at once; membership events only queue work for it.

Algorithm: :meth:`BookieInfoReader.run_due` is one step of the worker: apply the latest
membership if one arrived (``on_cluster_changed``, purge, queue PARTIAL), queue a FULL scan if
its time has come, release the failed nodes if their retry time has come (queue PARTIAL), then
run the queued scan, FULL winning over PARTIAL as upstream. The worker thread calls it in a
loop and sleeps on a condition until the next due time or the next event. Tests drive
``run_due`` directly with a fake clock and a fake client, so they never sleep.

Worked example (interval 60 s, retry 10 s): at t=0 nodes A, B join: FULL scan, A answers,
B times out -> push {A}; B is backed off until t=10. At t=3 C joins: PARTIAL scan of C only
(B is backed off) -> push {A, C}. At t=10: PARTIAL scan of B -> push {A, B, C}. At t=60 FULL.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo, BookieInfoSink
from trimtab.systems.bookkeeper.bookieinfo.client import BookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind
from trimtab.systems.bookkeeper.registry.model import EMPTY, Membership

__all__ = ["BookieInfoReader", "ReaderSnapshot", "ReaderStats", "ScanKind"]

_log = logging.getLogger(__name__)
_MAX_SLEEP_SECONDS = 3600.0  # the worker re-checks at least hourly even with nothing due


class ScanKind(StrEnum):
    FULL = "full"
    PARTIAL = "partial"


@dataclass(frozen=True, slots=True)
class ReaderStats:
    """What the reader has done; ``queries == answers + sum(errors.values())`` always holds."""

    full_scans: int = 0
    partial_scans: int = 0
    queries: int = 0
    answers: int = 0
    errors: Mapping[FetchErrorKind, int] = field(default_factory=dict)
    pushes: int = 0
    membership_changes: int = 0
    sink_failures: int = 0
    scan_seconds_total: float = 0.0
    last_scan_seconds: float = 0.0

    @property
    def scans(self) -> int:
        return self.full_scans + self.partial_scans

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


@dataclass(frozen=True, slots=True)
class ReaderSnapshot:
    """The reader's view at one moment: membership, known info, latest errors, counters."""

    membership: Membership
    info: Mapping[NodeId, BookieInfo]
    errors: Mapping[NodeId, FetchError]
    stats: ReaderStats


class BookieInfoReader:
    """Poll writable nodes' disk space on one worker thread and push it to ``sink``."""

    def __init__(
        self,
        sink: BookieInfoSink,
        client: BookieInfoClient,
        *,
        interval_seconds: float = 86_400,
        retry_interval_seconds: float = 60,
        timeout_seconds: float = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sink = sink
        self._client = client
        self._interval = interval_seconds
        self._retry_interval = retry_interval_seconds
        self._timeout = timeout_seconds
        self._clock = clock
        self._cond = threading.Condition()
        # guarded by _cond
        self._incoming: Membership | None = None
        self._departed: set[NodeId] = set()  # left at some point since the last apply
        self._stopped = False
        # owned by the worker (run_due); snapshot() copies under _cond
        self._membership = EMPTY
        self._info: dict[NodeId, BookieInfo] = {}
        self._errors: dict[NodeId, FetchError] = {}
        self._backoff: set[NodeId] = set()
        self._retry_at: float | None = None
        self._queued: ScanKind | None = ScanKind.FULL  # upstream: periodic task, delay 0
        self._next_full = clock() + interval_seconds
        self._stats = ReaderStats()
        self._thread: threading.Thread | None = None

    # -- the public, thread-safe side --------------------------------------------------------

    def on_membership(self, membership: Membership) -> None:
        """Take a new membership (any thread); the worker applies the latest one."""
        with self._cond:
            previous = self._incoming or self._membership
            self._departed |= previous.members - membership.members
            self._incoming = membership
            self._cond.notify_all()

    def request_full_scan(self) -> None:
        """Queue a FULL scan now (as the periodic task would)."""
        with self._cond:
            self._queued = ScanKind.FULL
            self._cond.notify_all()

    def snapshot(self) -> ReaderSnapshot:
        with self._cond:
            return ReaderSnapshot(
                self._membership,
                MappingProxyType(dict(self._info)),
                MappingProxyType(dict(self._errors)),
                self._stats,
            )

    def start(self) -> None:
        """Start the worker thread."""
        if self._thread is not None:
            raise RuntimeError("reader already started")
        self._thread = threading.Thread(target=self._run, name="bookieinfo-reader", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the worker (cancelling requests in flight) and close the client; idempotent."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._client.close()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                _log.warning("bookieinfo reader did not stop within %s s", timeout)
            self._thread = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the worker --------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            wake_at = self.run_due()
            with self._cond:
                if self._stopped:
                    return
                if self._incoming is not None or self._queued is not None:
                    continue
                delay = wake_at - self._clock()
                if delay > 0:
                    self._cond.wait(min(delay, _MAX_SLEEP_SECONDS))
                if self._stopped:
                    return

    def run_due(self) -> float:
        """Do everything due now (at most one scan); return when something is next due."""
        with self._cond:
            if self._stopped:
                return self._clock()
            incoming, self._incoming = self._incoming, None
            departed, self._departed = self._departed, set()
        if incoming is not None:
            self._apply_membership(incoming, departed)
        now = self._clock()
        with self._cond:
            if now >= self._next_full:
                self._queued = ScanKind.FULL
                self._next_full += self._interval
                if self._next_full <= now:  # we slept through periods: do not catch up
                    self._next_full = now + self._interval
            if self._retry_at is not None and now >= self._retry_at:
                self._retry_at = None
                self._backoff.clear()
                if self._queued is None:
                    self._queued = ScanKind.PARTIAL
            kind, self._queued = self._queued, None
        if kind is not None:
            self._scan(kind)
        with self._cond:
            due = [self._next_full] + ([self._retry_at] if self._retry_at is not None else [])
            return min(due)

    def _apply_membership(self, membership: Membership, departed: set[NodeId]) -> None:
        gone = departed | (self._membership.members - membership.members)
        gone |= self._membership.writable - membership.writable  # read-only: not weighted
        with self._cond:
            self._membership = membership
            for node in gone:
                self._info.pop(node, None)
                self._errors.pop(node, None)
                self._backoff.discard(node)
            self._stats = _bump(self._stats, membership_changes=1)
            if self._queued is None:
                self._queued = ScanKind.PARTIAL
        self._client.retain(membership.addresses.get(n, "") for n in membership.members)
        self._call_sink(
            lambda: self._sink.on_cluster_changed(
                set(membership.writable), set(membership.readonly)
            )
        )

    def _scan(self, kind: ScanKind) -> None:
        with self._cond:
            writable = sorted(self._membership.writable)
            if kind is ScanKind.FULL:
                targets = writable
            else:
                targets = [n for n in writable if n not in self._info and n not in self._backoff]
            addresses = {n: self._membership.addresses.get(n) for n in targets}
        started = self._clock()
        results = self._client.fetch_many(addresses, timeout=self._timeout) if targets else {}
        finished = self._clock()
        failed: dict[NodeId, FetchError] = {}
        with self._cond:
            if self._stopped:
                return  # closed mid-scan: requests were cancelled, their "errors" are not news
            for node in targets:
                result = results.get(node) or FetchError(
                    FetchErrorKind.UNAVAILABLE, "the client returned no result"
                )
                if isinstance(result, FetchError):
                    failed[node] = result
                    self._info.pop(node, None)
                    self._errors[node] = result
                else:
                    self._info[node] = result
                    self._errors.pop(node, None)
                    self._backoff.discard(node)
            if failed:
                self._backoff |= failed.keys()
                if self._retry_at is None:
                    self._retry_at = finished + self._retry_interval
            errors = dict(self._stats.errors)
            for error in failed.values():
                errors[error.kind] = errors.get(error.kind, 0) + 1
            bumped = _bump(
                self._stats,
                full_scans=int(kind is ScanKind.FULL),
                partial_scans=int(kind is ScanKind.PARTIAL),
                queries=len(targets),
                answers=len(targets) - len(failed),
                pushes=1,
                scan_seconds_total=finished - started,
            )
            self._stats = replace(
                bumped, errors=MappingProxyType(errors), last_scan_seconds=finished - started
            )
            pushed: Mapping[str, BookieInfo] = MappingProxyType(
                dict[str, BookieInfo](self._info.items())
            )
        if failed:
            _log.info(
                "%s scan: %d of %d nodes failed: %s",
                kind.value,
                len(failed),
                len(targets),
                ", ".join(f"{n} ({e})" for n, e in sorted(failed.items())),
            )
        self._call_sink(lambda: self._sink.update_bookie_info(pushed))

    def _call_sink(self, call: Callable[[], object]) -> None:
        try:
            call()
        except Exception:  # the sink's bug must not stop the reader
            _log.exception("bookieinfo sink failed")
            with self._cond:
                self._stats = _bump(self._stats, sink_failures=1)


def _bump(stats: ReaderStats, **increments: float) -> ReaderStats:
    """A copy of ``stats`` with the named counters increased."""
    return replace(stats, **{name: getattr(stats, name) + n for name, n in increments.items()})
