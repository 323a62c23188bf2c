"""ZooKeeper sessions: a kazoo client that outlives a server restart, and a clean end.

An ephemeral znode lives as long as its owner's session, so ending the session at once (rather
than letting it time out) is how a registered node leaves the registry without delay.
"""

from __future__ import annotations

import threading
from typing import Any

from kazoo.client import KazooClient

__all__ = ["end_session", "make_client"]


def make_client(hosts: str, *, session_timeout: float) -> Any:
    """A kazoo client that reconnects quickly and forever (until stopped).

    The connection retry never gives up, because an agent or a watcher must outlive a
    ZooKeeper restart; its delay is capped at one second so a restarted server is found again
    quickly. Commands are retried a few times over a short connection loss.
    """
    return KazooClient(
        hosts=hosts,
        timeout=session_timeout,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        command_retry={"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
    )


def end_session(
    stop: threading.Event, wake: threading.Event, thread: threading.Thread | None, client: Any
) -> None:
    """Stop a worker thread that follows ZooKeeper, then close its session, so the session's
    ephemeral znodes go at once (a registered node leaves without waiting for the timeout)."""
    stop.set()
    wake.set()
    if thread is not None:
        thread.join(timeout=10.0)
    client.stop()
    client.close()
