"""The constraint allocator's hot path: nodes bucketed by their packed soft scores.

Goals
    The decisions of :func:`~trimtab.allocation.replica_constraints.default_constraints` — for every
    replica a node from the same best tie set (tested) — at a cost that does not grow with the
    node count in the common case. Evaluating every rule for every node is O(N) per replica.

Structure
    Every node that passes the hard rules other than "distinct nodes" (active, a free slot, not
    excluded, the disk not overflowed by a replica of the request's size) sits in one bucket
    keyed by its packed soft scores for the current request's topic and partition size::

        key = topic_score << 48 | capacity_score << 24 | disk_score      (each < 2**24)

    so comparing keys compares the levels in rank order. Keys are kept sorted. Placing or
    releasing a replica (a rollback too) re-keys that one node, through the state's watch.

Pick
    Walk the buckets from the best key down. Without racks, the first bucket holding a node
    the partition does not use yet holds the whole tie set. With racks, nodes of a rack the
    partition does not use yet outrank every other node, so the first bucket holding one of
    those does. One eligible node of the bucket is drawn uniformly: a few random draws, then a
    scan. If no node of an unused rack exists (replication factor above the rack count), all nodes
    are scored with the rack level in full: O(N), rare.

Costs: re-keying is O(log B) for B distinct keys. A request re-keys (twice) the nodes its topic
occupies and those whose share of it is at least one replica — at most T, the topic's replicas
— and all nodes when its partition size differs from the previous request's.
"""

from __future__ import annotations

import bisect
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from trimtab.allocation.replica_constraints import TOPIC_FILL, disk_score, topic_score
from trimtab.allocation.state import AllocationState
from trimtab.constraints import MAX_SCORE

__all__ = ["FastChooser"]

_DRAWS = 4  # random draws in a bucket before scanning it
#: The topic score of a node holding none of a topic whose share is below one.
_NEUTRAL = MAX_SCORE - TOPIC_FILL


class FastChooser:
    """Incremental best-node lookup for the default constraint rules."""

    def __init__(
        self,
        state: AllocationState,
        *,
        rng: random.Random,
        rack_aware: bool,
        topic_aware: bool,
        soft_disk_ratio: float,
        hard_disk_ratio: float,
    ) -> None:
        self._state = state
        self._rnd: Callable[[], float] = rng.random
        self._rack_aware = rack_aware
        self._topic_aware = topic_aware
        self._soft = soft_disk_ratio
        self._hard = hard_disk_ratio
        n = len(state)
        self._key = [-1] * n  # the node's bucket key, -1 when it is in no bucket
        self._pos = [0] * n  # its position in that bucket
        self._buckets: dict[int, list[int]] = {}
        self._keys: list[int] = []  # ascending
        self._request: list[Any] = [None, 0, 0]  # topic (None between requests), T, size
        self._by_capacity = sorted(range(n), key=lambda i: -state.capacity[i])
        # the state's columns, one attribute lookup closer
        self._cap, self._counts, self._active = state.capacity, state.counts, state.active
        self._used, self._assigned, self._total = (
            state.disk_used,
            state.assigned_bytes,
            state.disk_total,
        )
        self._topic_counts, self._whole = state.topic_counts, state.active_capacity
        self._disk_used = [-1] * n  # cache of the disk score for these used bytes
        self._disk_score = [0] * n
        self._banned: set[int] = set()
        self._rekey = self._make_rekey()
        #: A best node for the next replica of a partition whose replicas are on the nodes
        #: given (None when no node may take it).
        self.pick: Callable[[list[int]], int | None] = (
            self._pick_by_rack if rack_aware else self._pick_plain
        )
        for i in range(n):
            self._rekey(i)
        self._unwatch = state.watch(self._rekey)

    def close(self) -> None:
        self._unwatch()

    # -- request life cycle --------------------------------------------------------------------

    def begin(self, topic: str, size: int, banned: frozenset[int], topic_replicas: int) -> None:
        """Score for ``topic`` (``topic_replicas`` once placed) and replicas of ``size`` bytes;
        keep ``banned`` nodes out of the buckets."""
        resize = size != self._request[2]
        self._request[:] = [topic, topic_replicas, size]
        self._banned.clear()
        self._banned.update(banned)
        for i in range(len(self._key)) if resize else self._touched():
            self._rekey(i)

    def end(self) -> None:
        """Back to topic-neutral keys, with every usable node in a bucket."""
        touched = self._touched()
        self._request[0] = None
        self._banned.clear()
        for i in touched:
            self._rekey(i)

    def _touched(self) -> set[int]:
        """Nodes whose key differs from the neutral one during the request: those holding the
        topic, those whose share of it is one or more (a prefix by capacity, at most T of
        them) and the banned ones."""
        state = self._state
        topic, replicas, _ = self._request
        touched = {*state.topic_counts.get(topic or "", ()), *self._banned}
        if self._topic_aware:
            whole = state.active_capacity
            for i in self._by_capacity:
                if replicas * state.capacity[i] < whole:
                    break
                touched.add(i)
        return touched

    # -- choosing -------------------------------------------------------------------------------

    def _pick_plain(self, chosen: list[int]) -> int | None:
        keys, buckets, rnd = self._keys, self._buckets, self._rnd
        for idx in range(len(keys) - 1, -1, -1):
            bucket = buckets[keys[idx]]
            m = len(bucket)
            if m == 1:
                if bucket[0] not in chosen:
                    return bucket[0]
                continue
            if m > _DRAWS:
                for _ in range(_DRAWS):
                    node = bucket[int(rnd() * m)]
                    if node not in chosen:
                        return node
            fit = [n for n in bucket if n not in chosen]
            if fit:
                return fit[0] if len(fit) == 1 else fit[int(rnd() * len(fit))]
        return None

    def _pick_by_rack(self, chosen: list[int]) -> int | None:
        keys, buckets, rnd = self._keys, self._buckets, self._rnd
        rack = self._state.rack_ids
        if not chosen:
            return self._pick_plain(chosen)  # every rack is free
        used = {rack[c] for c in chosen}  # the chosen nodes themselves are in these racks
        for idx in range(len(keys) - 1, -1, -1):
            bucket = buckets[keys[idx]]
            m = len(bucket)
            if m == 1:
                if rack[bucket[0]] not in used:
                    return bucket[0]
                continue
            if m > _DRAWS:
                for _ in range(_DRAWS):
                    node = bucket[int(rnd() * m)]
                    if rack[node] not in used:
                        return node
            fit = [n for n in bucket if rack[n] not in used]
            if fit:
                return fit[0] if len(fit) == 1 else fit[int(rnd() * len(fit))]
        return self._pick_all_racks_used(chosen)

    def _pick_all_racks_used(self, chosen: list[int]) -> int | None:
        """Every rack with a usable node holds a replica already: score the rack level in full."""
        rack = self._state.rack_ids
        per_rack = Counter(rack[c] for c in chosen)
        best: tuple[int, int] | None = None
        fit: list[int] = []
        for key in self._keys:
            for node in self._buckets[key]:
                if node in chosen:
                    continue
                score = (MAX_SCORE // (per_rack[rack[node]] + 1), key)
                if best is None or score > best:
                    best, fit = score, [node]
                elif score == best:
                    fit.append(node)
        if not fit:
            return None
        fit.sort()  # bucket order depends on history; ties are drawn in id order
        return fit[0] if len(fit) == 1 else fit[int(self._rnd() * len(fit))]

    # -- the index -----------------------------------------------------------------------------

    def _make_rekey(self) -> Callable[[int], None]:
        """The re-keying function, a closure over the columns it reads (it runs once or twice
        per replica: local names are faster than attribute lookups)."""
        cap_of, counts, active = self._cap, self._counts, self._active
        used_of, assigned, total_of = self._used, self._assigned, self._total
        topic_counts, whole = self._topic_counts, self._whole
        key_of, pos_of, buckets, keys = self._key, self._pos, self._buckets, self._keys
        disk_used, disk_scores, banned, request = (
            self._disk_used,
            self._disk_score,
            self._banned,
            self._request,
        )
        hard, soft, topic_aware = self._hard, self._soft, self._topic_aware
        bisect_left, insort = bisect.bisect_left, bisect.insort

        def rekey(i: int) -> None:
            # The scores of replica_constraints.py, with two shortcuts giving the same values
            # (tested by verify=True): a node holding none of a topic whose share is below one
            # scores S − F, and a usable node's final count is count + 1 ≤ capacity.
            topic, replicas, size = request
            cap = cap_of[i]
            count = counts[i]
            used = used_of[i] + assigned[i] + size
            total = total_of[i]
            if (
                not active[i]
                or count >= cap
                or i in banned
                or (total > 0 and used >= hard * total)  # disk_fits, the hard disk rule
            ):
                key = -1
            else:
                if not topic_aware:
                    level1 = 0
                elif topic is None:
                    level1 = _NEUTRAL
                else:
                    per_topic = topic_counts.get(topic)
                    held = per_topic.get(i, 0) if per_topic else 0
                    if held == 0 and replicas * cap < whole:
                        level1 = _NEUTRAL
                    else:
                        level1 = topic_score(held, cap, replicas, whole)
                if used == disk_used[i]:
                    level3 = disk_scores[i]
                else:
                    level3 = disk_score(used, total, soft)
                    disk_used[i] = used
                    disk_scores[i] = level3
                key = level1 << 48 | (MAX_SCORE * (cap - count - 1) // cap) << 24 | level3
            old = key_of[i]
            if old == key:
                return
            if old >= 0:
                bucket = buckets[old]
                last = bucket.pop()
                if last != i:
                    pos = pos_of[i]
                    bucket[pos] = last
                    pos_of[last] = pos
                if not bucket:
                    del buckets[old]
                    del keys[bisect_left(keys, old)]
            if key >= 0:
                found = buckets.get(key)
                if found is None:
                    buckets[key] = [i]
                    pos_of[i] = 0
                    insort(keys, key)
                else:
                    pos_of[i] = len(found)
                    found.append(i)
            key_of[i] = key

        return rekey
