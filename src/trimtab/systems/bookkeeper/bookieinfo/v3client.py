"""Asking bookies for their disk space in BookKeeper's v3 protocol, at their bookie port.

Goals: a scan of a thousand bookies takes about as long as the slowest of them (bounded by the
time-out), not the sum; a bookie that refuses (``EUA``), hangs, closes the connection or talks
nonsense is that bookie's :class:`~trimtab.systems.bookkeeper.bookieinfo.info.FetchError`, never an
exception and never another bookie's problem; a connection is opened once per bookie and kept for
the next scans, as upstream's ``PerChannelBookieClient`` keeps its channel.

Algorithm: one asyncio loop on a thread of the client's own (:class:`LoopThread`) holds one
:class:`_Connection` per ``host:port``. A scan sends one GET_BOOKIE_INFO per node, at most
``max_in_flight`` at once (a semaphore: connects and requests together, so a cold scan of a
thousand nodes never opens a thousand sockets at the same instant). Each request has its own
``txnId``; the connection's reader task hands each answer to the request whose ``txnId`` it
repeats and drops answers nobody waits for (a late one after a time-out).

Time-outs, all of them: each node gets ``timeout`` seconds from the moment its turn comes,
connecting included; a connection whose request timed out is closed (the bookie is suspect, and the
next scan connects afresh); a frame that begins must end within
:data:`~trimtab.systems.bookkeeper.bookieinfo.v3.FRAME_SECONDS`; the whole scan is abandoned, its
stragglers reported as time-outs, after ``timeout`` times the number of turns plus a grace.

TLS, as upstream's ``PerChannelBookieClient`` starts it: to a node that wants it
(:meth:`~trimtab.systems.bookkeeper.bookieinfo.tls.ClientTls.applies`), the first frame on a new
connection is START_TLS; on its EOK the handshake runs on the same connection (host name checked),
and only then is GET_BOOKIE_INFO sent, inside TLS. The context is taken at each new connection, so
renewed files are used by the next one. A new connection to a node offers the TLS session its
previous connection got (:mod:`~trimtab.systems.bookkeeper.bookieinfo.tls_sessions`), so a
reconnect skips the certificate exchange; renewed files start afresh. Every refusal is a ``tls``
error naming the endpoint and the fix (:mod:`~trimtab.systems.bookkeeper.bookieinfo.tlserrors`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import math
import socket
import ssl
from collections.abc import Iterable, Mapping

from trimtab.cluster import NodeId
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind, FetchResult
from trimtab.systems.bookkeeper.bookieinfo.loop import LoopThread
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.proto import bookkeeper_v3_pb2 as v3
from trimtab.systems.bookkeeper.bookieinfo.tls import SYSTEM_CAS, ClientTls, ReloadingContext
from trimtab.systems.bookkeeper.bookieinfo.tls_sessions import SessionCache
from trimtab.systems.bookkeeper.bookieinfo.tlserrors import (
    explain,
    not_tls,
    refused_after_handshake,
    wants_tls_answer,
)
from trimtab.systems.bookkeeper.bookieinfo.v3 import (
    FRAME_SECONDS,
    FrameError,
    frame,
    get_bookie_info_request,
    parse_response,
    read_frame,
    result_of,
    start_tls_request,
)
from trimtab.systems.bookkeeper.registry.model import WireProtocol, split_address, wants_tls

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "BookieRpcClient"]

DEFAULT_MAX_IN_FLIGHT = 256
_GRACE_SECONDS = 2.0


class _ClosedError(ConnectionError):
    """The connection ended before the answer came."""


class _BadAnswerError(ValueError):
    """The node sent bytes that are not a v3 response."""


class _TlsError(ConnectionError):
    """TLS could not be set up with the node, or the node refused plaintext; the message says
    why and what to fix."""


class _Connection:
    """One kept TCP connection to one bookie; requests matched to answers by ``txnId``."""

    def __init__(self, host: str, port: int, tls: _Upgrade | None = None) -> None:
        self.host, self.port = host, port
        self._tls = tls
        self._context: ssl.SSLContext | None = None  # the TLS context of this connection
        self._answered = False  # an answer came on this connection (after TLS, if any)
        self.plaintext = tls is None
        self._raw: asyncio.BaseTransport | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future[v3.Response]] = {}
        self._task: asyncio.Task[None] | None = None
        self._opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False

    async def open(self) -> None:
        try:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        except BaseException as exc:
            self.closed = True
            if not self._opened.done():
                self._opened.set_exception(exc)
                self._opened.exception()  # retrieved: waiters get it from ready()
            raise
        sock = self._writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._raw = self._writer.transport  # under TLS, closed too when the connection ends
        if self._tls is not None:
            try:
                await self._start_tls(self._tls)
            except BaseException as exc:
                self.closed = True
                self._writer.close()
                self._raw.close()
                if not self._opened.done():
                    self._opened.set_exception(exc)
                    self._opened.exception()
                raise
        self._task = asyncio.create_task(self._read_answers())
        self._opened.set_result(None)

    async def _start_tls(self, tls: _Upgrade) -> None:
        """START_TLS, its EOK, then the handshake; ``_TlsError`` saying why not."""
        assert self._reader is not None and self._writer is not None
        endpoint = f"{self.host}:{self.port}"
        self._writer.write(frame(start_tls_request(tls.txn())))
        await self._writer.drain()
        try:
            answer = parse_response(await read_frame(self._reader, wait=FRAME_SECONDS))
        except asyncio.IncompleteReadError:
            raise _TlsError(f"{endpoint} closed the connection at START_TLS") from None
        except (FrameError, ValueError):
            raise _TlsError(not_tls(endpoint)) from None
        if answer.status != pb.EOK or answer.header.operation != v3.START_TLS:
            status = pb.StatusCode.Name(answer.status)
            raise _TlsError(
                f"{endpoint} does not offer TLS on its bookie port (START_TLS answered "
                f"{status}): configure TLS on the node, or reach it without TLS settings"
            )
        self._context = context = tls.context.get()
        try:
            with tls.sessions.offering(endpoint, context):
                await self._writer.start_tls(context, server_hostname=self.host)
            tls.sessions.handshaken(self._writer.get_extra_info("ssl_object"))
        except ssl.SSLError as exc:
            tls.sessions.forget(endpoint)
            raise _TlsError(tls.explain(exc, endpoint)) from None
        except (ConnectionError, asyncio.IncompleteReadError):
            tls.sessions.forget(endpoint)
            raise _TlsError(
                f"{endpoint} closed the connection during the TLS handshake: "
                "check the node's log (its certificate or its --tls-ca)"
            ) from None

    async def ready(self) -> None:
        """Wait for a connect another request started."""
        await asyncio.shield(self._opened)

    async def ask(self, request: v3.Request) -> v3.Response:
        if self.closed or self._writer is None:
            raise _ClosedError("connection closed")
        txn = request.header.txnId
        answer: asyncio.Future[v3.Response] = asyncio.get_running_loop().create_future()
        self._pending[txn] = answer
        try:
            self._writer.write(frame(request))
            await self._writer.drain()
            return await answer
        finally:
            self._pending.pop(txn, None)

    async def _read_answers(self) -> None:
        assert self._reader is not None
        failure: Exception
        try:
            while True:
                response = parse_response(await read_frame(self._reader, wait=None))
                self._answered = True
                waiting = self._pending.pop(response.header.txnId, None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(response)
        except (asyncio.IncompleteReadError, ConnectionResetError):
            failure = self.refusal() or _ClosedError("the node closed the connection")
        except (FrameError, ValueError) as exc:
            failure = _BadAnswerError(str(exc))
        except ssl.SSLError as exc:  # TLS 1.3: a refused client certificate shows here
            endpoint = f"{self.host}:{self.port}"
            tls = self._tls
            failure = _TlsError(tls.explain(exc, endpoint) if tls else str(exc))
        except (OSError, TimeoutError) as exc:
            failure = _ClosedError(f"connection lost: {exc}")
        self._fail(failure)

    def _keep_session(self) -> None:
        """As a connection that worked ends: keep its session for this node's next connection
        (taken only then: reading a TLS 1.3 session copies it, about 0.1 ms of CPU)."""
        if not self._answered or self.closed:
            return
        if self._tls is not None and self._context is not None and self._writer is not None:
            ssl_object = self._writer.get_extra_info("ssl_object")
            self._tls.sessions.keep(f"{self.host}:{self.port}", self._context, ssl_object)

    def refusal(self) -> _TlsError | None:
        """A TLS connection closed before any answer: how a node refuses our certificate."""
        if self._tls is None or self._answered:
            return None
        return _TlsError(self._tls.refused(f"{self.host}:{self.port}"))

    def _fail(self, failure: Exception) -> None:
        self._keep_session()
        self.closed = True
        for waiting in self._pending.values():
            if not waiting.done():
                waiting.set_exception(failure)
        self._pending.clear()
        if self._writer is not None:
            self._writer.close()
        if self._raw is not None:
            self._raw.close()

    def close(self) -> None:
        self._fail(_ClosedError("connection closed by the client"))
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()

    async def wait_closed(self) -> None:
        """Until the socket is released: a loop closed before that leaks it (ResourceWarning)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()


class BookieRpcClient:
    """GET_BOOKIE_INFO over v3; one kept connection per bookie, ``max_in_flight`` at once."""

    def __init__(
        self, *, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, tls: ClientTls | None = None
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        self.max_in_flight = max_in_flight
        self._tls_settings = tls or SYSTEM_CAS
        self._upgrade: _Upgrade | None = None  # made at the first TLS connection
        self._loop: LoopThread | None = None
        self._closed = False
        self._connections: dict[str, _Connection] = {}  # touched on the loop only
        self._txn = itertools.count(1)
        self.connects = 0

    # -- the threaded side -------------------------------------------------------------------

    def fetch_many(
        self, targets: Mapping[NodeId, str | None], *, timeout: float
    ) -> dict[NodeId, FetchResult]:
        """Ask every ``node -> address`` (``host:port`` or ``bookie-rpc://host:port``)."""
        return self.collect(self.fetch_many_async(targets, timeout=timeout), targets)

    def fetch_many_async(
        self, targets: Mapping[NodeId, str | None], *, timeout: float
    ) -> concurrent.futures.Future[dict[NodeId, FetchResult]]:
        """:meth:`fetch_many` started; read it with :meth:`collect`. It ends within the scan's
        bound: ``timeout`` times the turns ``max_in_flight`` allows, plus a grace."""
        try:
            loop = self._started()
            return loop.submit(self._scan(dict(targets), timeout))
        except RuntimeError as exc:  # closed
            failed: concurrent.futures.Future[dict[NodeId, FetchResult]]
            failed = concurrent.futures.Future()
            failed.set_exception(exc)
            return failed

    @staticmethod
    def collect(
        scan: concurrent.futures.Future[dict[NodeId, FetchResult]],
        targets: Mapping[NodeId, str | None],
    ) -> dict[NodeId, FetchResult]:
        """The results of a started scan; a scan cut short by :meth:`close` is unavailable."""
        try:
            return scan.result()
        except (concurrent.futures.CancelledError, RuntimeError) as exc:
            detail = str(exc) or "the client was closed during the scan"
            return {n: _unavailable(detail) for n in targets}

    def retain(self, addresses: Iterable[str]) -> None:
        """Close kept connections to bookies whose address is not among ``addresses``."""
        keep = set()
        for address in addresses:
            where = _host_port(address)
            if not isinstance(where, FetchError):
                keep.add(self._key(*where))
        if self._loop is not None and not self._closed:
            with contextlib.suppress(RuntimeError, TimeoutError):
                self._loop.run(self._retain(keep), _GRACE_SECONDS)

    @property
    def resumed(self) -> int:
        """TLS connections that resumed an earlier session (no certificate exchange)."""
        return self._upgrade.sessions.resumed if self._upgrade is not None else 0

    def forget_tls_sessions(self) -> None:
        """Offer no kept TLS session to the next connections (they make full handshakes)."""
        if self._upgrade is not None:
            self._upgrade.sessions.clear()

    @property
    def open_connections(self) -> int:
        return sum(not c.closed for c in list(self._connections.values()))

    def close(self) -> None:
        """Close every connection and stop the loop; idempotent."""
        self._closed = True
        loop, self._loop = self._loop, None
        if loop is not None:
            with contextlib.suppress(RuntimeError, TimeoutError):
                loop.run(self._retain(set()), _GRACE_SECONDS)
            loop.close()

    def _started(self) -> LoopThread:
        if self._closed:
            raise RuntimeError("client is closed")
        if self._loop is None:
            self._loop = LoopThread("bookie-rpc-client")
        return self._loop

    # -- on the loop -------------------------------------------------------------------------

    async def _retain(self, keep: set[str]) -> None:
        dropped = [self._connections.pop(k) for k in list(self._connections) if k not in keep]
        for connection in dropped:
            connection.close()
        await asyncio.gather(*(c.wait_closed() for c in dropped))

    async def _scan(
        self, targets: Mapping[NodeId, str | None], timeout: float
    ) -> dict[NodeId, FetchResult]:
        results: dict[NodeId, FetchResult] = {}
        asks: dict[NodeId, asyncio.Task[FetchResult]] = {}
        turns = asyncio.Semaphore(self.max_in_flight)
        for node, address in sorted(targets.items()):
            where = _host_port(address)
            if isinstance(where, FetchError):
                results[node] = where
            else:
                asks[node] = asyncio.create_task(self._ask(where, timeout, turns))
        if asks:
            bound = timeout * math.ceil(len(asks) / self.max_in_flight) + _GRACE_SECONDS
            _, stragglers = await asyncio.wait(asks.values(), timeout=bound)
            for task in stragglers:
                task.cancel()
            late = FetchError(FetchErrorKind.TIMEOUT, f"no answer within {timeout:g} s")
            for node, task in asks.items():
                results[node] = late if task in stragglers else task.result()
        return results

    async def _ask(
        self, where: tuple[str, int, bool], timeout: float, turns: asyncio.Semaphore
    ) -> FetchResult:
        async with turns:
            connection: _Connection | None = None
            try:
                async with asyncio.timeout(timeout):
                    connection = await self._connection(*where)
                    response = await connection.ask(get_bookie_info_request(next(self._txn)))
            except TimeoutError:
                if connection is not None:
                    self._drop(connection)
                return FetchError(FetchErrorKind.TIMEOUT, f"no answer within {timeout:g} s")
            except _BadAnswerError as exc:
                return FetchError(FetchErrorKind.BAD_RESPONSE, str(exc))
            except _TlsError as exc:
                return FetchError(FetchErrorKind.TLS, str(exc))
            except ssl.SSLError as exc:
                return FetchError(FetchErrorKind.TLS, f"{where[0]}:{where[1]}: {exc}")
            except OSError as exc:  # refused, reset, closed (_ClosedError is a ConnectionError)
                refusal = connection.refusal() if connection is not None else None
                if refusal is not None and isinstance(exc, ConnectionResetError):
                    return FetchError(FetchErrorKind.TLS, str(refusal))
                return _unavailable(_describe(exc))
            if response.status == pb.EUA and connection.plaintext:
                return FetchError(FetchErrorKind.STATUS, wants_tls_answer())
            return result_of(response)

    def _key(self, host: str, port: int, tls: bool) -> str:
        return f"{host}:{port}" + ("+tls" if self._tls_settings.applies(tls) else "")

    def _upgrade_for(self, registered_tls: bool) -> _Upgrade | None:
        """How connections to a node are secured (``None``: plaintext)."""
        if not self._tls_settings.applies(registered_tls):
            return None
        if self._upgrade is None:
            self._upgrade = _Upgrade(self._tls_settings, self._txn)
        return self._upgrade

    async def _connection(self, host: str, port: int, tls: bool) -> _Connection:
        key = self._key(host, port, tls)
        current = self._connections.get(key)
        if current is not None and not current.closed:
            await current.ready()
            return current
        connection = _Connection(host, port, self._upgrade_for(tls))
        self._connections[key] = connection
        self.connects += 1
        await connection.open()
        return connection

    def _drop(self, connection: _Connection) -> None:
        for key, kept in list(self._connections.items()):
            if kept is connection:
                del self._connections[key]
        connection.close()


class _Upgrade:
    """What a connection needs to start TLS: the context (re-read when its files change), the
    txnId source, the settings' file names for the messages."""

    def __init__(self, settings: ClientTls, txn: itertools.count[int]) -> None:
        self.context = ReloadingContext(settings.files, settings.build)
        self.sessions = SessionCache()  # resumption across this client's connections
        self._settings = settings
        self._txn = txn

    def txn(self) -> int:
        return next(self._txn)

    def refused(self, endpoint: str) -> str:
        cert = self._settings.cert
        return refused_after_handshake(endpoint, str(cert) if cert else None)

    def explain(self, exc: BaseException, endpoint: str) -> str:
        s = self._settings
        return explain(
            exc,
            endpoint,
            ca=str(s.ca) if s.ca else None,
            cert=str(s.cert) if s.cert else None,
        )


def _host_port(address: str | None) -> tuple[str, int, bool] | FetchError:
    """Where to connect for ``address`` and whether its registration asks for TLS, or the
    error that says why not."""
    if not address:
        return FetchError(FetchErrorKind.NO_ADDRESS, "node published no bookie-rpc address")
    try:
        protocol, host_port = split_address(address)
    except ValueError as exc:
        return FetchError(FetchErrorKind.NO_ADDRESS, str(exc))
    if protocol is WireProtocol.GRPC and "://" in address:
        return FetchError(FetchErrorKind.NO_ADDRESS, f"{address} is not a bookie-rpc address")
    host, sep, port = host_port.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        return FetchError(FetchErrorKind.NO_ADDRESS, f"bad bookie address {address!r}")
    return host.strip("[]"), int(port), wants_tls(address)


def _unavailable(detail: str) -> FetchError:
    return FetchError(FetchErrorKind.UNAVAILABLE, detail)


def _describe(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return str(exc) or type(exc).__name__
