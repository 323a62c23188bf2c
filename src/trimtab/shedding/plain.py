"""A plain "why" for every transfer, beside upstream's label.

Why: upstream labels a move off the hottest broker ``Underloaded`` when it was the coolest
broker's low load that triggered it (TransferShedder's trigger names), which reads as the
opposite of what happens. Each transfer therefore also says, in plain words, where its source
and destination stood when its cycle began: "broker000 at 45 % is the most loaded; broker002
at 3 % the least". Loads are the plan's settled loads at the start of the cycle (the loads
before, for cycle 1), as fractions of capacity.
"""

from __future__ import annotations

from collections.abc import Mapping

from trimtab.shedding.plan import Plan

__all__ = ["plain_reasons"]


def plain_reasons(plan: Plan) -> list[str]:
    """One sentence per transfer of ``plan`` (in :attr:`Plan.transfers` order)."""
    starts = [plan.loads_before, *(s.loads for s in plan.settled)]
    out = []
    for cycle, move, _ in plan.transfers:
        loads = starts[min(cycle - 1, len(starts) - 1)]
        source = _where(move.source, loads, high=True)
        if move.destination is None:
            out.append(f"{source}; the next lookup places the bundle")
        else:
            out.append(f"{source}; {_where(move.destination, loads, high=False)}")
    return out


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
