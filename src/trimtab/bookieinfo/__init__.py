"""GetBookieInfo: nodes report their disk space, clients poll it and feed placement weights.

The live half of BOOKKEEPER-950 (``bookkeeper.md`` §3):

* :mod:`~trimtab.bookieinfo.proto` — the wire protocol (``bookieinfo.proto`` and its generated
  code), payloads field-for-field as upstream, served over gRPC;
* :class:`Agent` — the server on each storage node, registered in ZooKeeper;
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
from trimtab.bookieinfo.server import BookieInfoServer

__all__ = [
    "Agent",
    "AgentOptions",
    "AgentStatus",
    "BookieInfo",
    "BookieInfoClient",
    "BookieInfoReader",
    "BookieInfoServer",
    "BookieInfoSink",
    "DiskUsage",
    "FetchError",
    "FetchErrorKind",
    "FetchResult",
    "FilesystemUsage",
    "GrpcBookieInfoClient",
    "ReaderSnapshot",
    "ReaderStats",
    "Requested",
    "ScanKind",
    "SurveyRow",
    "measure_disks",
    "next_readonly",
    "survey",
]
