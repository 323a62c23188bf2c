"""Test-only fault injection for agents: make one hang, fail with EIO, or report a fuller disk.

Integration tests need agents that misbehave the way real nodes do, in a real process. An agent
started with the environment variable ``TRIMTAB_AGENT_FAULTS=/path/faults.json`` (or the hidden
``--faults FILE`` flag) re-reads that file on every request and every disk check, so a test can
change an agent's behaviour while it runs by rewriting the file. Keys, all optional:

* ``hang_seconds`` (number): sleep this long before answering, while the caller still waits
  (bounded: at most :data:`MAX_HANG_SECONDS`, and the sleep ends when the caller gives up);
* ``io_error`` (bool): answer ``EIO``, as a bookie whose disk check throws ``IOException``;
* ``free_bytes`` (int): report this much free space (and decide read-only on it) instead of
  the real figure, as if the disk had filled up;
* ``status`` (a StatusCode name such as ``"EUA"``): on the BookKeeper v3 port, answer every
  request with only this status, as a bookie that wants authentication answers ``EUA``;
* ``close_connection`` (bool): on the v3 port, close the connection on each request unanswered.

A missing or unreadable file means no faults. Never set this in production.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV_VAR", "MAX_HANG_SECONDS", "FaultFile", "Faults"]

ENV_VAR = "TRIMTAB_AGENT_FAULTS"
MAX_HANG_SECONDS = 60.0


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
