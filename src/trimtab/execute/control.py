"""Changing a run while it runs: the control file, SIGHUP, and stop requests.

The control file (default ``PLAN.control`` beside the journal; its path is printed and
journaled) holds one line: a rate (``40MB/s``, ``40000000``) sets the throttle from the next
poll on, ``abort`` stops the run as ``--abort`` does. The runner notices a change of the file
(its content) on each poll. SIGHUP re-reads ``--throttle-file`` (or, without one, the control
file) at once. SIGINT and SIGTERM ask the run to stop after the current poll: throttles are
removed, moves in flight go on, ``--resume`` continues and ``--abort`` cancels them.

A rate above ``--max-throttle`` is lowered to it with a warning; unreadable text is a warning
and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trimtab.errors import TrimtabError
from trimtab.execute.rates import format_rate, parse_rate

__all__ = ["Control", "Request"]


@dataclass(frozen=True, slots=True)
class Request:
    """What the operator asked: a new ``rate`` (bytes/s) or ``abort``."""

    rate: int | None = None
    abort: bool = False


class Control:
    """The run's inputs besides the plan: control file, throttle file, signals."""

    def __init__(
        self,
        *,
        control_file: Path | None,
        throttle_file: Path | None = None,
        max_rate: int | None = None,
    ) -> None:
        self.control_file = control_file
        self.throttle_file = throttle_file
        self.max_rate = max_rate
        self.stop: str | None = None  # why a signal asked the run to stop
        self.warnings: list[str] = []
        self._hangup = False
        self._seen: str | None = None

    def start(self, rate: int | None) -> None:
        """Write the control file with the starting rate (so it shows what is in force)."""
        if self.control_file is None:
            return
        text = f"{rate}\n" if rate else "unthrottled\n"
        try:
            self.control_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise TrimtabError(
                f"--control-file {self.control_file}: cannot write it: {exc.strerror or exc}"
            ) from None
        self._seen = text.strip()

    def cap(self, rate: int) -> int:
        """``rate`` lowered to ``--max-throttle`` (with a warning) if above it."""
        if self.max_rate is not None and rate > self.max_rate:
            self.warnings.append(
                f"throttle {format_rate(rate)} is above --max-throttle "
                f"{format_rate(self.max_rate)}: using {format_rate(self.max_rate)}"
            )
            return self.max_rate
        return rate

    def hangup(self) -> None:
        """SIGHUP: re-read the throttle file at the next poll."""
        self._hangup = True

    def interrupt(self, why: str) -> None:
        """SIGINT/SIGTERM: stop after the current poll."""
        self.stop = why

    def poll(self) -> Request | None:
        """A new request from the files, if any since the last poll."""
        if self._hangup and self.throttle_file is not None:
            self._hangup = False
            return self._read(self.throttle_file, "--throttle-file", force=True)
        force, self._hangup = self._hangup, False
        if self.control_file is None:
            return None
        return self._read(self.control_file, "control file", force=force)

    def _read(self, path: Path, what: str, *, force: bool) -> Request | None:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            if force:
                self.warnings.append(f"{what} {path}: cannot read it ({exc}); throttle unchanged")
            return None
        if text == self._seen and not force:
            return None
        self._seen = text
        if text.lower() == "abort":
            return Request(abort=True)
        if text.lower() == "unthrottled":
            return None
        try:
            return Request(rate=self.cap(parse_rate(what, text)))
        except TrimtabError as exc:
            self.warnings.append(f"{exc}; throttle unchanged")
            return None
