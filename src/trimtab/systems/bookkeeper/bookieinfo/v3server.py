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

TLS (``tls``), as a bookie with a TLS provider does it (upstream ``BookieRequestProcessor``'s
``processStartTLSRequestV3``): the client sends START_TLS, the server answers EOK in the clear,
then the handshake runs on the same connection and every later frame travels inside TLS. Unlike a
bookie, which still answers plaintext requests unless an authentication plugin objects, the agent
with TLS serves nothing before the handshake: any other request is answered ``EUA`` (how a bookie
that wants authentication first refuses). A failed handshake (no client certificate under client
authentication, one from another CA) closes that connection only. Without ``tls``, START_TLS is
answered ``EBADREQ``, as by a bookie without TLS. The context is taken at each START_TLS, so
renewed certificate files serve the next connection.
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
from trimtab.systems.bookkeeper.bookieinfo.tls import ReloadingContext, ServerTls
from trimtab.systems.bookkeeper.bookieinfo.v3 import (
    frame,
    parse_request,
    read_frame,
    refusal,
    respond,
    start_tls_answer,
)

__all__ = [
    "HANDSHAKE_SECONDS",
    "IDLE_SECONDS",
    "MAX_CONNECTIONS",
    "WRITE_SECONDS",
    "BookieRpcServer",
    "bind",
]

MAX_CONNECTIONS = 1024
IDLE_SECONDS = 600.0
WRITE_SECONDS = 10.0
#: a TLS handshake must end within this many seconds of the START_TLS answer
HANDSHAKE_SECONDS = 10.0
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
        tls: ServerTls | None = None,
    ) -> None:
        self._measure = measure
        self._tls = None if tls is None else ReloadingContext(tls.files, tls.build)
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
        self.handshakes_failed = 0

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
        secured = False
        while True:
            payload = await read_frame(reader, wait=IDLE_SECONDS)
            request = parse_request(payload)  # ValueError: not v3, close
            upgrade = False
            if self._tls is None or (secured and request.header.operation != v3.START_TLS):
                response = await self._respond(request)
            elif request.header.operation == v3.START_TLS and not secured:
                response, upgrade = start_tls_answer(request), True
            elif secured:  # START_TLS inside TLS
                response = refusal(request, pb.EBADREQ)
            else:  # plaintext on a TLS port
                response = refusal(request, pb.EUA)
            self._count(response.status)
            if upgrade:
                # no await between the answer and the upgrade: the client's hello must reach the
                # TLS layer, not this stream's buffer (as upstream installs its handler first)
                transport = writer.transport
                assert isinstance(transport, asyncio.ReadTransport)
                transport.pause_reading()
                writer.write(frame(response))
                await self._handshake(writer)
                secured = True
                continue
            writer.write(frame(response))
            await asyncio.wait_for(writer.drain(), WRITE_SECONDS)

    async def _handshake(self, writer: asyncio.StreamWriter) -> None:
        """Run the server side of the TLS handshake on this connection; on failure the
        connection ends (``OSError``), the server goes on."""
        assert self._tls is not None
        try:
            await writer.start_tls(self._tls.get(), ssl_handshake_timeout=HANDSHAKE_SECONDS)
        except (OSError, TimeoutError, ConnectionError) as exc:
            self.handshakes_failed += 1
            peer = writer.get_extra_info("peername")
            _log.warning(
                "bookie-rpc port %d: TLS handshake with %s failed: %s", self.port, peer, exc
            )
            raise ConnectionError("TLS handshake failed") from None

    def _count(self, status: int) -> None:
        with self._lock:
            name = pb.StatusCode.Name(status)
            self._counts[name] = self._counts.get(name, 0) + 1

    async def _respond(self, request: v3.Request) -> v3.Response:
        """The answer to one request, measured on the loop's executor (never on the loop)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, respond, request, self._measure)
