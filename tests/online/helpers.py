"""Shared test helpers: bounded waiting, fakes for the reader's seams, a fake clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TypeVar

from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo, InfoMap
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind, FetchResult

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None], *, timeout: float = 20.0, what: str = "condition"
) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds.

    Bounded in time and count; the deadline only limits waiting, nothing asserts on speed.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    for _ in range(int(timeout / 0.05) + 1):
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last value {last!r}")


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RecordingSink:
    """An in-memory consumer: records every call in order, thread-safe."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.calls: list[tuple[str, object]] = []
        self.writable: set[NodeId] = set()
        self.readonly: set[NodeId] = set()
        self.info: dict[str, BookieInfo] = {}
        self.updates = 0

    def on_cluster_changed(
        self, writable: Iterable[str], readonly: Iterable[str]
    ) -> AbstractSet[NodeId]:
        rw, ro = {NodeId(n) for n in writable}, {NodeId(n) for n in readonly}
        with self._cond:
            gone = self.writable - rw - ro
            self.writable, self.readonly = rw, ro
            self.calls.append(("cluster", (frozenset(rw), frozenset(ro))))
            self._cond.notify_all()
            return gone

    def update_bookie_info(self, info: InfoMap) -> None:
        got = {str(n): BookieInfo(*i) for n, i in info.items()}
        with self._cond:
            self.info = got
            self.updates += 1
            self.calls.append(("info", dict(got)))
            self._cond.notify_all()

    def latest(self) -> dict[str, BookieInfo]:
        with self._cond:
            return dict(self.info)

    def kinds(self) -> list[str]:
        with self._cond:
            return [kind for kind, _ in self.calls]


class FakeClient:
    """Answers from a table; records which nodes each ``fetch_many`` asked."""

    def __init__(self, answers: Mapping[str, FetchResult] | None = None) -> None:
        self.answers: dict[str, FetchResult] = dict(answers or {})
        self.queries: list[tuple[NodeId, ...]] = []
        self.retained: list[frozenset[str]] = []
        self.closed = False

    def fetch_many(
        self, targets: Mapping[NodeId, str | None], *, timeout: float
    ) -> dict[NodeId, FetchResult]:
        self.queries.append(tuple(sorted(targets)))
        return {
            n: self.answers.get(n, FetchError(FetchErrorKind.UNAVAILABLE, "no such node"))
            for n in targets
        }

    def retain(self, addresses: Iterable[str]) -> None:
        self.retained.append(frozenset(addresses))

    def close(self) -> None:
        self.closed = True


def info(free: int, total: int = 1000) -> BookieInfo:
    return BookieInfo(total, free)


def pb_varint(value: int) -> bytes:
    """A protobuf varint, written by hand so tests check field numbers without our .proto."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def pb_field(number: int, value: int | str | bytes) -> bytes:
    """One protobuf field: an int as a varint, text or bytes length-delimited."""
    if isinstance(value, int):
        return pb_varint(number << 3) + pb_varint(value)
    raw = value.encode() if isinstance(value, str) else value
    return pb_varint(number << 3 | 2) + pb_varint(len(raw)) + raw
