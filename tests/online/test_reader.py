"""BookieInfoReader logic with a fake clock, a fake client and a recording sink (no sleeping)."""

from __future__ import annotations

import threading

import pytest

from tests.online.helpers import FakeClient, FakeClock, RecordingSink, info, wait_until
from trimtab.cluster import NodeId
from trimtab.diskinfo import InfoMap
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind
from trimtab.systems.bookkeeper.bookieinfo.reader import BookieInfoReader, ScanKind
from trimtab.systems.bookkeeper.registry import Membership

A, B, C, D = (NodeId(f"bk{i}:3181") for i in range(1, 5))
TIMEOUT = FetchError(FetchErrorKind.TIMEOUT, "no answer within 5 s")


def members(*writable: NodeId, readonly: tuple[NodeId, ...] = ()) -> Membership:
    nodes = (*writable, *readonly)
    return Membership.of(
        writable=writable,
        readonly=readonly,
        addresses={n: f"127.0.0.1:{i}" for i, n in enumerate(nodes, 1)},
    )


def make(client: FakeClient, clock: FakeClock) -> tuple[BookieInfoReader, RecordingSink]:
    sink = RecordingSink()
    reader = BookieInfoReader(
        sink,
        client,
        interval_seconds=100,
        retry_interval_seconds=10,
        timeout_seconds=5,
        clock=clock,
    )
    return reader, sink


def test_first_step_is_a_full_scan_and_pushes_the_map() -> None:
    """The periodic task starts at once: a FULL scan of every writable node, then a push."""
    client, clock = FakeClient({A: info(100), B: info(200)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    assert sink.kinds() == ["cluster", "info"]
    assert client.queries == [(A, B)]
    assert sink.latest() == {A: info(100), B: info(200)}
    assert reader.snapshot().stats.full_scans == 1


def test_cluster_change_reaches_the_sink_before_the_info_it_triggers() -> None:
    """on_cluster_changed comes first, with writable and read-only sets, then the pushed map."""
    client, clock = FakeClient({A: info(1), B: info(2)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A, readonly=(B,)))
    reader.run_due()
    assert sink.calls[0] == ("cluster", (frozenset({A}), frozenset({B})))
    assert sink.calls[1] == ("info", {A: info(1)})


def test_a_joining_node_is_asked_at_once_and_alone() -> None:
    """A membership change queues a PARTIAL scan of the nodes without info only."""
    client, clock = FakeClient({A: info(1), B: info(2), C: info(3)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    reader.on_membership(members(A, B, C))
    reader.run_due()
    assert client.queries[-1] == (C,)
    assert sink.latest() == {A: info(1), B: info(2), C: info(3)}
    assert reader.snapshot().stats.partial_scans == 1


def test_departed_node_is_purged_and_never_pushed_again() -> None:
    """A node that leaves loses its info before the next push."""
    client, clock = FakeClient({A: info(1), B: info(2)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    reader.on_membership(members(A))
    reader.run_due()
    assert sink.latest() == {A: info(1)}
    assert B not in reader.snapshot().info


def test_node_that_turns_readonly_loses_its_weight() -> None:
    """Only writable nodes are weighted: a read-only node's info is dropped and not asked."""
    client, clock = FakeClient({A: info(1), B: info(2)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    reader.on_membership(members(A, readonly=(B,)))
    reader.run_due()
    clock.advance(100)
    reader.run_due()
    assert sink.latest() == {A: info(1)}
    assert client.queries[-1] == (A,)


def test_failed_node_loses_info_and_is_retried_alone_after_the_retry_interval() -> None:
    """A timeout removes the node's info; only it is asked again, retry_interval later."""
    client, clock = FakeClient({A: info(1), B: info(2)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    client.answers[B] = TIMEOUT
    clock.advance(100)
    reader.run_due()  # FULL scan: B times out
    assert sink.latest() == {A: info(1)}
    assert reader.snapshot().errors == {B: TIMEOUT}
    clock.advance(9.9)
    reader.run_due()
    assert client.queries == [(A, B), (A, B)], "no retry before the retry interval"
    client.answers[B] = info(5)
    clock.advance(0.1)
    reader.run_due()
    assert client.queries[-1] == (B,)
    assert sink.latest() == {A: info(1), B: info(5)}
    assert reader.snapshot().errors == {}


def test_a_join_during_backoff_does_not_ask_the_failed_node_early() -> None:
    """The PARTIAL scan for a newcomer skips nodes still waiting for their retry."""
    client, clock = FakeClient({A: info(1), B: TIMEOUT, C: info(3)}), FakeClock()
    reader, _ = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    clock.advance(3)
    reader.on_membership(members(A, B, C))
    reader.run_due()
    assert client.queries[-1] == (C,)
    clock.advance(7)
    reader.run_due()
    assert client.queries[-1] == (B,)


def test_full_scan_runs_every_interval_and_asks_every_writable_node() -> None:
    """FULL scans repeat each interval (not catching up missed periods)."""
    client, clock = FakeClient({A: info(1), B: info(2)}), FakeClock()
    reader, _ = make(client, clock)
    reader.on_membership(members(A, B))
    assert reader.run_due() == pytest.approx(clock() + 100)
    clock.advance(100)
    reader.run_due()
    clock.advance(350)  # slept through three periods
    reader.run_due()
    assert reader.run_due() == pytest.approx(clock() + 100)
    assert reader.snapshot().stats.full_scans == 3
    assert client.queries == [(A, B)] * 3


def test_every_scan_pushes_even_when_nobody_is_asked() -> None:
    """A PARTIAL scan with no target still pushes the map (upstream onExit always does)."""
    client, clock = FakeClient({A: info(1)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A))
    reader.run_due()
    reader.on_membership(members(A, readonly=(B,)))
    reader.run_due()
    assert sink.updates == 2
    assert len(client.queries) == 1


def test_a_node_that_flapped_between_steps_is_asked_again() -> None:
    """Left and came back before the worker ran: its old info is purged and re-fetched."""
    client, clock = FakeClient({A: info(1), B: info(2)}), FakeClock()
    reader, sink = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    client.answers[B] = info(7)  # restarted with other disks
    reader.on_membership(members(A))
    reader.on_membership(members(A, B))
    reader.run_due()
    assert client.queries[-1] == (B,)
    assert sink.latest()[B] == info(7)


def test_stats_account_for_every_query() -> None:
    """queries == answers + errors, and each scan pushed once."""
    client, clock = (
        FakeClient({A: info(1), B: TIMEOUT, C: FetchError(FetchErrorKind.STATUS, "EIO")}),
        FakeClock(),
    )
    reader, _ = make(client, clock)
    reader.on_membership(members(A, B, C))
    for _ in range(5):
        reader.run_due()
        clock.advance(10)
    stats = reader.snapshot().stats
    assert stats.queries == stats.answers + stats.error_count
    assert stats.pushes == stats.scans
    assert stats.errors[FetchErrorKind.TIMEOUT] >= 1 and stats.errors[FetchErrorKind.STATUS] >= 1


def test_a_failing_sink_does_not_stop_the_reader() -> None:
    """An exception in the sink is counted and the next scan still runs."""

    class Broken(RecordingSink):
        def update_bookie_info(self, info: InfoMap) -> None:
            raise RuntimeError("policy bug")

    client, clock = FakeClient({A: info(1)}), FakeClock()
    reader = BookieInfoReader(Broken(), client, interval_seconds=100, clock=clock)
    reader.on_membership(members(A))
    reader.run_due()
    clock.advance(100)
    reader.run_due()
    assert reader.snapshot().stats.sink_failures == 2
    assert reader.snapshot().stats.full_scans == 2


def test_departed_nodes_connections_are_released() -> None:
    """The client is told which addresses are still members, so it can close the others."""
    client, clock = FakeClient({A: info(1), B: info(2)}), FakeClock()
    reader, _ = make(client, clock)
    reader.on_membership(members(A, B))
    reader.run_due()
    reader.on_membership(members(A))
    reader.run_due()
    assert client.retained[-1] == {"127.0.0.1:1"}


def test_worker_thread_is_one_thread_and_stops_cleanly() -> None:
    """start() runs one 'bookieinfo-reader' thread; close() ends it and closes the client."""
    client = FakeClient({A: info(1), B: info(2)})
    sink = RecordingSink()
    reader = BookieInfoReader(sink, client, interval_seconds=3600, retry_interval_seconds=3600)
    reader.start()
    try:
        reader.on_membership(members(A))
        reader.on_membership(members(A, B))
        wait_until(lambda: sink.latest() == {A: info(1), B: info(2)}, what="map pushed")
        names = [t.name for t in threading.enumerate()]
        assert names.count("bookieinfo-reader") == 1
        reader.request_full_scan()
        wait_until(lambda: reader.snapshot().stats.full_scans >= 2, what="requested full scan")
    finally:
        reader.close()
    assert not reader.alive
    assert client.closed
    assert "bookieinfo-reader" not in [t.name for t in threading.enumerate()]


def test_scan_kind_names() -> None:
    """Scan kinds print as upstream names them in logs and metrics."""
    assert [k.value for k in ScanKind] == ["full", "partial"]
