"""Each node's target replica count: its capacity share, as far as the racks let it be reached.

Goals
    Balance is measured and aimed at against a share every node can actually reach. With
    racks of unequal capacity and a rule that a rack holds at most one replica of each
    partition, the capacity share of a big rack is out of reach: with racks of 4, 2 and 1
    equal brokers and RF 3 on 3 racks, each rack holds exactly one replica of every
    partition, so the lonely broker holds all of them. Measured against capacity, that
    assignment reads as a balance of 1.36, as if 36 % could be gained (issue 40,
    KAFKA-19507's case); measured against the reachable share it is 1.0, which it is.

Constraints
    A node holds at most one replica of each partition (distinct nodes, always). With rack
    awareness a rack holds at most ``⌈RF/R⌉`` replicas of a partition of RF replicas, R the
    racks with an active node: one when RF ≤ R.

Algorithm (water-filling, twice)
    1. Racks: the replicas are shared among the racks in proportion to their active
       capacity; a rack whose share exceeds its cap (Σ over partitions of ``⌈RF/R⌉``) gets
       its cap, and the rest is shared again among the others, in proportion, until no share
       exceeds its cap.
    2. Nodes: each rack's share is shared among its active nodes the same way, a node's cap
       being the partition count.
    Without rack awareness step 1 is one rack holding everything. Where no cap binds, the
    result is the capacity share ``total·capᵢ/Σcap`` exactly.

Worked example: 7 equal brokers in racks of 4, 2 and 1; 700 RF3 partitions (2,100 replicas).
Capacity shares of the racks 1,200, 600 and 300; the first is capped at 700, the 1,400 left go
2:1 to the others (933, 467), the second is capped at 700 and the last gets 700. Per node:
175 in the big rack, 350 in the middle one, 700 for the lonely broker. With racks of 2, 2, 2
and 1 no cap binds: 300 each.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from trimtab.allocation.model import balance
from trimtab.allocation.state import AllocationState

__all__ = ["pinned_shares", "target_balance", "target_shares", "topic_spread", "water_fill"]

_EPS = 1e-9


def water_fill(total: float, weights: Sequence[float], caps: Sequence[float]) -> list[float]:
    """``total`` shared in proportion to ``weights``, no share above its cap (the part above
    a cap goes to the others, in proportion); shares sum to ``min(total, Σ caps)``.

    >>> water_fill(2100, [4, 2, 1], [700, 700, 700])
    [700.0, 700.0, 700.0]
    >>> [round(x, 3) for x in water_fill(1500, [4, 2, 1], [700, 700, 700])]
    [700.0, 533.333, 266.667]
    """
    out = [0.0] * len(weights)
    free = [i for i, w in enumerate(weights) if w > 0]
    left = float(total)
    while free and left > _EPS:
        whole = sum(weights[i] for i in free)
        over = [i for i in free if left * weights[i] / whole > caps[i] + _EPS]
        if not over:
            for i in free:
                out[i] = left * weights[i] / whole
            break
        for i in over:
            out[i] = float(caps[i])
            left -= caps[i]
        free = [i for i in free if i not in set(over)]
    return out


def target_shares(
    state: AllocationState,
    *,
    rack_aware: bool,
    total: int | None = None,
    excluded: Collection[int] = (),
    rack_held: Mapping[int, float] | None = None,
) -> list[float]:
    """Each node's target count of ``total`` replicas (default: those on active nodes), by
    the module's water-filling; 0 for inactive and ``excluded`` nodes (indices).
    ``rack_held`` (rack id → replicas) are held in a rack by nodes left out of the shares
    (a full disk keeps its replicas): each takes its partition's slot in that rack, so the
    rack's cap for the others is that much lower."""
    live = [
        i
        for i in range(len(state))
        if state.active[i] and state.capacity[i] > 0 and i not in excluded
    ]
    if total is None:
        total = sum(state.counts[i] for i in live)
    if not live:
        return [0.0] * len(state)
    widths = state.widths()
    by_rack: dict[int, list[int]] = {}
    for i in live:
        by_rack.setdefault(state.rack_ids[i], []).append(i)
    racks = sorted(by_rack) if rack_aware else [-1]
    members = by_rack if rack_aware else {-1: live}
    per_rack_cap = sum(-(-w // len(racks)) for w in widths) if rack_aware else float(total)
    rack_totals = water_fill(
        total,
        [sum(state.capacity[i] for i in members[r]) for r in racks],
        [max(0.0, per_rack_cap - (rack_held or {}).get(r, 0.0)) for r in racks],
    )
    out = [0.0] * len(state)
    for r, share in zip(racks, rack_totals, strict=True):
        nodes = members[r]
        filled = water_fill(share, [state.capacity[i] for i in nodes], [len(widths)] * len(nodes))
        for i, x in zip(nodes, filled, strict=True):
            out[i] = x
    return out


def pinned_shares(
    state: AllocationState, *, rack_aware: bool, pinned: Collection[int], total: int
) -> list[float]:
    """The shares of ``total`` replicas among the nodes not ``pinned`` (full disks, which
    take none), the pinned nodes' replicas keeping their slots in their racks."""
    held: dict[int, float] = {}
    for i in pinned:
        held[state.rack_ids[i]] = held.get(state.rack_ids[i], 0.0) + state.counts[i]
    return target_shares(state, rack_aware=rack_aware, total=total, excluded=pinned, rack_held=held)


def target_balance(
    state: AllocationState, *, rack_aware: bool, pinned: Collection[int] = ()
) -> float:
    """The balance figure N·Σx²/(Σx)² with x = count/target over active nodes: 1.0 when every
    node holds its reachable share (:func:`target_shares`); the capacity-relative figure of
    :meth:`AllocationState.balance` where no cap binds. ``pinned`` nodes (full disks, which
    take no replica) are left out, and the others' shares are of what they hold, the pinned
    nodes' replicas keeping their rack slots: the planner's own aim."""
    live = [
        i
        for i in range(len(state))
        if state.active[i] and state.capacity[i] > 0 and i not in pinned
    ]
    if pinned:
        total = sum(state.counts[i] for i in live)
        shares = pinned_shares(state, rack_aware=rack_aware, pinned=pinned, total=total)
    else:
        shares = target_shares(state, rack_aware=rack_aware)
    if not any(shares[i] > 0 for i in live):
        return state.balance()
    return balance([state.counts[i] for i in live], [shares[i] for i in live])


def topic_spread(state: AllocationState) -> int:
    """Replicas above their node's topic band: Σ over topics and active nodes of
    ``max(0, countᵢ − ⌈T·capᵢ/Σcap⌉)``, T the topic's replicas (the band of the topic level,
    :func:`~trimtab.allocation.replica_constraints.topic_score`). 0 when every topic is
    spread in proportion to capacity, within one replica per node."""
    whole, capacity, active = state.active_capacity, state.capacity, state.active
    if whole <= 0:
        return 0
    out = 0
    for held in state.topic_counts.values():
        replicas = sum(held.values())
        for i, count in held.items():
            if active[i]:
                out += max(0, count - -(-replicas * capacity[i] // whole))
    return out
