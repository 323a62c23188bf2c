"""The agent's BookKeeper v3 port: answer GET_BOOKIE_INFO as a bookie would, at a bookie port.

With it a trimtab agent stands in for a bookie: ``trimtab bookieinfo`` (or BookKeeper's own client)
asks it exactly as it asks a bookie. The rules are
:func:`~trimtab.systems.bookkeeper.bookieinfo.v3.respond`; this module owns the sockets, on an
asyncio loop so that many servers can share one thread (the bench runs a thousand in one process on
one :class:`~trimtab.systems.bookkeeper.bookieinfo.loop.LoopThread`).

Bounds, as the gRPC server has them: a frame longer than
:data:`~trimtab.systems.bookkeeper.bookieinfo.v3.MAX_FRAME_BYTES` or bytes that are not a v3 request
close the connection (trimtab does not speak the v2 protocol); at most :data:`MAX_CONNECTIONS`
connections are served at once; a frame must arrive whole within
:data:`~trimtab.systems.bookkeeper.bookieinfo.v3.FRAME_SECONDS` once begun, an idle connection is
closed after :data:`IDLE_SECONDS`, and a write that cannot drain within :data:`WRITE_SECONDS` closes
the connection. Measuring runs on the loop's executor, never on the loop, so a slow disk holds up
only its own answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Callable

from trimtab.diskinfo import BookieInfo
from trimtab.errors import AgentError
from trimtab.systems.bookkeeper.bookieinfo.loop import LoopThread
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.proto import bookkeeper_v3_pb2 as v3
from trimtab.systems.bookkeeper.bookieinfo.v3 import (
    frame,
    parse_request,
    read_frame,
    respond,
)

__all__ = [
    "IDLE_SECONDS",
    "MAX_CONNECTIONS",
    "WRITE_SECONDS",
    "BookieRpcServer",
    "bind",
]

MAX_CONNECTIONS = 1024
IDLE_SECONDS = 600.0
WRITE_SECONDS = 10.0
_START_SECONDS = 10.0

_log = logging.getLogger(__name__)


def bind(listen: str) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``[v6]:port`` too); ``AgentError`` if it can't."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not port_text.isdigit():
        raise AgentError(f"cannot listen on {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:3181")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, int(port_text), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, ValueError, OverflowError) as exc:
        raise AgentError(f"cannot listen on {listen}: {exc}") from None
    try:
        sock.bind(address)
        sock.listen(512)
    except OSError as exc:
        sock.close()
        raise AgentError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


class BookieRpcServer:
    """Serve GET_BOOKIE_INFO over v3 with ``measure()``; start, then stop once.

    ``loop`` shares an event loop with other servers; without it the server runs its own.
    """

    def __init__(
        self,
        measure: Callable[[], BookieInfo],
        *,
        listen: str = "127.0.0.1:0",
        loop: LoopThread | None = None,
    ) -> None:
        self._measure = measure
        self._sock = bind(listen)
        self.port: int = self._sock.getsockname()[1]
        host = listen.rpartition(":")[0]
        self.address = f"{host}:{self.port}"
        self._own_loop = loop is None
        self._loop = loop
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self.connections_accepted = 0

    def start(self) -> None:
        if self._loop is None:
            self._loop = LoopThread(f"bookie-rpc-{self.port}")
        self._server = self._loop.run(self._start(), _START_SECONDS)

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._serve, sock=self._sock)

    def stop(self, grace: float = 1.0) -> None:
        """Stop listening and close every connection (answers in progress get ``grace`` s)."""
        loop, self._loop = self._loop, None
        if loop is None:
            self._sock.close()
            return
        try:
            loop.run(self._stop(grace), grace + _START_SECONDS)
        except (TimeoutError, RuntimeError):
            _log.warning("bookie-rpc server on port %d did not stop cleanly", self.port)
        if self._own_loop:
            loop.close()

    async def _stop(self, grace: float) -> None:
        server = self._server
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.close()
        if server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), grace)

    def answer_counts(self) -> dict[str, int]:
        """Answers given so far by status name (``EOK``, ``EUA``...), for metrics."""
        with self._lock:
            return dict(self._counts)

    # -- one connection ----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._writers) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._writers.add(writer)
        self.connections_accepted += 1
        try:
            await self._converse(reader, writer)
        except (OSError, EOFError, TimeoutError, ValueError, asyncio.IncompleteReadError):
            pass  # the peer went, stalled or spoke something else: this connection ends
        except asyncio.CancelledError:
            pass  # the server stops; asyncio's stream callback must not see the cancellation
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            payload = await read_frame(reader, wait=IDLE_SECONDS)
            request = parse_request(payload)  # ValueError: not v3, close
            response = await self._respond(request)
            with self._lock:
                name = pb.StatusCode.Name(response.status)
                self._counts[name] = self._counts.get(name, 0) + 1
            writer.write(frame(response))
            await asyncio.wait_for(writer.drain(), WRITE_SECONDS)

    async def _respond(self, request: v3.Request) -> v3.Response:
        """The answer to one request, measured on the loop's executor (never on the loop)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, respond, request, self._measure)
