"""One cycle of the live loop as the JSON line ``trimtab shed --follow --json`` prints.

A line says what the follower saw (the brokers registered, those that joined, left or went
stale), what the shedder decided, each transfer with the ``pulsar-admin`` command and the
REST call that make it (:mod:`trimtab.systems.pulsar.admin`), the shedder's clocks (hit count,
cooldowns, grace periods) and the reports refused. The CLI prints it, and the live loop's
benchmark (``bench/shed_follow.py``) writes the same line, so the latency it measures is the
one an operator's pipe sees.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from trimtab._format import rejected_json
from trimtab.config import Config
from trimtab.shedding.decisions import Move, ShedderState
from trimtab.shedding.gates import usable_brokers
from trimtab.systems.pulsar.admin import unload_command, unload_rest
from trimtab.systems.pulsar.follow import Follower, Tick

__all__ = ["tick_json"]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def tick_json(tick: Tick, follower: Follower, cfg: Config) -> dict[str, Any]:
    """One cycle as the JSON line ``--follow --json`` prints."""
    result, built = tick.result, tick.built
    usable = usable_brokers(built.snapshot, tick.now, cfg.shedding) if built else None
    outcome = result.outcome
    return {
        "cycle": tick.number,
        "now": _iso(tick.now),
        "strategy": follower.shedder.name,
        "cluster": follower.cluster,
        "registry": "ok" if built is not None else "unreadable",
        "brokers": sorted(built.snapshot.available or ()) if built else [],
        "joined": list(tick.joined),
        "left": list(tick.left),
        "stale": list(usable.stale) if usable else [],
        "missing": list(usable.missing) if usable else [],
        "outcome": {
            "label": str(outcome.label),
            "reason": str(outcome.reason),
            "note": outcome.note,
        },
        "decisions": [
            {
                "label": str(d.label),
                "reason": str(d.reason),
                "broker": d.broker,
                "bundle": d.move.bundle if d.move else None,
                "note": d.note,
            }
            for d in result.decisions
        ],
        "transfers": [_transfer(d.move, str(d.reason)) for d in result.decisions if d.move],
        "timers": _timers(result.state, tick.now, cfg),
        "avg": _finite(result.avg),
        "std": _finite(result.std),
        "rejected": [rejected_json(r) for r in tick.rejected],
    }


def _transfer(move: Move, reason: str) -> dict[str, Any]:
    return {
        "bundle": move.bundle,
        "source": move.source,
        "destination": move.destination,
        "throughput": move.throughput,
        "reason": reason,
        "command": unload_command(move),
        "rest": unload_rest(move),
    }


def _timers(state: ShedderState, now: float, cfg: Config) -> dict[str, Any]:
    """The shedder's clocks: the hit count against its threshold, each broker's cooldown
    (a report is awaited this long after its unload) and each bundle's grace period left."""
    s = cfg.shedding
    grace = s.grace_period_minutes * 60.0
    return {
        "hit_count": state.hit_count,
        "hit_count_threshold": s.hit_count_threshold,
        "cooldown_s": {
            b: max(0.0, t + s.shedding_delay_seconds - now)
            for b, t in sorted(state.recently_unloaded_brokers.items())
        },
        "grace_s": {
            b: max(0.0, t + grace - now) for b, t in sorted(state.recently_unloaded_bundles.items())
        },
    }
