"""Net moves: what a multi-cycle plan really asks of the cluster.

Why: a plan run over many cycles may move one bundle more than once: broker-1 → broker-2 in
cycle 2 and back in cycle 33 (a round trip), or on to a third broker. Unloading it twice
costs two ownership changes and two client reconnects for a result one unload (or none)
gives. The commands, the exports and the plan document therefore carry only net moves: the
consecutive moves of one bundle composed into one (A→B→A is no move; A→B→C is A→C).

A move whose destination was left to the next lookup (``None``) is composed with what the
plan did next: its later source names where the lookup put it. A net move keeps the cycle
of the bundle's first move (so the cooldown between cycles still spaces the unloads of one
broker), the throughput of its first move and the reason of its last.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from trimtab.shedding.decisions import Move, Reason

__all__ = ["net_transfers"]


def net_transfers(
    transfers: Iterable[tuple[int, Move, Reason]],
) -> list[tuple[int, Move, Reason]]:
    """The net move of every bundle that ends somewhere new, in the order of first moves."""
    first: dict[str, tuple[int, Move]] = {}
    last: dict[str, tuple[Move, Reason]] = {}
    for cycle, move, reason in transfers:
        first.setdefault(move.bundle, (cycle, move))
        last[move.bundle] = (move, reason)
    out = []
    for bundle, (cycle, start) in first.items():
        end, reason = last[bundle]
        if end.destination is not None and end.destination == start.source:
            continue  # a round trip: the bundle is back where it started
        out.append((cycle, replace(start, destination=end.destination), reason))
    return out
