"""Addresses a command listens on, checked before it starts any work (issue 43).

A port out of range is refused, not handed to gRPC (which then serves on a port of its own
choosing and logs a line on stderr); a port another process holds is named in one ``error:``
line before the agent registers in ZooKeeper or a watcher starts polling, not a crash from the
HTTP server's constructor afterwards.
"""

from __future__ import annotations

import socket

from trimtab.errors import TrimtabError

__all__ = ["free_port", "listen_address"]

_MAX_PORT = 65_535


def listen_address(option: str, text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as host and port, the port a whole number from 0
    (any free port) to 65535; anything else is a :class:`TrimtabError` naming ``option``."""
    host, sep, port_text = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > _MAX_PORT:
        raise TrimtabError(
            f"{option} {text!r}: give HOST:PORT with a port from 0 (any free one) to {_MAX_PORT}"
        )
    return host, int(port_text)


def free_port(option: str, host: str, port: int) -> None:
    """Refuse ``host:port`` when it cannot be bound now (another process listens there, the
    host is not an address of this machine). The probe binds as the servers do (with
    ``SO_REUSEADDR``, so a port left in TIME_WAIT counts as free) and closes at once; port 0
    asks for any free port and is always fine."""
    if not 0 <= port <= _MAX_PORT:
        raise TrimtabError(f"{option} {port}: give a port from 0 (any free one) to {_MAX_PORT}")
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise TrimtabError(f"{option} {host}:{port}: cannot resolve {host!r}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            reason = (exc.strerror or type(exc).__name__).lower()
            raise TrimtabError(f"{option} {host}:{port}: cannot listen there: {reason}") from None
