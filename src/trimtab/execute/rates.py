"""The numbers an operator types for a run: a throttle rate and a time window.

Rates are bytes per second, written as Kafka's tools take them (``--throttle 50000000``) or
with a unit: ``50MB/s``, ``50MiB/s``, ``1.5GB/s``, ``800KB`` (the ``/s`` is optional). Decimal
units are powers of 1000, binary ones (``KiB``, ``MiB``, ``GiB``) of 1024. A window
``HH:MM-HH:MM`` is local time; one that ends before it starts runs over midnight
(``22:00-06:00``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from trimtab.errors import TrimtabError

__all__ = ["MAX_RATE", "Window", "format_rate", "parse_rate", "parse_window"]

MAX_RATE = 10**12  # 1 TB/s: more is a typo, not a network
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmg]i?b|b)?\s*(?:/\s*s)?\s*", re.I)
_WINDOW = re.compile(r"\s*([0-9]{1,2}):([0-9]{2})\s*-\s*([0-9]{1,2}):([0-9]{2})\s*")


def parse_rate(option: str, text: str) -> int:
    """``text`` as whole bytes per second, at least 1; anything else is one error naming
    ``option``."""
    match = _RATE.fullmatch(text)
    if match is None:
        raise TrimtabError(
            f"{option} {text!r}: give bytes per second, e.g. 50000000, 50MB/s or 64MiB/s"
        )
    number, unit = match.groups()
    rate = int(float(number) * _UNITS[(unit or "").lower()])
    if not 1 <= rate <= MAX_RATE:
        raise TrimtabError(f"{option} {text!r}: give a rate from 1 B/s to 1TB/s")
    return rate


def format_rate(rate: int | None) -> str:
    """A rate for people: ``50.0 MB/s``; ``unthrottled`` for None."""
    if rate is None:
        return "unthrottled"
    value = float(rate)
    for unit in ("B/s", "KB/s", "MB/s", "GB/s"):
        if value < 1000 or unit == "GB/s":
            return f"{value:.0f} {unit}" if unit == "B/s" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class Window:
    """Minutes after local midnight when new batches may start: ``start`` inclusive, ``end``
    exclusive; ``start > end`` wraps over midnight."""

    start: int
    end: int

    def contains(self, now: datetime) -> bool:
        minute = now.hour * 60 + now.minute
        if self.start <= self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end

    def seconds_until_open(self, now: datetime) -> float:
        """0 inside the window, else the seconds until it next opens."""
        if self.contains(now):
            return 0.0
        opens = now.replace(hour=self.start // 60, minute=self.start % 60, second=0, microsecond=0)
        if opens <= now:
            opens += timedelta(days=1)
        return (opens - now).total_seconds()

    def __str__(self) -> str:
        return (
            f"{self.start // 60:02d}:{self.start % 60:02d}-{self.end // 60:02d}:{self.end % 60:02d}"
        )


def parse_window(option: str, text: str) -> Window:
    """``HH:MM-HH:MM`` (local time) as a :class:`Window`; an empty window is refused."""
    match = _WINDOW.fullmatch(text)
    bad = TrimtabError(f"{option} {text!r}: give local times HH:MM-HH:MM, e.g. 22:00-06:00")
    if match is None:
        raise bad
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        raise bad
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if start == end:
        raise TrimtabError(
            f"{option} {text!r}: the window is empty; its end must differ from its start"
        )
    return Window(start, end)
