"""A plain "why" for every transfer, beside upstream's label.

Why: upstream labels a move off the hottest broker ``Underloaded`` when it was the coolest
broker's low load that triggered it (TransferShedder's trigger names), which reads as the
opposite of what happens. Each transfer therefore also says, in plain words, where its source
and destination stood when its cycle began: "broker000 at 45 % is the most loaded; broker002
at 3 % the least". Loads are the plan's settled loads at the start of the cycle (the loads
before, for cycle 1), as fractions of capacity. The back half of a PIP-220 swap moves a bundle
from the cooler broker to the hotter one, which reads as a mistake unless it says it is a swap
(the balanced shedder's trade likewise).
"""

from __future__ import annotations

from collections.abc import Mapping

from trimtab.shedding.decisions import Decision, Move
from trimtab.shedding.plan import Plan

__all__ = ["plain_reasons"]


def plain_reasons(plan: Plan) -> list[str]:
    """One sentence per transfer of ``plan`` (in :attr:`Plan.transfers` order)."""
    starts = [plan.loads_before, *(s.loads for s in plan.settled)]
    out = []
    for cycle, result in enumerate(plan.results, start=1):
        loads = starts[min(cycle - 1, len(starts) - 1)]
        for decision in result.decisions:
            if decision.move is not None:
                out.append(_why(decision.move, loads, swap=_back_half(decision)))
    return out


def _back_half(decision: Decision) -> str | None:
    """The exchange's name ("swap" or "trade") when the move is the back half of one: a
    smaller bundle going from the cooler broker to the hotter one in exchange (PIP-220's swap;
    the balanced shedder's trade names the cooler broker in its note)."""
    move, note = decision.move, decision.note
    if move is None:
        return None
    if note == "swap":
        return "swap"
    if note.startswith("trade with ") and note.removeprefix("trade with ") == move.source:
        return "trade"
    return None


def _why(move: Move, loads: Mapping[str, float], *, swap: str | None) -> str:
    if swap and move.destination is not None:
        return (
            f"{swap}: {_at(move.source, loads)} takes a larger bundle from "
            f"{_at(move.destination, loads)} and gives this smaller one back"
        )
    source = _where(move.source, loads, high=True)
    if move.destination is None:
        return f"{source}; the next lookup places the bundle"
    return f"{source}; {_where(move.destination, loads, high=False)}"


def _at(broker: str, loads: Mapping[str, float]) -> str:
    load = loads.get(broker)
    return f"{broker} (no load data)" if load is None else f"{broker} at {load:.0%}"


def _where(broker: str, loads: Mapping[str, float], *, high: bool) -> str:
    load = loads.get(broker)
    if load is None or not loads:
        return f"{broker} (no load data)"
    values = list(loads.values())
    mean = sum(values) / len(values)
    at = f"{broker} at {load:.0%}"
    if high and load >= max(values):
        return f"{at} is the most loaded"
    if not high and load <= min(values):
        return f"{at} the least"
    side = "above" if load > mean else "below" if load < mean else "at"
    return f"{at} is {side} the mean {mean:.0%}"
