"""The allocation scores of :mod:`trimtab.allocation.replica_constraints` for every node at once.

The planner scores all N nodes for each replica it moves; one NumPy expression per level
costs about as much as a handful of scalar calls. Each function gives, node by node, exactly
what its scalar original gives (integer arithmetic where the original uses it, the same
float operations where it does not): ``tests/allocation/test_planner.py`` checks that on
random inputs, so the spec stays the scalar code.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from trimtab.allocation.replica_constraints import TOPIC_FILL
from trimtab.constraints import MAX_SCORE

__all__ = ["capacity_scores", "disk_fit", "disk_scores", "rack_scores", "topic_scores"]

Ints = NDArray[np.int64]


def topic_scores(
    topic_count: Ints, capacity: Ints, topic_replicas: int, total_capacity: int
) -> Ints:
    """:func:`~trimtab.allocation.replica_constraints.topic_score` of every node."""
    if total_capacity <= 0:
        return np.zeros_like(capacity)
    share = topic_replicas * capacity
    low = share // total_capacity
    high = -(-share // total_capacity)
    final = topic_count + 1
    band = MAX_SCORE - TOPIC_FILL
    beyond = band - (final - high) * MAX_SCORE // np.maximum(capacity, 1)
    below = MAX_SCORE - final * TOPIC_FILL // (low + 1)
    out = np.where(final <= low, below, np.where(final <= high, band, beyond))
    return np.where(capacity > 0, np.maximum(out, 0), 0)


def capacity_scores(count: Ints, capacity: Ints) -> Ints:
    """:func:`~trimtab.allocation.replica_constraints.capacity_score` of every node."""
    final = np.minimum(capacity, count + 1)
    out = MAX_SCORE * (capacity - final) // np.maximum(capacity, 1)
    return np.where(capacity > 0, out, 0)


def disk_scores(used: Ints, total: Ints, ratio: float) -> Ints:
    """:func:`~trimtab.allocation.replica_constraints.disk_score` of every node."""
    if ratio <= 0:
        return np.zeros_like(total)
    filled = used / np.maximum(total, 1)
    out = (MAX_SCORE * ((ratio - filled) / ratio)).astype(np.int64)
    return np.where((total > 0) & (filled <= ratio), out, 0)


def disk_fit(used: Ints, total: Ints, ratio: float) -> NDArray[np.bool_]:
    """:func:`~trimtab.allocation.replica_constraints.disk_fits` of every node."""
    return (total <= 0) | (used < ratio * total)


def rack_scores(rack_ids: Ints, chosen_racks: Ints, racks: int) -> Ints:
    """:func:`~trimtab.constraints.distinct_racks_preferred` of every node, given the rack ids
    of the replicas chosen so far: ``MAX/(replicas in the node's rack + 1)``."""
    per_rack = np.bincount(chosen_racks, minlength=racks)
    return MAX_SCORE // (per_rack[rack_ids] + 1)
