"""GET_BOOKIE_INFO in BookKeeper's own v3 protocol: frames, messages and the answering rules.

The facts, from upstream's ``BookieProtoEncoding``, ``AuthHandler``, ``BookieRequestProcessor``
and ``GetBookieInfoProcessorV3``:

* a frame is a 4-byte big-endian length, then that many bytes holding one serialized
  ``Request`` (client to bookie) or ``Response`` (bookie to client); nothing else is on the wire;
* the response's header repeats the request's operation and ``txnId``, which is how answers
  find their requests on a connection shared by many (the bookie may answer out of order);
* with authentication off, the default, the bookie counts a connection authenticated as soon
  as it opens: no handshake, the first request is answered. A bookie that wants
  authentication answers any request but AUTH or START_TLS with the header and status ``EUA``
  and nothing else; trimtab does not authenticate, so that bookie's row says ``EUA``;
* GET_BOOKIE_INFO with a header version other than ``VERSION_THREE`` is answered
  ``EBADVERSION``; an operation the bookie does not serve, header and ``EBADREQ``; an AUTH
  request to a bookie with authentication off, ``EOK`` from plugin ``AuthDisabledPlugin``.

:func:`respond` is the server side of those rules (the agent's v3 port), :func:`result_of` the
client side; both are pure, the sockets live in
:mod:`~trimtab.systems.bookkeeper.bookieinfo.v3server` and
:mod:`~trimtab.systems.bookkeeper.bookieinfo.v3client`.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

from google.protobuf.message import DecodeError

from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.client import interpret
from trimtab.systems.bookkeeper.bookieinfo.info import (
    FetchError,
    FetchErrorKind,
    FetchResult,
    Requested,
)
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.proto import bookkeeper_v3_pb2 as v3
from trimtab.systems.bookkeeper.bookieinfo.server import answer

__all__ = [
    "AUTH_DISABLED_PLUGIN",
    "FRAME_SECONDS",
    "MAX_FRAME_BYTES",
    "FrameError",
    "frame",
    "get_bookie_info_request",
    "parse_request",
    "parse_response",
    "read_frame",
    "refusal",
    "respond",
    "result_of",
    "start_tls_answer",
    "start_tls_request",
]

#: Both sides refuse a frame longer than this; GET_BOOKIE_INFO messages are a few dozen bytes.
MAX_FRAME_BYTES = 64 * 1024
#: once a frame has begun, the rest must arrive within this many seconds
FRAME_SECONDS = 10.0
#: upstream ``AuthProviderFactoryFactory.authenticationDisabledPluginName``
AUTH_DISABLED_PLUGIN = "AuthDisabledPlugin"
_LENGTH = struct.Struct(">I")
_BOTH = int(Requested.TOTAL_DISK_CAPACITY | Requested.FREE_DISK_SPACE)


class FrameError(ValueError):
    """A frame this side will not read: longer than :data:`MAX_FRAME_BYTES`."""


def frame(message: v3.Request | v3.Response) -> bytes:
    """``message`` as it travels: its length, big-endian in 4 bytes, then its bytes."""
    payload = message.SerializeToString()
    return _LENGTH.pack(len(payload)) + payload


async def read_frame(
    reader: asyncio.StreamReader, *, wait: float | None, within: float = FRAME_SECONDS
) -> bytes:
    """The payload of the next frame, waiting ``wait`` seconds (``None``: for ever) for it to
    begin and ``within`` seconds for the rest; ``asyncio.IncompleteReadError`` at end of
    stream, ``TimeoutError`` when either wait runs out."""
    head = await asyncio.wait_for(reader.readexactly(_LENGTH.size), wait)
    (length,) = _LENGTH.unpack(head)
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {length} bytes (at most {MAX_FRAME_BYTES} are read)")
    return await asyncio.wait_for(reader.readexactly(length), within)


def get_bookie_info_request(txn_id: int) -> v3.Request:
    """GET_BOOKIE_INFO asking both total capacity and free space, as upstream's reader does."""
    return v3.Request(
        header=v3.BKPacketHeader(
            version=v3.VERSION_THREE, operation=v3.GET_BOOKIE_INFO, txnId=txn_id
        ),
        getBookieInfoRequest=pb.GetBookieInfoRequest(requested=_BOTH),
    )


def start_tls_request(txn_id: int) -> v3.Request:
    """START_TLS, as upstream's ``PerChannelBookieClient`` sends it before any other request."""
    return v3.Request(
        header=v3.BKPacketHeader(version=v3.VERSION_THREE, operation=v3.START_TLS, txnId=txn_id),
        startTLSRequest=v3.StartTLSRequest(),
    )


def start_tls_answer(request: v3.Request) -> v3.Response:
    """A bookie's EOK to START_TLS; the handshake follows on the same connection."""
    header = v3.BKPacketHeader(
        version=v3.VERSION_THREE, operation=v3.START_TLS, txnId=request.header.txnId
    )
    return v3.Response(header=header, status=pb.EOK, startTLSResponse=v3.StartTLSResponse())


def parse_request(payload: bytes) -> v3.Request:
    """A v3 request, or ``ValueError`` (not protobuf, or a required field missing)."""
    try:
        return v3.Request.FromString(payload)
    except DecodeError as exc:
        raise ValueError(f"not a v3 request: {exc}") from None


def parse_response(payload: bytes) -> v3.Response:
    """A v3 response, or ``ValueError`` (not protobuf, or a required field missing)."""
    try:
        return v3.Response.FromString(payload)
    except DecodeError as exc:
        raise ValueError(f"not a v3 response: {exc}") from None


def result_of(response: v3.Response) -> FetchResult:
    """What a GET_BOOKIE_INFO response says: the node's BookieInfo, or why there is none."""
    if response.status != pb.EOK:
        name = pb.StatusCode.Name(response.status)
        return FetchError(FetchErrorKind.STATUS, f"node answered {name}")
    if response.header.operation != v3.GET_BOOKIE_INFO:
        operation = v3.OperationType.Name(response.header.operation)
        return FetchError(FetchErrorKind.BAD_RESPONSE, f"answer is for operation {operation}")
    if not response.HasField("getBookieInfoResponse"):
        return FetchError(FetchErrorKind.BAD_RESPONSE, "EOK answer without getBookieInfoResponse")
    return interpret(response.getBookieInfoResponse)


def refusal(request: v3.Request, status: int) -> v3.Response:
    """Header and ``status`` only: how a bookie refuses (``EUA``, ``EBADREQ``)."""
    return v3.Response(header=request.header, status=status)  # type: ignore[arg-type]


def respond(request: v3.Request, measure: Callable[[], BookieInfo]) -> v3.Response:
    """A bookie's answer to ``request`` with authentication off (the rules above)."""
    header = v3.BKPacketHeader(
        version=v3.VERSION_THREE,
        operation=request.header.operation,
        txnId=request.header.txnId,
    )
    operation = request.header.operation
    if operation == v3.GET_BOOKIE_INFO:
        if request.header.version != v3.VERSION_THREE:
            inner = pb.GetBookieInfoResponse(status=pb.EBADVERSION)
        else:
            inner = answer(request.getBookieInfoRequest, measure)
        return v3.Response(header=header, status=inner.status, getBookieInfoResponse=inner)
    if operation == v3.AUTH:
        plugin = v3.AuthMessage(authPluginName=AUTH_DISABLED_PLUGIN, payload=b"")
        return v3.Response(header=header, status=pb.EOK, authResponse=plugin)
    return refusal(request, pb.EBADREQ)
