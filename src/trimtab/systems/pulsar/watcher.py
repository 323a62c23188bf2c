"""The brokers' load reports followed live in ZooKeeper: the source of ``shed --zk --follow``.

Each broker of Pulsar's modular load manager writes its ``LocalBrokerData`` to
``/loadbalance/brokers/<host:port>`` (:data:`BROKERS_PATH`). :class:`ZkReports` sets a children
watch on that path and a data watch on every broker's znode, and parses a report
(:func:`~trimtab.systems.pulsar.load_reports.parse_report`) when it changes, on kazoo's
threads; :meth:`ZkReports.read` hands the live loop (:mod:`~trimtab.systems.pulsar.follow`)
what it holds now, as a :class:`~trimtab.systems.pulsar.follow.Reading`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from trimtab.errors import ReportError, ZooKeeperAccessError
from trimtab.systems.pulsar.follow import Entry, Reading
from trimtab.systems.pulsar.load_reports import parse_report
from trimtab.systems.zookeeper.security import NO_SECURITY, ZkSecurity

__all__ = ["BROKERS_PATH", "ZkReports"]

#: Where the modular load manager's brokers write their ``LocalBrokerData``.
BROKERS_PATH = "/loadbalance/brokers"


class ZkReports:
    """``/loadbalance/brokers/*`` followed with ZooKeeper watches: a report is read and
    parsed when it changes, so a cycle costs no ZooKeeper round trip. kazoo reconnects by
    itself after a session loss; the watches are then set again and every report read anew.
    While the connection is down :meth:`read` says so (``ok`` False)."""

    def __init__(
        self,
        hosts: str,
        *,
        path: str = BROKERS_PATH,
        session_timeout: float = 10.0,
        on_change: Callable[[str], None] | None = None,
        security: ZkSecurity = NO_SECURITY,
    ) -> None:
        from kazoo.protocol.states import KazooState

        from trimtab.systems.zookeeper import make_client

        self.path = path.rstrip("/")
        self._hosts = hosts
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._watched: set[str] = set()
        self._on_change = on_change
        self._connected = threading.Event()
        self._security = security
        self._client: Any = make_client(hosts, session_timeout=session_timeout, security=security)

        def listen(state: Any) -> None:
            # kazoo's watch recipes read again by themselves once a new session is up
            if state == KazooState.CONNECTED:
                self._connected.set()
            else:
                self._connected.clear()

        self._client.add_listener(listen)

    def start(self, timeout: float = 10.0) -> None:
        """Connect and set the watches; :class:`~trimtab.errors.MembershipError` if
        ZooKeeper cannot be reached within ``timeout`` seconds."""
        from trimtab.errors import MembershipError
        from trimtab.systems.zookeeper import start_session

        try:
            start_session(self._client, hosts=self._hosts, timeout=timeout, security=self._security)
        except ZooKeeperAccessError:
            raise
        except Exception as exc:  # kazoo raises its own timeout type
            self._client.close()
            raise MembershipError(f"cannot reach ZooKeeper at {self._hosts}: {exc}") from None
        self._connected.set()
        from kazoo.exceptions import NoAuthError

        try:
            self._client.ensure_path(self.path, acl=self._security.acls())
        except NoAuthError:
            self._client.stop()
            self._client.close()
            raise ZooKeeperAccessError(
                f"ZooKeeper {self._hosts} refused creating {self.path} "
                f"{self._security.describe()} (NoAuth): no broker has reported there yet and "
                "this identity may not create it; check the path (--zk HOST:PORT/chroot) or log "
                "in as the brokers do"
            ) from None
        self._client.ChildrenWatch(self.path, self._children)

    def _children(self, children: list[str]) -> None:
        names = set(children)
        with self._lock:
            for gone in set(self._entries) - names:
                del self._entries[gone]
            new = names - self._watched
            self._watched |= new
        for name in sorted(new):
            self._client.DataWatch(f"{self.path}/{name}", self._data_watch(name))
        if self._on_change is not None:
            self._on_change("")

    def _data_watch(self, name: str) -> Callable[[bytes | None, Any], bool]:
        source = f"zk://{self._hosts}{self.path}/{name}"

        def on_data(data: bytes | None, _stat: Any) -> bool:
            with self._lock:
                if data is None:  # the znode went away: the broker left (the watch stays,
                    self._entries.pop(name, None)  # so a broker that comes back is seen)
                else:
                    try:
                        entry: Entry = parse_report(data, source=source, broker=name)
                    except ReportError as exc:
                        entry = exc
                    self._entries[name] = entry
            if self._on_change is not None:
                self._on_change(name)
            return True

        return on_data

    def read(self) -> Reading:
        with self._lock:
            entries = dict(self._entries)
        return Reading(entries, ok=self._connected.is_set())

    def close(self) -> None:
        self._client.stop()
        self._client.close()
