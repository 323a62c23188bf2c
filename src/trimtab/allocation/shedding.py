"""How few moves a shedding node needs beyond the rack repairs its moves can do too.

Goals
    One move that does two jobs, counted in the lower bound
    (:mod:`trimtab.allocation.lower_bound`, its third form). A node over its disk limit (or
    over its count share) must send at least ``k`` replicas carrying at least ``need`` bytes.
    Some of its replicas belong to partitions in rack violation and sit in the rack they
    crowd: sending such a replica to a new rack relieves the node *and* repairs the rack
    (the planner's full-disk step sends those first), where any other choice leaves the
    repair its own move elsewhere. On bench/peers down60 the bound without this took three
    such repairs as free (issue 40).

Constraints
    The choice must still reach ``need`` bytes; a small repairing replica instead of a large
    plain one may need one move more, which pays only when it saves a repair.

Algorithm
    Sending m replicas, j of them repairing, costs ``m − j`` moves beyond the repairs any plan
    makes anyway. For a given m the most bytes with j repairing replicas come from the j
    largest repairing and the m − j largest others (prefix sums); the best j for m is the
    largest one reaching ``need``. :func:`fewest_extra` returns the (m, j) of least ``m − j``
    over m ≥ ``least`` (fewest moves on ties). ``m − j`` is not monotone in m (three
    repairing replicas of 3 bytes against one plain one of 10, need 9: m = 1 costs 1, m = 3
    costs 0), so the scan goes on until ``m − (repairing replicas)`` can no longer win.

Worked example: need 96, the node's largest 79 replicas reach it with 0.49 to spare and the
7 repairing ones weigh 1.66, 1.13, 0.95, 0.94, 0.57, 0.44 and 0.40: the 6 largest of them
with the 73 largest others still reach 96 (the 7th does not), so (m, j) = (79, 6): 73
moves beyond the repairs (sending all 7 and 73 others, as the planner does, costs the same).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

__all__ = ["fewest_extra"]

_EPS = 1e-9


def fewest_extra(
    repairing: Sequence[int], others: Sequence[int], least: int, need: float
) -> tuple[int, int] | None:
    """(m, j): send m replicas, the j largest ``repairing`` among them, the m − j largest
    ``others`` with them, m ≥ ``least`` and their bytes ≥ ``need``, with ``m − j`` least
    (then m least); None when no choice reaches ``need``. Both lists largest first."""
    fix = list(itertools.accumulate(repairing, initial=0))
    plain = list(itertools.accumulate(others, initial=0))
    nf, no = len(repairing), len(others)
    best: tuple[int, int] | None = None
    for m in range(max(least, 0), nf + no + 1):
        if best is not None and m - nf >= best[0] - best[1]:
            break  # no j can beat it from here on
        for j in range(min(m, nf), max(0, m - no) - 1, -1):
            if fix[j] + plain[m - j] >= need - _EPS:
                if best is None or m - j < best[0] - best[1]:
                    best = (m, j)
                break
    return best
