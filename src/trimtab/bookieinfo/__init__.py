"""GetBookieInfo: nodes report their disk space, clients poll it and feed placement weights.

The live half of BOOKKEEPER-950 (``bookkeeper.md`` §3):

* :mod:`~trimtab.bookieinfo.proto` — the wire protocols (``bookieinfo.proto``, payloads
  field-for-field as upstream, served over gRPC; ``bookkeeper_v3.proto``, BookKeeper's own v3
  frame, :mod:`~trimtab.bookieinfo.v3`);
* :class:`Agent` — the server on each storage node, registered in ZooKeeper, answering over
  gRPC and, as a bookie, over v3 (:class:`BookieRpcServer`);
* :class:`RoutingBookieInfoClient` — asks each node in the protocol it registered (gRPC:
  :class:`GrpcBookieInfoClient`, v3 at a bookie port: :class:`BookieRpcClient`);
* :class:`BookieInfoReader` — the client-side poller that feeds a :class:`BookieInfoSink`
  (a placement policy) with :class:`BookieInfo` values;
* :func:`survey` — the one-shot query behind ``trimtab bookieinfo``.
"""

from __future__ import annotations

from trimtab.bookieinfo.agent import Agent, AgentOptions, AgentStatus
from trimtab.bookieinfo.client import BookieInfoClient, GrpcBookieInfoClient, SurveyRow, survey
from trimtab.bookieinfo.disk import DiskUsage, FilesystemUsage, measure_disks, next_readonly
from trimtab.bookieinfo.info import (
    BookieInfo,
    BookieInfoSink,
    FetchError,
    FetchErrorKind,
    FetchResult,
    Requested,
)
from trimtab.bookieinfo.reader import BookieInfoReader, ReaderSnapshot, ReaderStats, ScanKind
from trimtab.bookieinfo.routing import RoutingBookieInfoClient
from trimtab.bookieinfo.server import BookieInfoServer
from trimtab.bookieinfo.v3client import BookieRpcClient
from trimtab.bookieinfo.v3server import BookieRpcServer

__all__ = [
    "Agent",
    "AgentOptions",
    "AgentStatus",
    "BookieInfo",
    "BookieInfoClient",
    "BookieInfoReader",
    "BookieInfoServer",
    "BookieInfoSink",
    "BookieRpcClient",
    "BookieRpcServer",
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
    "SurveyRow",
    "measure_disks",
    "next_readonly",
    "survey",
]
