"""How a region-aware ensemble is split across regions, and in which order the slots go.

Goals
    Equal shares (15 members over 3 regions: 5 each), capped by what each region can give,
    and write quorums that mix regions instead of sitting inside one region's block.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

__all__ = ["interleave", "plan_slots", "region_shares"]


def region_shares(size: int, order: Sequence[str], capacity: dict[str, int]) -> dict[str, int]:
    """Split ``size`` slots over regions in ``order``, as evenly as ``capacity`` allows.

    Each round gives region i of the n still open ``ceil(remaining / (n - i))``, capped by its
    free nodes; a capped region closes. Earlier regions get the rounding extra.

    >>> region_shares(7, ["a", "b", "c"], {"a": 9, "b": 9, "c": 9})
    {'a': 3, 'b': 2, 'c': 2}
    >>> region_shares(6, ["a", "b", "c"], {"a": 9, "b": 1, "c": 9})
    {'a': 2, 'b': 1, 'c': 3}
    """
    shares = dict.fromkeys(order, 0)
    remaining = size
    active = [r for r in order if capacity.get(r, 0) > 0]
    while remaining > 0 and active:  # each round fills `size` or closes a region: bounded
        still = []
        for i, region in enumerate(active):
            add = min(-(-remaining // (len(active) - i)), capacity[region] - shares[region])
            shares[region] += add
            remaining -= add
            if shares[region] < capacity[region]:
                still.append(region)
        active = still
    return shares


def interleave(shares: dict[str, int]) -> list[str]:
    """One region per slot, each region's slots spread evenly over the ensemble.

    Slot k of a region with n slots sits at (k + 0.5) / n; ties go to the earlier region.

    >>> interleave({"a": 2, "b": 1, "c": 3})
    ['c', 'a', 'b', 'c', 'a', 'c']
    """
    order = {region: i for i, region in enumerate(shares)}
    slots = [((k + 0.5) / n, order[r], r) for r, n in shares.items() for k in range(n)]
    return [r for *_, r in sorted(slots)]


@lru_cache(maxsize=1024)
def plan_slots(size: int, order: tuple[str, ...], capacity: tuple[int, ...]) -> tuple[str, ...]:
    """The region of every slot: :func:`region_shares` then :func:`interleave`, memoised (the
    same few orders and capacities come back call after call).

    >>> plan_slots(4, ("a", "b"), (9, 9))
    ('a', 'b', 'a', 'b')
    """
    return tuple(interleave(region_shares(size, order, dict(zip(order, capacity, strict=True)))))
