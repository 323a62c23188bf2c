"""GetBookieInfo: nodes report their disk space, clients poll it and feed placement weights.

The live half of BOOKKEEPER-950 (``bookkeeper.md`` §3):

* :mod:`~trimtab.systems.bookkeeper.bookieinfo.proto` — the wire protocols (``bookieinfo.proto``,
  payloads field-for-field as upstream, served over gRPC; ``bookkeeper_v3.proto``, BookKeeper's own
  v3 frame, :mod:`~trimtab.systems.bookkeeper.bookieinfo.v3`);
* :class:`Agent` — the server on each storage node, registered in ZooKeeper, answering over
  gRPC and, as a bookie, over v3 (:class:`BookieRpcServer`);
* :class:`RoutingBookieInfoClient` — asks each node in the protocol it registered (gRPC:
  :class:`GrpcBookieInfoClient`, v3 at a bookie port: :class:`BookieRpcClient`);
* :class:`BookieInfoReader` — the client-side poller that feeds a
  :class:`~trimtab.diskinfo.BookieInfoSink` (a placement policy) with
  :class:`~trimtab.diskinfo.BookieInfo` values;
* :func:`survey` — the one-shot query behind ``trimtab bookieinfo``;
* :class:`ServerTls`, :class:`ClientTls` — TLS and mutual TLS on both protocols
  (:mod:`~trimtab.systems.bookkeeper.bookieinfo.tls`).
"""

from __future__ import annotations

from trimtab.systems.bookkeeper.bookieinfo.agent import Agent, AgentOptions, AgentStatus
from trimtab.systems.bookkeeper.bookieinfo.client import (
    BookieInfoClient,
    GrpcBookieInfoClient,
    SurveyRow,
    survey,
)
from trimtab.systems.bookkeeper.bookieinfo.disk import (
    DiskUsage,
    FilesystemUsage,
    measure_disks,
    next_readonly,
)
from trimtab.systems.bookkeeper.bookieinfo.info import (
    FetchError,
    FetchErrorKind,
    FetchResult,
    Requested,
)
from trimtab.systems.bookkeeper.bookieinfo.reader import (
    BookieInfoReader,
    ReaderSnapshot,
    ReaderStats,
    ScanKind,
)
from trimtab.systems.bookkeeper.bookieinfo.routing import RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.server import BookieInfoServer
from trimtab.systems.bookkeeper.bookieinfo.tls import ClientTls, ServerTls, TlsSettingsError
from trimtab.systems.bookkeeper.bookieinfo.v3client import BookieRpcClient
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer

__all__ = [
    "Agent",
    "AgentOptions",
    "AgentStatus",
    "BookieInfoClient",
    "BookieInfoReader",
    "BookieInfoServer",
    "BookieRpcClient",
    "BookieRpcServer",
    "ClientTls",
    "DiskUsage",
    "FetchError",
    "FetchErrorKind",
    "FetchResult",
    "FilesystemUsage",
    "GrpcBookieInfoClient",
    "ReaderSnapshot",
    "ReaderStats",
    "Requested",
    "RoutingBookieInfoClient",
    "ScanKind",
    "ServerTls",
    "SurveyRow",
    "TlsSettingsError",
    "measure_disks",
    "next_readonly",
    "survey",
]
