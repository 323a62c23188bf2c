"""The ZooKeeper registrar and watcher against a real ZooKeeper server on loopback."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient

from tests.online.conftest import ZooKeeperServer
from tests.online.helpers import wait_until
from trimtab.cluster import NodeId
from trimtab.errors import AgentError, MembershipError
from trimtab.systems.bookkeeper.registry import (
    Membership,
    ZooKeeperRegistrar,
    ZooKeeperWatcher,
    read_membership,
)
from trimtab.systems.zookeeper import ZkTarget, decode_node_data

A, B, C = NodeId("10.0.0.1:3181"), NodeId("10.0.0.2:3181"), NodeId("10.0.0.3:3181")


class Deliveries:
    """Collects what a watcher delivers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[Membership] = []

    def __call__(self, membership: Membership) -> None:
        with self.lock:
            self.seen.append(membership)

    def last(self) -> Membership | None:
        with self.lock:
            return self.seen[-1] if self.seen else None


def _expire(hosts: str, client: KazooClient) -> None:
    """Expire ``client``'s session from outside: open it elsewhere and close it."""
    other = KazooClient(hosts=hosts, client_id=client.client_id)
    other.start(timeout=10)
    other.stop()
    other.close()


def _registrar(target: ZkTarget, node: NodeId, address: str, **kw: object) -> ZooKeeperRegistrar:
    registrar = ZooKeeperRegistrar(target, node, address, session_timeout=4.0, **kw)  # type: ignore[arg-type]
    registrar.start(timeout=10)
    return registrar


def test_registrar_creates_an_ephemeral_znode_with_the_address(zk_target: ZkTarget) -> None:
    """A registered node appears under available/ with its GetBookieInfo address as data."""
    registrar = _registrar(zk_target, A, "127.0.0.1:4000")
    try:
        client = KazooClient(hosts=zk_target.hosts)
        client.start(timeout=10)
        data, stat = client.get(zk_target.node_path(A, readonly=False))
        client.stop()
        client.close()
        assert decode_node_data(data) == "127.0.0.1:4000"
        assert stat.ephemeralOwner != 0
        assert registrar.registered
    finally:
        registrar.stop()


def test_switching_to_readonly_moves_the_znode(zk_target: ZkTarget) -> None:
    """set_readonly registers under available/readonly and removes the writable znode."""
    registrar = _registrar(zk_target, A, "127.0.0.1:4000")
    try:
        registrar.set_readonly(True)

        def moved() -> Membership | None:
            m = read_membership(zk_target)
            return m if m.readonly == {A} and not m.writable else None

        membership = wait_until(moved, what="node read-only in ZooKeeper")
        assert membership.addresses[A] == "127.0.0.1:4000"
        registrar.set_readonly(False)
        wait_until(lambda: read_membership(zk_target).writable == {A}, what="writable again")
    finally:
        registrar.stop()
    assert read_membership(zk_target).members == set()


def test_registrar_registers_again_after_session_expiry(zk_target: ZkTarget) -> None:
    """When its session expires, the registrar's new session recreates the znode."""
    registrar = _registrar(zk_target, A, "127.0.0.1:4000")
    try:
        _expire(zk_target.hosts, registrar._client)
        wait_until(lambda: registrar.sessions_lost >= 1, what="session loss noticed")
        wait_until(
            lambda: registrar.registrations >= 2 and registrar.registered, what="re-registration"
        )
        assert read_membership(zk_target).writable == {A}
    finally:
        registrar.stop()


def test_second_registrar_with_the_same_id_is_refused(zk_target: ZkTarget) -> None:
    """A node id held by another live session cannot be registered (AgentError)."""
    first = _registrar(zk_target, A, "127.0.0.1:4000")
    try:
        second = ZooKeeperRegistrar(zk_target, A, "127.0.0.1:4001", session_timeout=1.0)
        with pytest.raises(AgentError, match="another ZooKeeper session"):
            second.start(timeout=10)
        assert read_membership(zk_target).addresses[A] == "127.0.0.1:4000"
    finally:
        first.stop()


def test_watcher_follows_joins_leaves_and_mode_changes(zk_target: ZkTarget) -> None:
    """Each registration change reaches the listener; the 'readonly' child is not a node."""
    seen = Deliveries()
    watcher = ZooKeeperWatcher(zk_target, seen, session_timeout=4.0)
    assert watcher.start(timeout=10).members == set()
    registrars = {}
    try:
        for node, port in ((A, 1), (B, 2)):
            registrars[node] = _registrar(zk_target, node, f"127.0.0.1:{port}")
        wait_until(lambda: (m := seen.last()) and m.writable == {A, B}, what="two writable")
        registrars[B].set_readonly(True)

        def b_readonly() -> Membership | None:
            m = seen.last()
            return m if m is not None and m.readonly == {B} and m.writable == {A} else None

        last = wait_until(b_readonly, what="B read-only")
        assert last.addresses == {A: "127.0.0.1:1", B: "127.0.0.1:2"}
        registrars.pop(A).stop()
        wait_until(lambda: (m := seen.last()) and m.members == {B}, what="A gone")
        registrars[C] = _registrar(zk_target, C, "127.0.0.1:3")
        wait_until(lambda: (m := seen.last()) and m.writable == {C}, what="C joined")
        deliveries = len(seen.seen)
        watcher.refresh()
        wait_until(lambda: watcher.stats.reads >= 2, what="a resync")
        assert len(seen.seen) == deliveries, "an unchanged registry is not delivered again"
    finally:
        for registrar in registrars.values():
            registrar.stop()
        watcher.stop()


def test_watcher_recovers_from_its_own_session_expiry(zk_target: ZkTarget) -> None:
    """After its session expires the watcher reads again and sees changes made meanwhile."""
    seen = Deliveries()
    watcher = ZooKeeperWatcher(zk_target, seen, session_timeout=4.0)
    watcher.start(timeout=10)
    registrar = _registrar(zk_target, A, "127.0.0.1:1")
    try:
        wait_until(lambda: (m := seen.last()) and m.writable == {A}, what="A")
        _expire(zk_target.hosts, watcher._client)
        wait_until(lambda: watcher.stats.sessions_lost >= 1, what="watcher session lost")
        registrar.stop()
        wait_until(lambda: (m := seen.last()) and not m.members, what="A gone after expiry")
    finally:
        registrar.stop()
        watcher.stop()


def test_watcher_and_registrar_survive_a_zookeeper_restart(
    private_zookeeper: ZooKeeperServer,
) -> None:
    """ZooKeeper restarted under a live watcher: the view stays, then follows new changes."""
    target = ZkTarget(private_zookeeper.hosts, "/ledgers")
    seen = Deliveries()
    watcher = ZooKeeperWatcher(target, seen, session_timeout=4.0)
    watcher.start(timeout=10)
    a = _registrar(target, A, "127.0.0.1:1")
    b = _registrar(target, B, "127.0.0.1:2")
    try:
        wait_until(lambda: (m := seen.last()) and m.writable == {A, B}, what="A and B")
        private_zookeeper.restart()
        assert watcher.current().writable == {A, B}, "the last view stays while reconnecting"
        b.stop()
        wait_until(lambda: (m := seen.last()) and m.writable == {A}, what="B gone after restart")
        c = _registrar(target, C, "127.0.0.1:3")
        wait_until(lambda: (m := seen.last()) and m.writable == {A, C}, what="C after restart")
        c.stop()
        assert a.registered
    finally:
        a.stop()
        b.stop()
        watcher.stop()


def test_unreachable_zookeeper_is_a_membership_error() -> None:
    """Nothing listening: start fails within its time-out with a readable error."""
    from tests.online.conftest import free_port

    watcher = ZooKeeperWatcher(ZkTarget(f"127.0.0.1:{free_port()}", "/ledgers"))
    with pytest.raises(MembershipError, match="cannot reach ZooKeeper"):
        watcher.start(timeout=1)
