"""The GetBookieInfo gRPC service an agent runs, and the method's wire constants.

Behaviour follows upstream ``GetBookieInfoProcessorV3``: answer ``EBADVERSION`` to a client of
another protocol version, fill only the fields the request's flags ask for, and answer ``EIO``
when measuring the disks raises ``OSError``. Unknown flag bits are ignored.

Bounds, because an agent faces every client of the cluster: requests larger than
:data:`MAX_MESSAGE_BYTES` are refused by gRPC before any handler runs, at most
:data:`MAX_CONCURRENT_RPCS` requests are in progress (more get ``RESOURCE_EXHAUSTED``), the
handler never runs longer than its caller's deadline, and the server binds loopback unless
told otherwise. The handler is written against typed gRPC generics instead of the generated
servicer so that mypy checks it; ``tests/online/test_protocol.py`` shows the generated stub
talks to it.

With ``tls`` the port speaks only TLS (gRPC's own), requiring a client certificate signed by the
given CA when asked; renewed certificate files are taken at the next handshake
(:func:`~trimtab.systems.bookkeeper.bookieinfo.tls.grpc_server_credentials`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc

from trimtab.diskinfo import BookieInfo
from trimtab.errors import AgentError
from trimtab.systems.bookkeeper.bookieinfo.info import Requested
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.tls import ServerTls, grpc_server_credentials

__all__ = [
    "MAX_CONCURRENT_RPCS",
    "MAX_MESSAGE_BYTES",
    "METHOD",
    "PROTOCOL_VERSION",
    "SERVICE",
    "VERSION_METADATA_KEY",
    "BookieInfoServer",
    "answer",
]

SERVICE = pb.DESCRIPTOR.services_by_name["BookieInfo"].full_name
METHOD = f"/{SERVICE}/GetBookieInfo"
#: upstream ``ProtocolVersion.VERSION_THREE``: GET_BOOKIE_INFO exists only in the v3 protocol
PROTOCOL_VERSION = 3
VERSION_METADATA_KEY = "bookieinfo-protocol-version"
MAX_MESSAGE_BYTES = 1024  # a request is a few bytes; anything larger is not ours
MAX_CONCURRENT_RPCS = 64

_log = logging.getLogger(__name__)


def answer(
    request: pb.GetBookieInfoRequest,
    measure: Callable[[], BookieInfo],
    *,
    client_version: str | None = None,
) -> pb.GetBookieInfoResponse:
    """The response to ``request``, measuring the disks only if a disk field is asked for."""
    if client_version is not None and client_version.strip() != str(PROTOCOL_VERSION):
        return pb.GetBookieInfoResponse(status=pb.EBADVERSION)
    flags = Requested(
        request.requested & (Requested.TOTAL_DISK_CAPACITY | Requested.FREE_DISK_SPACE)
    )
    response = pb.GetBookieInfoResponse(status=pb.EOK)
    if not flags:
        return response
    try:
        info = measure()
    except OSError as exc:
        _log.warning("GetBookieInfo: measuring the ledger directories failed: %s", exc)
        return pb.GetBookieInfoResponse(status=pb.EIO)
    if Requested.TOTAL_DISK_CAPACITY in flags:
        response.totalDiskCapacity = info.total_disk_bytes
    if Requested.FREE_DISK_SPACE in flags:
        response.freeDiskSpace = info.free_disk_bytes
    return response


class BookieInfoServer:
    """A gRPC server answering GetBookieInfo with ``measure()``; start, then stop once."""

    def __init__(
        self,
        measure: Callable[[], BookieInfo],
        *,
        listen: str = "127.0.0.1:0",
        workers: int = 4,
        tls: ServerTls | None = None,
    ) -> None:
        self._measure = measure
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="bookieinfo-rpc"
        )
        self._server = grpc.server(
            self._executor,
            handlers=[
                grpc.method_handlers_generic_handler(
                    SERVICE,
                    {
                        "GetBookieInfo": grpc.unary_unary_rpc_method_handler(
                            self._handle,
                            request_deserializer=pb.GetBookieInfoRequest.FromString,
                            response_serializer=pb.GetBookieInfoResponse.SerializeToString,
                        )
                    },
                )
            ],
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0),  # a second agent on the same port must fail, not share
            ],
            maximum_concurrent_rpcs=MAX_CONCURRENT_RPCS,
        )
        try:
            if tls is None:
                self.port = self._server.add_insecure_port(listen)
            else:
                self.port = self._server.add_secure_port(listen, grpc_server_credentials(tls))
        except RuntimeError as exc:
            raise AgentError(f"cannot listen on {listen}: {exc}") from None
        if self.port == 0:
            raise AgentError(f"cannot listen on {listen}: address in use or not local")
        host = listen.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float = 1.0) -> None:
        """Stop accepting requests, let those in progress finish within ``grace`` seconds."""
        self._server.stop(grace).wait(grace + 1.0)
        self._executor.shutdown(wait=True, cancel_futures=True)

    def answer_counts(self) -> dict[str, int]:
        """Answers given so far by status name (``EOK``, ``EIO``...), for metrics."""
        with self._lock:
            return dict(self._counts)

    def _count(self, status: int) -> None:
        name = pb.StatusCode.Name(status)
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + 1

    def _handle(
        self, request: pb.GetBookieInfoRequest, context: grpc.ServicerContext
    ) -> pb.GetBookieInfoResponse:
        response = self._respond(request, context)
        self._count(response.status)
        return response

    def _respond(
        self, request: pb.GetBookieInfoRequest, context: grpc.ServicerContext
    ) -> pb.GetBookieInfoResponse:
        """The answer to one request: :func:`answer` with the caller's protocol version."""
        version = dict(context.invocation_metadata()).get(VERSION_METADATA_KEY)
        return answer(
            request, self._measure, client_version=str(version) if version is not None else None
        )
