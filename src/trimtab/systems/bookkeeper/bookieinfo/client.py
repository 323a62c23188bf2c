"""Asking nodes for their disk space: the client seam, its gRPC implementation, a one-shot survey.

:class:`BookieInfoClient` is the one method the reader needs: ask many nodes at once and get one
result per node, a :class:`~trimtab.systems.bookkeeper.bookieinfo.info.BookieInfo` or a
:class:`~trimtab.systems.bookkeeper.bookieinfo.info.FetchError`, never an exception. Tests of the
reader use a fake; :class:`GrpcBookieInfoClient` is the real one.

The gRPC client sends every request at once and waits for all of them, so a scan takes as long
as its slowest node, bounded by the timeout (upstream ``getBookieInfoTimeoutSecs``), not the
sum. It keeps one channel per node address and closes the channels of addresses it is no
longer asked about (:meth:`GrpcBookieInfoClient.retain`), so departed nodes leave no socket.

TLS: a node gets a TLS channel when the client's
:class:`~trimtab.systems.bookkeeper.bookieinfo.tls.ClientTls` applies to it (every node when the
reader is configured with TLS, else those registered ``grpc+tls://``); the credentials are read
again when their files change (channels made after that use the renewed files). A failed call
is explained by one handshake of our own
(:func:`~trimtab.systems.bookkeeper.bookieinfo.tlserrors.probe`), so a wrong CA, an expired or
misnamed certificate, a missing client certificate and a plaintext/TLS mismatch each read as
what to fix.

:func:`survey` is upstream's one-shot ``getBookieInfo()`` behind ``bookkeeper shell
bookieinfo``: writable *and* read-only nodes, failures kept (listed as such, not hidden).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import grpc

from trimtab.cluster import NodeId, NodeState
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.info import (
    FetchError,
    FetchErrorKind,
    FetchResult,
    Requested,
)
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.server import (
    MAX_MESSAGE_BYTES,
    METHOD,
    PROTOCOL_VERSION,
    VERSION_METADATA_KEY,
)
from trimtab.systems.bookkeeper.bookieinfo.tls import (
    SYSTEM_CAS,
    ClientTls,
    TlsSettingsError,
    grpc_channel_credentials,
)
from trimtab.systems.bookkeeper.bookieinfo.tlserrors import probe
from trimtab.systems.bookkeeper.registry.model import Membership, split_address, wants_tls

__all__ = [
    "BookieInfoClient",
    "GrpcBookieInfoClient",
    "SurveyRow",
    "interpret",
    "survey",
]

_BOTH = int(Requested.TOTAL_DISK_CAPACITY | Requested.FREE_DISK_SPACE)
_GRACE_SECONDS = 2.0  # beyond the RPC deadline, before a future is abandoned as stuck


class BookieInfoClient(Protocol):
    """Ask nodes for their disk space; one result per node, errors as values."""

    def fetch_many(
        self, targets: Mapping[NodeId, str | None], *, timeout: float
    ) -> dict[NodeId, FetchResult]:
        """Query every ``node -> address`` (``None``: no address published) concurrently."""
        ...

    def retain(self, addresses: Iterable[str]) -> None:
        """Forget connections to any address not in ``addresses``."""
        ...

    def close(self) -> None:
        """Cancel requests in flight and close every connection; idempotent."""
        ...


def interpret(response: pb.GetBookieInfoResponse) -> FetchResult:
    """Turn a response to a both-fields request into a BookieInfo or an error."""
    if response.status != pb.EOK:
        name = pb.StatusCode.Name(response.status)
        return FetchError(FetchErrorKind.STATUS, f"node answered {name}")
    if not (response.HasField("totalDiskCapacity") and response.HasField("freeDiskSpace")):
        return FetchError(FetchErrorKind.BAD_RESPONSE, "answer lacks the requested disk fields")
    try:
        return BookieInfo.checked(response.totalDiskCapacity, response.freeDiskSpace)
    except ValueError as exc:
        return FetchError(FetchErrorKind.BAD_RESPONSE, str(exc))


def _rpc_error(exc: grpc.RpcError, timeout: float) -> FetchError:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return FetchError(FetchErrorKind.TIMEOUT, f"no answer within {timeout:g} s")
    name = code.name if code is not None else "UNKNOWN"
    first = (details or "no details").split(";", 1)[0].strip()  # gRPC appends a long trail
    return FetchError(FetchErrorKind.UNAVAILABLE, f"{first} ({name})")


_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),  # the reader owns retries
    # a restarted node is found again quickly, not after a long backoff
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def _file_stamp(settings: ClientTls) -> tuple[int, ...]:
    stamp: list[int] = []
    for path in settings.files:
        try:
            stamp.append(path.stat().st_mtime_ns)
        except OSError:
            stamp.append(-1)
    return tuple(stamp)


class GrpcBookieInfoClient:
    """GetBookieInfo over gRPC, one channel per address, requests sent concurrently."""

    def __init__(self, *, tls: ClientTls | None = None) -> None:
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._secured: set[str] = set()  # addresses whose channel is TLS
        self._in_flight: set[grpc.Future[pb.GetBookieInfoResponse]] = set()
        self._closed = False
        self._tls = tls or SYSTEM_CAS
        self._credentials: grpc.ChannelCredentials | None = None
        self._stamp: tuple[int, ...] = ()

    def _uses_tls(self, address: str) -> bool:
        return self._tls.applies(wants_tls(address))

    def _channel(self, address: str) -> grpc.Channel:
        with self._lock:
            if self._closed:
                raise RuntimeError("client is closed")
            channel = self._channels.get(address)
            if channel is None:
                target = split_address(address)[1]
                if self._uses_tls(address):
                    channel = grpc.secure_channel(
                        target, self._channel_credentials(), options=_CHANNEL_OPTIONS
                    )
                    self._secured.add(address)
                else:
                    channel = grpc.insecure_channel(target, options=_CHANNEL_OPTIONS)
                self._channels[address] = channel
            return channel

    def _channel_credentials(self) -> grpc.ChannelCredentials:
        """The credentials from the files as they are now (called under the lock)."""
        stamp = _file_stamp(self._tls)
        if self._credentials is None or stamp != self._stamp:
            self._credentials, self._stamp = grpc_channel_credentials(self._tls), stamp
        return self._credentials

    def _renew(self) -> None:
        """Close the TLS channels if the credential files changed (the next use reopens)."""
        with self._lock:
            if not self._secured or _file_stamp(self._tls) == self._stamp:
                return
            stale = [self._channels.pop(a) for a in self._secured if a in self._channels]
            self._secured.clear()
        for channel in stale:
            channel.close()

    def _explain(self, address: str, error: FetchError, timeout: float) -> FetchError:
        """A failed call's reason from a handshake of our own, when it tells more."""
        if error.kind is not FetchErrorKind.UNAVAILABLE or "refused" in error.detail.lower():
            return error
        host, _, port = split_address(address)[1].rpartition(":")
        if not port.isdigit():
            return error
        try:
            context = self._tls.build() if self._uses_tls(address) else None
        except TlsSettingsError as exc:
            return FetchError(FetchErrorKind.TLS, str(exc))
        if context is not None:
            context.check_hostname = True  # gRPC checks names whatever tlsHostnameVerification
        reason = probe(
            host.strip("[]"),
            int(port),
            context,
            timeout=min(timeout, 2.0),
            ca=str(self._tls.ca) if self._tls.ca else None,
            cert=str(self._tls.cert) if self._tls.cert else None,
        )
        return FetchError(FetchErrorKind.TLS, reason) if reason else error

    def fetch_many(
        self, targets: Mapping[NodeId, str | None], *, timeout: float
    ) -> dict[NodeId, FetchResult]:
        results: dict[NodeId, FetchResult] = {}
        futures: dict[NodeId, grpc.Future[pb.GetBookieInfoResponse]] = {}
        request = pb.GetBookieInfoRequest(requested=_BOTH)
        self._renew()
        metadata = ((VERSION_METADATA_KEY, str(PROTOCOL_VERSION)),)
        for node, address in sorted(targets.items()):
            if not address:
                results[node] = FetchError(
                    FetchErrorKind.NO_ADDRESS, "node published no GetBookieInfo address"
                )
                continue
            try:
                call = self._channel(address).unary_unary(
                    METHOD,
                    request_serializer=pb.GetBookieInfoRequest.SerializeToString,
                    response_deserializer=pb.GetBookieInfoResponse.FromString,
                )
                future = call.future(request, timeout=timeout, metadata=metadata)
            except RuntimeError as exc:  # closed while scanning
                results[node] = FetchError(FetchErrorKind.UNAVAILABLE, str(exc))
                continue
            except TlsSettingsError as exc:  # the files went unreadable since the start
                results[node] = FetchError(FetchErrorKind.TLS, str(exc))
                continue
            futures[node] = future
            with self._lock:
                self._in_flight.add(future)
        for node, pending in futures.items():
            try:
                results[node] = interpret(pending.result(timeout=timeout + _GRACE_SECONDS))
            except grpc.FutureTimeoutError:
                pending.cancel()
                results[node] = FetchError(
                    FetchErrorKind.TIMEOUT, f"no answer within {timeout:g} s"
                )
            except grpc.FutureCancelledError:
                results[node] = FetchError(FetchErrorKind.UNAVAILABLE, "request cancelled")
            except grpc.RpcError as exc:
                address = targets[node] or ""
                results[node] = self._explain(address, _rpc_error(exc, timeout), timeout)
            finally:
                with self._lock:
                    self._in_flight.discard(pending)
        return results

    def retain(self, addresses: Iterable[str]) -> None:
        keep = set(addresses)
        with self._lock:
            gone = [a for a in self._channels if a not in keep]
            channels = [self._channels.pop(a) for a in gone]
            self._secured -= set(gone)
        for channel in channels:
            channel.close()

    @property
    def open_channels(self) -> int:
        with self._lock:
            return len(self._channels)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            in_flight = list(self._in_flight)
            channels = list(self._channels.values())
            self._channels.clear()
        for future in in_flight:
            future.cancel()
        for channel in channels:
            channel.close()


@dataclass(frozen=True, slots=True)
class SurveyRow:
    """One node as ``trimtab bookieinfo`` shows it: its state and what it answered."""

    node: NodeId
    state: NodeState
    result: FetchResult


def survey(membership: Membership, client: BookieInfoClient, *, timeout: float) -> list[SurveyRow]:
    """Ask every writable and read-only node at once; rows in node order, failures included."""
    nodes = sorted(membership.writable | membership.readonly)
    results = client.fetch_many({n: membership.addresses.get(n) for n in nodes}, timeout=timeout)
    return [SurveyRow(n, membership.state_of(n), results[n]) for n in nodes]
