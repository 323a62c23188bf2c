"""The embedded default membership: a file listing the nodes, for users without ZooKeeper.

The file is a table (CSV, JSON-lines or Parquet, read by
:mod:`trimtab.readers.table_files`) with columns

* ``id`` (required): ``host:port`` as BookKeeper names the node;
* ``state`` (optional): ``writable`` (default), ``readonly`` or ``down`` (listed, not a member);
* ``address`` (optional): where its agent answers GetBookieInfo; defaults to the id itself.

::

    id,state,address
    bk1.rack1:3181,writable,10.0.0.1:3182
    bk2.rack1:3181,readonly,

A row that cannot be used (bad id, unknown state, the same id twice) is rejected with its line
and reason; the good rows still count. :class:`StaticRegistry` re-reads the file when its size or
modification time changes (polled on its own thread) or when :meth:`StaticRegistry.refresh` is
called, and hands listeners a new snapshot only when the membership really changed. If the
file becomes unreadable, the last good membership stays in force and the error is kept.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trimtab.cluster import NodeId, NodeState
from trimtab.contract import RejectedRow
from trimtab.errors import InputError, MembershipError
from trimtab.readers.table_files import TableSpec, parse_table
from trimtab.systems.bookkeeper.registry.model import EMPTY, Membership, MembershipListener

__all__ = ["REGISTRY_TABLE", "RegistryFile", "StaticRegistry", "read_registry"]

REGISTRY_TABLE = TableSpec("registry", required=("id",), optional=("state", "address"))

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RegistryFile:
    """What one read of the file gave: the membership, rejected rows and warnings."""

    membership: Membership
    rejected: tuple[RejectedRow, ...]
    warnings: tuple[str, ...]


def _parse_row(row: Mapping[str, Any]) -> tuple[NodeId, NodeState, str]:
    node = NodeId(str(row.get("id") or ""))
    state_text = str(row.get("state") or "").strip()
    state = NodeState.parse(state_text) if state_text else NodeState.WRITABLE
    address = str(row.get("address") or "").strip() or str(node)
    return node, state, address


def read_registry(path: str | Path) -> RegistryFile:
    """Read the registry file once; raises :class:`MembershipError` if it is unusable."""
    try:
        parsed = parse_table(path, REGISTRY_TABLE, _parse_row)
    except InputError as exc:
        raise MembershipError(f"node registry: {exc}") from None
    rejected = list(parsed.rejected)
    states: dict[NodeId, NodeState] = {}
    addresses: dict[str, str] = {}
    for (node, state, address), raw in parsed.accepted:
        if node in states:
            reason = f"node {node} is listed twice; the first row counts"
            rejected.append(RejectedRow(raw.source, raw.line, reason, dict(raw.data or {})))
            continue
        states[node] = state
        addresses[node] = address
    membership = Membership.of(
        writable=[n for n, s in states.items() if s is NodeState.WRITABLE],
        readonly=[n for n, s in states.items() if s is NodeState.READONLY],
        addresses=addresses,
    )
    return RegistryFile(membership, tuple(rejected), tuple(parsed.warnings))


class StaticRegistry:
    """A membership source backed by a registry file, re-read when the file changes."""

    def __init__(
        self,
        path: str | Path,
        listener: MembershipListener | None = None,
        *,
        poll_seconds: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self._listener = listener
        self._poll = poll_seconds
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._current = EMPTY
        self.last_read: RegistryFile | None = None
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> Membership:
        with self._lock:
            return self._current

    def start(self) -> Membership:
        """Read the file (raising if it is unusable), deliver it, then watch it for changes."""
        file = read_registry(self.path)
        self._stamp = self._file_stamp()
        self._deliver(file)
        self._thread = threading.Thread(target=self._run, name="membership-static", daemon=True)
        self._thread.start()
        return self.current()

    def refresh(self) -> Membership:
        """Re-read the file now (on demand); keep the last good membership if it is unusable."""
        try:
            file = read_registry(self.path)
        except MembershipError as exc:
            self.last_error = str(exc)
            _log.warning("%s; keeping the last membership", exc)
            return self.current()
        self.last_error = None
        self._deliver(file)
        return self.current()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _deliver(self, file: RegistryFile) -> None:
        with self._lock:
            self.last_read = file
            changed = file.membership != self._current
            self._current = file.membership
        if changed and self._listener is not None:
            try:
                self._listener(file.membership)
            except Exception:  # a listener's bug must not stop the watch
                _log.exception("membership listener failed")

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            stamp = self._file_stamp()
            if stamp is not None and stamp != self._stamp:
                self._stamp = stamp
                self.refresh()
