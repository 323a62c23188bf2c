"""One place every step of a run goes through: the journal first, then whoever watches.

The runner calls :meth:`Recorder.record` for a transition (journaled, ``fsync``'d, then told
to the listeners: the ``--json`` event stream, the statistics behind the progress bar and the
metrics) and :meth:`Recorder.tell` for what needs no journal (progress readings, waits).
Events on stdout (``--json``) are the records themselves, with ``"event"`` for ``"record"``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from trimtab.config.secrets import scrub
from trimtab.execute.journal import Journal

__all__ = ["JsonEvents", "Listener", "Recorder"]

Listener = Callable[[Mapping[str, Any]], None]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Recorder:
    """Journal plus listeners; a dry run or an ``--abort`` without journal passes None."""

    def __init__(self, journal: Journal | None, listeners: Sequence[Listener] = ()) -> None:
        self.journal = journal
        self.listeners = list(listeners)

    def record(self, *records: Mapping[str, Any]) -> None:
        """Journal ``records`` (durably), then tell the listeners."""
        at = _now()
        stamped = [{"record": r["record"], "at": at} | dict(r) for r in records]
        if self.journal is not None and stamped:
            self.journal.append(*stamped)
        self.tell(*stamped)

    def tell(self, *records: Mapping[str, Any]) -> None:
        """Tell the listeners only (not journaled)."""
        for rec in records:
            stamped = rec if "at" in rec else {"record": rec["record"], "at": _now()} | dict(rec)
            for listener in self.listeners:
                listener(stamped)


class JsonEvents:
    """``--json``: each record as one JSON line on ``stream`` (``"event"`` names its kind)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, rec: Mapping[str, Any]) -> None:
        body = {"event": rec["record"]} | {k: v for k, v in rec.items() if k != "record"}
        if isinstance(body.get("reason"), str):
            body["reason"] = scrub(body["reason"])
        self.stream.write(json.dumps(body, separators=(",", ":"), default=str) + "\n")
        self.stream.flush()
