"""Back-off: reading the guards on every poll and deciding to slow down or stop.

A harm is one of: an item under-replicated that no move of this run explains (Kafka), a
node's load above ``--max-load`` in its latest report (Pulsar), a node that left the cluster,
or a move of this run whose progress has not changed for ``--stall-timeout`` seconds. When
the number of harms grows (or a harm persists a further ``--stall-timeout``), the run backs
off once: the throttle halves and no new batch starts while any harm lasts. ``--abort-on N``
lets N back-offs happen; the next one stops the run as ``--abort`` does (in-flight moves
cancelled, throttles removed). ``--abort-on 0`` stops at the first harm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trimtab.plans.target import Guards, Progress

__all__ = ["BackOff", "GuardLimits", "Verdict"]


@dataclass(frozen=True, slots=True)
class GuardLimits:
    """What counts as harm, and how many back-offs a run takes before it stops."""

    max_load: float | None = None
    stall_timeout_s: float = 900.0
    abort_on: int = 3


@dataclass(frozen=True, slots=True)
class Verdict:
    """One reading: the harms now; back off now; stop now."""

    harms: tuple[str, ...] = ()
    back_off: bool = False
    abort: bool = False


@dataclass(slots=True)
class BackOff:
    """The back-off state of one run (harm level, stalls, back-offs taken)."""

    limits: GuardLimits
    back_offs: int = 0
    _level: int = 0
    _since: float = 0.0
    _last_bytes: dict[str, tuple[int, float]] = field(default_factory=dict)

    def harms(
        self,
        guards: Guards,
        progress: Mapping[str, Progress],
        moving_items: Sequence[str],
        now: float,
    ) -> list[str]:
        """Each harm as a sentence (see the module docstring)."""
        moving = set(moving_items)
        out = [
            f"{item} is under-replicated" for item in guards.under_replicated if item not in moving
        ]
        if self.limits.max_load is not None:
            out += [
                f"{node} load {load:g} is above --max-load {self.limits.max_load:g}"
                for node, load in sorted(guards.loads.items())
                if load > self.limits.max_load
            ]
        out += [f"{node} left the cluster" for node in guards.missing_nodes]
        out += self._stalls(progress, now)
        return out

    def _stalls(self, progress: Mapping[str, Progress], now: float) -> list[str]:
        stalled = []
        for aid, p in progress.items():
            seen = self._last_bytes.get(aid)
            if seen is None or seen[0] != p.bytes_done:
                self._last_bytes[aid] = (p.bytes_done, now)
            elif now - seen[1] >= self.limits.stall_timeout_s:
                stalled.append(f"action {aid} made no progress for {now - seen[1]:.0f}s")
        for aid in list(self._last_bytes):
            if aid not in progress:
                del self._last_bytes[aid]
        return stalled

    def check(
        self,
        guards: Guards,
        progress: Mapping[str, Progress],
        moving_items: Sequence[str],
        now: float,
    ) -> Verdict:
        """Read the guards: back off when harm grows or lasts another stall time-out."""
        harms = self.harms(guards, progress, moving_items, now)
        level = len(harms)
        worse = level > self._level
        lasting = level > 0 and now - self._since >= self.limits.stall_timeout_s
        if level == 0 or worse:
            self._since = now
        self._level = level
        if not (worse or lasting):
            return Verdict(tuple(harms))
        self._since = now
        if self.back_offs >= self.limits.abort_on:
            return Verdict(tuple(harms), back_off=False, abort=True)
        self.back_offs += 1
        return Verdict(tuple(harms), back_off=True)
