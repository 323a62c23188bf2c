"""Fault injection for agents, from the test side: make one hang, fail with EIO, or fill up.

Integration tests need agents that misbehave the way real nodes do, in a real process. Nothing of
this ships in trimtab: the tests wrap the agent from outside. :class:`FaultyBookieInfoServer` and
:class:`FaultyBookieRpcServer` are the agent's two servers with a faults file consulted before
each answer; :func:`install` puts them (and a disk reading that honours ``free_bytes``) into
:mod:`trimtab.systems.bookkeeper.bookieinfo.agent`. Run as a script, this module installs them
and then runs the ``trimtab`` command line, so ``python tests/online/faults.py agent ...`` is
``trimtab agent ...`` with faults (what :class:`tests.online.conftest.AgentProcess` starts).

The faults file is named by the environment variable ``TRIMTAB_AGENT_FAULTS`` and re-read on
every request and every disk check, so a test can change an agent's behaviour while it runs by
rewriting the file. Keys, all optional:

* ``hang_seconds`` (number): sleep this long before answering, while the caller still waits
  (bounded: at most :data:`MAX_HANG_SECONDS`, and the sleep ends when the caller gives up);
* ``io_error`` (bool): answer ``EIO``, as a bookie whose disk check throws ``IOException``;
* ``free_bytes`` (int): report this much free space (and decide read-only on it) instead of
  the real figure, as if the disk had filled up;
* ``status`` (a StatusCode name such as ``"EUA"``): on the BookKeeper v3 port, answer every
  request with only this status, as a bookie that wants authentication answers ``EUA``;
* ``close_connection`` (bool): on the v3 port, close the connection on each request unanswered.

A missing or unreadable file means no faults.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo import agent as agent_module
from trimtab.systems.bookkeeper.bookieinfo.disk import DiskUsage, FilesystemUsage
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.proto import bookkeeper_v3_pb2 as v3
from trimtab.systems.bookkeeper.bookieinfo.server import BookieInfoServer
from trimtab.systems.bookkeeper.bookieinfo.v3 import refusal, respond
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer

__all__ = [
    "ENV_VAR",
    "MAX_HANG_SECONDS",
    "FaultFile",
    "Faults",
    "FaultyBookieInfoServer",
    "FaultyBookieRpcServer",
    "install",
]

ENV_VAR = "TRIMTAB_AGENT_FAULTS"
MAX_HANG_SECONDS = 60.0
_STATUS_NAMES = frozenset(pb.StatusCode.keys())


@dataclass(frozen=True, slots=True)
class Faults:
    """The faults in force right now; the default is none."""

    hang_seconds: float = 0.0
    io_error: bool = False
    free_bytes: int | None = None
    status: str | None = None
    close_connection: bool = False


class FaultFile:
    """Reads the faults file each time it is asked; ``None`` path means never any fault."""

    __slots__ = ("path",)

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None

    @classmethod
    def from_env(cls, explicit: str | Path | None = None) -> FaultFile:
        return cls(explicit or os.environ.get(ENV_VAR) or None)

    def current(self) -> Faults:
        if self.path is None:
            return Faults()
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Faults()
        if not isinstance(doc, dict):
            return Faults()
        hang = doc.get("hang_seconds", 0.0)
        free = doc.get("free_bytes")
        status = doc.get("status")
        return Faults(
            hang_seconds=min(float(hang), MAX_HANG_SECONDS)
            if isinstance(hang, int | float)
            else 0.0,
            io_error=doc.get("io_error") is True,
            free_bytes=int(free) if isinstance(free, int) and free >= 0 else None,
            status=status if isinstance(status, str) and status else None,
            close_connection=doc.get("close_connection") is True,
        )


class FaultyBookieInfoServer(BookieInfoServer):
    """The gRPC server, hanging or answering ``EIO`` as the faults file says."""

    def __init__(
        self, measure: Callable[[], BookieInfo], *, faults: FaultFile, **options: Any
    ) -> None:
        super().__init__(measure, **options)
        self.faults = faults

    def _respond(
        self, request: pb.GetBookieInfoRequest, context: grpc.ServicerContext
    ) -> pb.GetBookieInfoResponse:
        faults = self.faults.current()
        if faults.hang_seconds > 0:
            _hang(faults.hang_seconds, context)
        if faults.io_error:
            return pb.GetBookieInfoResponse(status=pb.EIO)
        return super()._respond(request, context)


def _hang(seconds: float, context: grpc.ServicerContext) -> None:
    """Sleep as a stuck node would; once the caller has given up, abort instead of answering
    (answering at the very deadline would race with the caller's own time-out)."""
    deadline = time.monotonic() + seconds
    while context.is_active() and time.monotonic() < deadline:
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            break
        time.sleep(0.05)
    remaining = context.time_remaining()
    if not context.is_active() or (remaining is not None and remaining <= 0):
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the caller's deadline passed")


class FaultyBookieRpcServer(BookieRpcServer):
    """The v3 server, closing, hanging, refusing or answering ``EIO`` as the faults file says."""

    def __init__(
        self, measure: Callable[[], BookieInfo], *, faults: FaultFile, **options: Any
    ) -> None:
        super().__init__(measure, **options)
        self.faults = faults

    async def _respond(self, request: v3.Request) -> v3.Response:
        faults = self.faults.current()
        if faults.close_connection:
            raise ConnectionAbortedError("test fault: close the connection unanswered")
        if faults.hang_seconds > 0:
            await asyncio.sleep(faults.hang_seconds)
        if faults.status is not None and faults.status in _STATUS_NAMES:
            return refusal(request, pb.StatusCode.Value(faults.status))
        if faults.io_error:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, respond, request, _broken_disk)
        return await super()._respond(request)


def _broken_disk() -> BookieInfo:
    raise OSError(5, "Input/output error (test fault)")


def install(faults: FaultFile) -> None:
    """Make every :class:`~trimtab.systems.bookkeeper.bookieinfo.agent.Agent` made from now on
    in this process honour ``faults``: its servers and its disk reading (``free_bytes``)."""
    servers = {
        "BookieInfoServer": functools.partial(FaultyBookieInfoServer, faults=faults),
        "BookieRpcServer": functools.partial(FaultyBookieRpcServer, faults=faults),
    }
    for name, server in servers.items():  # the names agent.py builds its servers by
        setattr(agent_module, name, server)
    measured = agent_module.Agent.usage

    def usage(self: agent_module.Agent) -> DiskUsage:
        found = measured(self)
        free = faults.current().free_bytes
        if free is None:
            return found
        total = found.total_bytes
        dirs = tuple(d for fs in found.filesystems for d in fs.directories)
        return DiskUsage((FilesystemUsage(0, dirs, total, min(free, total)),))

    setattr(agent_module.Agent, "usage", usage)  # noqa: B010 (a method, patched in place)


if __name__ == "__main__":
    from trimtab.cli import main

    install(FaultFile.from_env())
    main()
