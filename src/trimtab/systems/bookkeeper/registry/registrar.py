"""Register a node in ZooKeeper the way a BookKeeper bookie does, and keep it registered.

Goals: while the agent runs, exactly one ephemeral znode names it, under ``available`` when
writable and ``available/readonly`` when read-only, carrying its GetBookieInfo address; when the
agent stops, the znode goes at once (the session is closed, not left to time out).

Algorithm (after ``ZKRegistrationManager.registerBookie``):

* *register*: create the znode of the wanted mode; if one already exists and belongs to our
  session, keep it; if it belongs to another session, wait up to the session time-out for it
  to expire (a previous run of this agent that died) and fail if it does not (another live agent
  with the same id). Then delete the znode of the other mode, so a switch never leaves the node
  unregistered (for a moment it is in both; readers count it read-only).
* *security* (issue 41): the session logs in as the target's
  :class:`~trimtab.systems.zookeeper.security.ZkSecurity` says, and with ``zkEnableSecurity``
  every znode created here (the registry paths and the registration) carries BookKeeper's ACL:
  readable by all, writable only by us, so no other session can delete or overwrite it (a
  delete is checked against the parent's ACL, hence the paths too). A registry path made
  earlier without that ACL is reported with a warning, since it leaves registrations deletable.
* *session expiry*: kazoo reports the session LOST and opens a new one by itself; our ephemeral
  znodes died with the old session, so the registrar's thread registers again as soon as the
  new session is CONNECTED. Every reconnection also re-checks the znode, which is cheap.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kazoo.exceptions import KazooException, NoAuthError, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from trimtab.cluster import NodeId
from trimtab.errors import AgentError, ZooKeeperAccessError
from trimtab.systems.zookeeper import (
    ZkTarget,
    encode_node_data,
    end_session,
    make_client,
    start_session,
)

__all__ = ["ZooKeeperRegistrar"]

_log = logging.getLogger(__name__)
_RETRY_SECONDS = 0.2
_REFUSED = "ZooKeeper refused the login"


class ZooKeeperRegistrar:
    """Keep ``node`` registered under ``target`` with ``address`` as its znode data."""

    def __init__(
        self,
        target: ZkTarget,
        node: NodeId,
        address: str,
        *,
        readonly: bool = False,
        session_timeout: float = 10.0,
    ) -> None:
        self.target = target
        self.node = node
        self._data = encode_node_data(address)
        self._readonly = readonly
        self._session_timeout = session_timeout
        self._acl = target.security.acls()
        self._client: Any = make_client(
            target.hosts, session_timeout=session_timeout, security=target.security
        )
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.registrations = 0
        self.sessions_lost = 0
        self.last_error: str | None = None

    @property
    def readonly(self) -> bool:
        with self._lock:
            return self._readonly

    @property
    def registered(self) -> bool:
        """Whether our znode of the current mode exists (asks ZooKeeper)."""
        try:
            stat = self._client.exists(self._path(self.readonly))
        except (KazooException, KazooTimeoutError):
            return False
        return stat is not None and stat.ephemeralOwner == self._session_id()

    def start(self, timeout: float = 10.0) -> None:
        """Connect, create the registry paths if missing, register, then keep registered."""
        security = self.target.security
        try:
            start_session(self._client, hosts=self.target.hosts, timeout=timeout, security=security)
        except KazooTimeoutError:
            self.stop()
            raise AgentError(
                f"cannot reach ZooKeeper at {self.target.hosts} within {timeout:g} s"
            ) from None
        except ZooKeeperAccessError:
            self.stop()
            raise
        try:
            with self._refused(self.target.readonly):
                self._client.ensure_path(self.target.readonly, acl=self._acl)  # and available/
            self._check_parent_acl()
            self._client.add_listener(self._on_state)
            self._register(wait=self._session_timeout * 1.5)
        except BaseException:
            self.stop()  # leave no session or thread behind
            raise
        self._thread = threading.Thread(target=self._run, name="registrar-zk", daemon=True)
        self._thread.start()

    def set_readonly(self, readonly: bool) -> None:
        """Switch mode: register under the other path, then remove the old znode."""
        with self._lock:
            if self._readonly == readonly:
                return
            self._readonly = readonly
        self._wake.set()

    def stop(self) -> None:
        """Unregister at once by closing the session; idempotent."""
        if self._stop.is_set():
            return
        end_session(self._stop, self._wake, self._thread, self._client)
        self._thread = None

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _refused(self, path: str) -> Iterator[None]:
        """An ACL that refuses our write, as one error naming the znode and what to fix."""
        try:
            yield
        except NoAuthError:
            raise ZooKeeperAccessError(
                f"ZooKeeper {self.target.hosts} refused writing {path} "
                f"{self.target.security.describe()} (NoAuth): its parent's ACL does not let "
                "this identity create or change it; log in as the identity that created the "
                "registry (BookKeeper's JAAS Client section) or ask its owner to grant access"
            ) from None

    def _check_parent_acl(self) -> None:
        """With secure ACLs, warn when anyone may delete our registration (open parent ACL)."""
        if self._acl is None:
            return
        from kazoo.security import Permissions

        writable = Permissions.DELETE | Permissions.CREATE
        for path in (self.target.available, self.target.readonly):
            acls, _stat = self._client.get_acls(path)
            if any(a.id.scheme == "world" and a.perms & writable for a in acls):
                _log.warning(
                    "%s on ZooKeeper %s is writable by anyone: any session can delete the "
                    "registrations under it; set its ACL to the registry owner's (BookKeeper's "
                    "zkEnableSecurity migration does) or recreate it with security on",
                    path,
                    self.target.hosts,
                )

    def _path(self, readonly: bool) -> str:
        return self.target.node_path(self.node, readonly=readonly)

    def _session_id(self) -> int | None:
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    def _on_state(self, state: str) -> None:
        if state == "LOST":
            self.sessions_lost += 1
        self._wake.set()  # on CONNECTED: check (and if need be recreate) the znode

    def _report_refused_login(self) -> None:
        """kazoo stops reconnecting once ZooKeeper refuses the login (a password changed on
        the server while the agent ran): the node is then unregistered for good, so say so
        once, with what to fix, instead of retrying in silence."""
        log = getattr(self._client, "logger", None)
        if not getattr(log, "auth_failed", False) or self.last_error == _REFUSED:
            return
        self.last_error = _REFUSED
        _log.warning(
            "ZooKeeper %s refused the login %s: %s is no longer registered; fix the "
            "credentials and restart the agent",
            self.target.hosts,
            self.target.security.describe(),
            self.node,
        )

    def _run(self) -> None:
        pending = False
        while not self._stop.is_set():
            self._wake.wait(_RETRY_SECONDS if pending else self._session_timeout)
            if self._stop.is_set():
                return
            self._wake.clear()
            if not self._client.connected:
                pending = True
                self._report_refused_login()
                continue
            try:
                self._register(wait=0.0)
                pending = False
            except (KazooException, KazooTimeoutError, AgentError, ZooKeeperAccessError) as exc:
                self.last_error = str(exc) or type(exc).__name__
                pending = True

    def _register(self, *, wait: float) -> None:
        readonly = self.readonly
        path, other = self._path(readonly), self._path(not readonly)
        deadline = time.monotonic() + wait
        while True:
            try:
                with self._refused(path):
                    self._client.create(
                        path, self._data, acl=self._acl, ephemeral=True, makepath=True
                    )
                self.registrations += 1
                _log.info("registered %s", path)
                break
            except NodeExistsError:
                stat = self._client.exists(path)
                if stat is not None and stat.ephemeralOwner == self._session_id():
                    break  # ours already
                if time.monotonic() >= deadline:
                    raise AgentError(
                        f"{path} is held by another ZooKeeper session: is another agent "
                        f"running with id {self.node}?"
                    ) from None
                time.sleep(_RETRY_SECONDS)
        try:
            stat = self._client.exists(other)
            if stat is not None and stat.ephemeralOwner == self._session_id():
                self._client.delete(other)
        except NoNodeError:
            pass
        self.last_error = None
