"""Pick bundles whose total comes closest to a target: a bounded (0/1) subset-sum.

Goals
    Move as close as possible to the planned amount, instead of stopping at the first bundle
    that would overshoot (the TransferShedder's greedy walk can stop far short of it).

Constraints
    * Each bundle at most once; the total must lie in (0, 2·target): equalising a pair is a
      concave gain symmetric around the target, so anything at 2·target or above gains nothing.
    * Among equally close totals, fewer bundles win (fewer moves), then the earlier bundles.

Algorithm
    Up to :data:`EXACT_LIMIT` items: enumerate every subset with a bit matrix (2^12 × 12 at
    most, one matrix product). Beyond that: dynamic programming over the totals rounded to
    ``2·target / bins`` (a reachability table per item, then a walk back), exact to one bin.

Example: sizes [1, 2, 4, 7], target 6 → {2, 4} (6 exactly); the greedy smallest-first walk
would stop at 1 + 2 = 3 because 1 + 2 + 4 = 7 overshoots.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["EXACT_LIMIT", "closest_subset"]

EXACT_LIMIT = 12


def closest_subset(sizes: NDArray[np.float64], target: float, *, bins: int = 1024) -> list[int]:
    """Indices into ``sizes`` whose sum is closest to ``target`` (empty if none helps)."""
    n = len(sizes)
    if n == 0 or target <= 0:
        return []
    if n <= EXACT_LIMIT:
        return _exact(sizes, target)
    return _binned(sizes, target, bins)


def _subsets(n: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Every non-empty subset of n items as 0/1 rows, with its size (a constant per n)."""
    masks = ((np.arange(1, 1 << n)[:, None] >> np.arange(n)) & 1).astype(np.float64)
    return masks, masks.sum(axis=1).astype(np.int64)


_SUBSETS = tuple(_subsets(n) for n in range(EXACT_LIMIT + 1))  # read-only lookup tables


def _exact(sizes: NDArray[np.float64], target: float) -> list[int]:
    masks, counts = _SUBSETS[len(sizes)]
    totals = masks @ sizes
    miss = np.abs(totals - target)
    useful = (totals > 0) & (totals < 2 * target)
    if not useful.any():
        return []
    miss = np.where(useful, miss, np.inf)
    closest = np.flatnonzero(miss == miss.min())
    best = int(closest[np.argmin(counts[closest])])  # fewest bundles, then the first subset
    return [int(i) for i in np.flatnonzero(masks[best])]


def _binned(sizes: NDArray[np.float64], target: float, bins: int) -> list[int]:
    step = 2.0 * target / bins
    weights = np.rint(sizes / step).astype(np.int64)
    usable = [i for i in range(len(sizes)) if 0 < weights[i] < bins and sizes[i] < 2 * target]
    if not usable:
        return []
    reach = np.zeros((len(usable) + 1, bins), dtype=bool)
    reach[0, 0] = True
    for row, i in enumerate(usable):
        w = int(weights[i])
        reach[row + 1] = reach[row]
        reach[row + 1, w:] |= reach[row, : bins - w]
    final = reach[-1].copy()
    final[0] = False
    if not final.any():
        return []
    cells = np.flatnonzero(final)
    total = int(cells[np.argmin(np.abs(cells - bins // 2))])
    chosen: list[int] = []
    for row in range(len(usable), 0, -1):
        if not reach[row - 1, total]:
            i = usable[row - 1]
            chosen.append(i)
            total -= int(weights[i])
    return sorted(chosen)
