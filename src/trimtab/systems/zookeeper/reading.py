"""One read-only ZooKeeper session for a command that looks and leaves (``inventory --zk``).

Why a module of its own: the command composes what it finds (bookies, brokers, racks), but
the session's life (start with the configuration's security, one ``error:`` line when nobody
answers, kazoo's failures mid-read turned into one line naming the ensemble, always closed)
belongs with the other ZooKeeper code, so no command imports kazoo itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from trimtab.config import Config
from trimtab.errors import MembershipError, TrimtabError, ZooKeeperAccessError
from trimtab.systems.zookeeper.security import zk_security
from trimtab.systems.zookeeper.session import make_client, start_session
from trimtab.systems.zookeeper.target import ZkTarget

__all__ = ["read_session", "registered_bookies"]


@contextmanager
def read_session(hosts: str, cfg: Config, timeout_s: float) -> Iterator[Any]:
    """A started kazoo client on ``hosts``, closed on the way out. Nobody answering within
    ``timeout_s`` is a :class:`MembershipError`; a failure while reading, a
    :class:`TrimtabError` naming ``hosts``."""
    security = zk_security(cfg)
    client = make_client(hosts, session_timeout=max(timeout_s, 4.0), security=security)
    try:
        start_session(client, hosts=hosts, timeout=timeout_s, security=security)
    except ZooKeeperAccessError:
        raise
    except (KazooTimeoutError, KazooException) as exc:
        client.stop()
        client.close()
        raise MembershipError(
            f"cannot reach ZooKeeper at {hosts} within {timeout_s:g} s ({type(exc).__name__}): "
            "check --zk HOST:PORT and that the server is up"
        ) from None
    try:
        yield client
    except (KazooException, KazooTimeoutError) as exc:
        raise TrimtabError(f"ZooKeeper {hosts} failed while reading: {exc!r}") from None
    finally:
        client.stop()
        client.close()


def registered_bookies(client: Any, target: ZkTarget) -> int:
    """How many bookies the registry lists, writable and read-only (0 when it does not exist)."""
    try:
        writable = [c for c in client.get_children(target.available) if c != "readonly"]
    except NoNodeError:
        return 0
    try:
        readonly = client.get_children(target.readonly)
    except NoNodeError:
        readonly = []
    return len(writable) + len(readonly)
