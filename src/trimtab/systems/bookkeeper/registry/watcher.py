"""Follow BookKeeper's node registry in ZooKeeper and hand out membership snapshots.

Goals: every change of the writable or read-only set reaches the listener, also across a
ZooKeeper restart or a lost session, and the listener never runs on kazoo's event thread.

Algorithm: one thread of ours does all the reading. ZooKeeper watches, kazoo's connection events and
a periodic resync (a safety net, ``resync_seconds``) only *wake* that thread; it then lists
``available`` and ``available/readonly`` with fresh one-shot watches, reads the data of znodes it
has not seen (where to ask the node, in whichever format it registered:
:func:`~trimtab.systems.bookkeeper.registry.service_info.registration_address`; cached until the
znode changes or the session is lost), and delivers a new
:class:`~trimtab.systems.bookkeeper.registry.model.Membership` if it differs from the last one
delivered. While ZooKeeper is unreachable the last membership stays in force, as BookKeeper's
``BookieWatcher`` keeps its last view; kazoo reconnects by itself and the first successful read
after that delivers whatever changed meanwhile. The watcher only reads: a missing registry path is
an empty set, watched until it appears.

Which children are nodes: every bookie (and every trimtab agent) registers an *ephemeral*
znode named by its id, so the ``readonly`` child, children whose name is no node id, and
persistent children (a copied cookie, a tool's marker) are skipped, with a warning for the
last two. Upstream's ``ZKRegistrationClient`` skips only ``readonly``; the others would break
its id parsing or be taken for bookies that never leave.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from trimtab.cluster import NodeId
from trimtab.errors import MembershipError, ZooKeeperAccessError
from trimtab.systems.bookkeeper.registry.model import EMPTY, Membership, MembershipListener
from trimtab.systems.bookkeeper.registry.service_info import registration_address
from trimtab.systems.zookeeper import READONLY, ZkTarget, end_session, make_client, start_session

__all__ = ["WatcherStats", "ZooKeeperWatcher", "read_membership"]

_log = logging.getLogger(__name__)
_RETRY_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class WatcherStats:
    """Counters for metrics and tests."""

    reads: int
    failed_reads: int
    deliveries: int
    sessions_lost: int
    connected: bool


class ZooKeeperWatcher:
    """Watch ``target``'s registry; call ``listener`` with each new membership."""

    def __init__(
        self,
        target: ZkTarget,
        listener: MembershipListener | None = None,
        *,
        session_timeout: float = 10.0,
        resync_seconds: float = 30.0,
    ) -> None:
        self.target = target
        self._listener = listener
        self._client: Any = make_client(
            target.hosts, session_timeout=session_timeout, security=target.security
        )
        self._resync = resync_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # child path -> (is a node: an ephemeral znode, its address); None: not read yet
        self._cache: dict[str, tuple[bool, str | None]] = {}
        self._current = EMPTY
        self._thread: threading.Thread | None = None
        self._reads = self._failed = self._deliveries = self._lost = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> Membership:
        """Connect, read and deliver the membership once, then follow it on a thread."""
        try:
            start_session(
                self._client,
                hosts=self.target.hosts,
                timeout=timeout,
                security=self.target.security,
            )
        except KazooTimeoutError:
            self.stop()
            raise MembershipError(
                f"cannot reach ZooKeeper at {self.target.hosts} within {timeout:g} s"
            ) from None
        except ZooKeeperAccessError:
            self.stop()
            raise
        self._client.add_listener(self._on_state)
        if not self._sync():
            self.stop()
            raise MembershipError(f"cannot read the registry under {self.target.available}")
        self._thread = threading.Thread(target=self._run, name="membership-zk", daemon=True)
        self._thread.start()
        return self.current()

    def stop(self) -> None:
        """Stop following and close the ZooKeeper session; idempotent."""
        if self._stop.is_set():
            return
        end_session(self._stop, self._wake, self._thread, self._client)
        self._thread = None

    def current(self) -> Membership:
        with self._lock:
            return self._current

    def refresh(self) -> None:
        """Ask the watcher thread to read the registry again now."""
        self._wake.set()

    @property
    def stats(self) -> WatcherStats:
        with self._lock:
            return WatcherStats(
                self._reads, self._failed, self._deliveries, self._lost, self._client.connected
            )

    # -- events (kazoo's threads: only set flags) --------------------------------------------

    def _on_state(self, state: str) -> None:
        if state == "LOST":
            with self._lock:
                self._lost += 1
                self._cache.clear()  # the data watches died with the session
        self._wake.set()

    def _on_watch(self, event: Any) -> None:
        if event is not None and event.type in ("DELETED", "CHANGED"):
            with self._lock:
                self._cache.pop(event.path, None)
        self._wake.set()

    # -- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        pending = False
        while not self._stop.is_set():
            self._wake.wait(_RETRY_SECONDS if pending else self._resync)
            if self._stop.is_set():
                return
            self._wake.clear()
            if not self._client.connected:
                pending = True  # kazoo reconnects; its CONNECTED event wakes us
                continue
            pending = not self._sync()

    def _sync(self) -> bool:
        try:
            writable = self._read_side(self.target.available, skip=READONLY)
            readonly = self._read_side(self.target.readonly, skip=None)
        except (KazooException, KazooTimeoutError) as exc:
            with self._lock:
                self._failed += 1
            _log.info("reading the registry failed (%s); will retry", type(exc).__name__)
            return False
        addresses = {**writable, **readonly}
        membership = Membership.of(writable=writable, readonly=readonly, addresses=addresses)
        with self._lock:
            self._reads += 1
            live = {self.target.node_path(n, readonly=False) for n in writable}
            live |= {self.target.node_path(n, readonly=True) for n in readonly}
            for path in [p for p in self._cache if p not in live]:
                del self._cache[path]
            changed = membership != self._current
            self._current = membership
            if changed:
                self._deliveries += 1
        if changed and self._listener is not None:
            try:
                self._listener(membership)
            except Exception:  # a listener's bug must not stop the watch
                _log.exception("membership listener failed")
        return True

    def _read_side(self, path: str, *, skip: str | None) -> dict[NodeId, str | None]:
        try:
            children = self._client.get_children(path, watch=self._on_watch)
        except NoNodeError:
            self._client.exists(path, watch=self._on_watch)  # wake us when it appears
            return {}
        found: dict[NodeId, str | None] = {}
        pending: dict[NodeId, tuple[str, Any]] = {}
        for child in children:
            if child == skip:
                continue
            try:
                node = NodeId(child)
            except ValueError:
                _log.warning("ignoring registry entry %s/%s: not a node id", path, child)
                continue
            child_path = f"{path}/{child}"
            with self._lock:
                cached = self._cache.get(child_path)
            if cached is not None:
                if cached[0]:
                    found[node] = cached[1]
                continue
            pending[node] = (child_path, self._client.get_async(child_path, watch=self._on_watch))
        for node, (child_path, result) in pending.items():
            try:
                data, stat = result.get(timeout=10.0)
            except NoNodeError:
                continue  # gone between listing and reading: the children watch fires again
            is_node = stat.ephemeralOwner != 0
            if not is_node:
                _log.warning("ignoring registry entry %s: persistent, no registration", child_path)
            address = registration_address(node, data) if is_node else None
            with self._lock:
                self._cache[child_path] = (is_node, address)
            if is_node:
                found[node] = address
        return found


def read_membership(target: ZkTarget, *, timeout: float = 10.0) -> Membership:
    """Read the registry once (for ``trimtab bookieinfo``) and disconnect."""
    watcher = ZooKeeperWatcher(target, session_timeout=max(timeout, 4.0))
    try:
        return watcher.start(timeout=timeout)
    finally:
        watcher.stop()
