"""The run's append-only journal: what happened to each action, durably, in order.

Why: a run of hours must survive its own process. Every transition is one JSON line, written
and ``fsync``'d before the step it announces goes on (an action is journaled ``started``
before it is submitted), so after a SIGKILL :func:`read_journal` replays the file to the last
state and ``--resume`` neither repeats nor loses an action. The journal of one plan lives
beside it (``PLAN.journal.jsonl``); one executor at a time holds it (an exclusive
``fcntl.flock`` on ``JOURNAL.lock``).

Records (``"record"`` key; every record has ``"at"``, UTC ISO-8601)::

    run       plan, digest, approved, pid, mode        a run (or resume/abort) starts
    action    id, state, reason [, live]                planned|started|done|failed|cancelled
    batch     batch, edge (start|end), ids
    throttle  op (set|changed|cleared), throttle        ThrottleSet.as_json(): enough to undo
    throttle  op (setting|lost), rate, ids              before a set / a set a kill lost
    control   path                                      the control file of this run
    backoff   reason, rate                              a guard worsened: the throttle halved
    stop      reason, exit                              done|changed|failed|aborted|...

A crash in the middle of a write leaves a torn last line: it is ignored with a warning (its
step never went on) and cut off before the next append. No secret is ever written: reasons
pass through :func:`trimtab.config.secrets.scrub`.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from trimtab.config.secrets import scrub
from trimtab.errors import TrimtabError
from trimtab.plans.target import ThrottleSet

__all__ = [
    "ACTION_STATES",
    "Journal",
    "JournalLockedError",
    "JournalState",
    "default_journal",
    "read_journal",
]

ACTION_STATES = ("planned", "started", "done", "failed", "cancelled")


class JournalLockedError(TrimtabError):
    """Another executor holds the journal; ``pid`` is its process id as it wrote it."""

    def __init__(self, message: str, pid: str) -> None:
        super().__init__(message)
        self.pid = pid


def default_journal(plan: Path) -> Path:
    """``PLAN.journal.jsonl`` beside the plan (``plan.json`` gives ``plan.journal.jsonl``)."""
    return plan.with_name(f"{plan.stem}.journal.jsonl")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class JournalState:
    """A journal replayed: each action's last state, the throttles still set, how it ended."""

    digest: str | None = None
    plan: str | None = None
    approved: str | None = None
    states: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    causes: dict[str, str] = field(default_factory=dict)
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    throttles: list[ThrottleSet] = field(default_factory=list)
    setting: dict[str, Any] | None = None  # a throttle being set when the run was killed
    control: str | None = None
    stop: str | None = None
    runs: int = 0
    last_at: str | None = None
    warnings: list[str] = field(default_factory=list)

    def with_state(self, *states: str) -> list[str]:
        """The ids whose last state is one of ``states``, in journal order."""
        return [i for i, s in self.states.items() if s in states]

    def apply(self, rec: Mapping[str, Any]) -> None:
        """Fold one record into the state."""
        kind = rec.get("record")
        self.last_at = str(rec.get("at", self.last_at))
        if kind == "run":
            self.runs += 1
            self.digest = self.digest or str(rec.get("digest"))
            self.plan = self.plan or rec.get("plan")
            self.approved = rec.get("approved") or self.approved
            self.stop = None
        elif kind == "action":
            aid = str(rec["id"])
            self.states[aid] = str(rec["state"])
            self.reasons[aid] = str(rec.get("reason", ""))
            self.causes[aid] = str(rec.get("cause", ""))
            if rec.get("live") is not None:
                self.live[aid] = dict(rec["live"])
        elif kind == "throttle":
            op = rec.get("op")
            if op in ("setting", "lost"):
                self.setting = dict(rec) if op == "setting" else None
                return
            self.setting = None
            throttle = ThrottleSet.from_json(rec["throttle"])
            if op == "cleared":
                if throttle in self.throttles:
                    self.throttles.remove(throttle)
            else:
                self.throttles.append(throttle)
        elif kind == "control":
            self.control = str(rec["path"])
        elif kind == "stop":
            self.stop = str(rec.get("reason"))


def read_journal(path: Path, *, digest: str | None = None) -> JournalState:
    """Replay ``path``; a torn last line is ignored (a warning in ``warnings``), any other bad
    line or a journal of another plan (``digest``) is a :class:`TrimtabError`."""
    state = JournalState()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return state
    except (OSError, UnicodeDecodeError) as exc:
        raise TrimtabError(f"cannot read journal {path}: {exc}") from None
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or "record" not in rec:
                raise ValueError("not a record")
            state.apply(rec)
        except (ValueError, KeyError, TypeError):
            if number == len(lines):  # the last line, without its newline: a crash mid-write
                state.warnings.append(
                    f"journal {path}: its last line is incomplete (a crash while writing it); "
                    "ignored"
                )
                continue
            raise TrimtabError(
                f"journal {path} line {number} is not a journal record: the file is damaged; "
                "move it away and check the cluster by hand (trimtab execute without --approve)"
            ) from None
    if digest is not None and state.digest not in (None, digest):
        raise TrimtabError(
            f"journal {path} belongs to another plan (digest {str(state.digest)[:16]}…, this "
            f"plan {digest[:16]}…): give this plan's journal, or a new file with --journal"
        )
    return state


class Journal:
    """The journal open for appending, under its lock (one executor per journal)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = _take_lock(path)
        try:
            _cut_torn_tail(path)
            self._file: IO[str] = path.open("a", encoding="utf-8")
        except OSError as exc:
            self._release()
            raise TrimtabError(f"cannot write journal {path}: {exc.strerror or exc}") from None

    def append(self, *records: Mapping[str, Any]) -> None:
        """Write ``records`` (one line each) and ``fsync``: on return they survive a crash."""
        at = _now()
        text = "".join(_line(rec, at) for rec in records)
        self._file.write(text)
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        self._release()

    def _release(self) -> None:
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        os.close(self._lock)

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _line(rec: Mapping[str, Any], at: str) -> str:
    body = {"record": rec["record"], "at": rec.get("at", at)}
    body |= {k: v for k, v in rec.items() if k not in body}
    if "reason" in body and body["reason"] is not None:
        body["reason"] = scrub(str(body["reason"]))
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"


def _take_lock(path: Path) -> int:
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise TrimtabError(f"cannot write journal {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise JournalLockedError(
            f"another trimtab execute (pid {holder}) is running journal {path}: wait for it to "
            "end, or stop it (kill -TERM, or write 'abort' into its control file)",
            holder,
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _cut_torn_tail(path: Path) -> None:
    """Drop an incomplete last line (a crash mid-write) so the next record starts clean."""
    try:
        with path.open("rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    except FileNotFoundError:
        return
