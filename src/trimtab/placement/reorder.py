"""Read reordering: in which order to ask a write set's members for an entry.

Goals
    Send the first read to the node most likely to answer quickly, the speculative ones to the
    next best, and the hopeless ones last (upstream ``reorderReadSequenceWithRegion``, §2.7).

Classes, tried in this order (stable by position in the write set within a class)
    1. LOCAL        writable, no recorded failure
    2. LOCAL_FAIL   writable with failures, earlier last-failed entry first
    3. REMOTE       region-aware only: writable in another region, no failure
    4. REMOTE_FAIL  region-aware only: the same with failures
    5. READ_ONLY    read-only
    6. SLOW         registered slow (writable without failures, or read-only), fewer pending
                    requests first
    7. UNAVAILABLE  neither writable nor read-only

Rules
    * Fast path: the write set comes back unchanged unless one of *its* members is unavailable
      or slow (#4478). A read-only member alone does not reorder. Region-aware with a known
      local region, and random reordering, always reorder.
    * Pending requests: with a threshold > 0, if the first member has at least ``threshold``
      more pending requests than the least busy one, that one moves to the front; nothing else
      changes (this happens before, and independently of, the class sort).
    * Region-aware: after sorting, the first remote member moves to position
      ``min(leading local members, 2)``: at most two local tries, then one remote.
    * Random reordering (``ensembleRandomReadReordering``) shuffles within LOCAL, REMOTE,
      READ_ONLY and UNAVAILABLE.

Worked example (upstream test): write set (0,1,2,3), node 0 down, node 1 read-only, node 2
slow: classes are UNAVAILABLE, READ_ONLY, SLOW, LOCAL, so the order is (3, 1, 2, 0).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Container, Mapping, Sequence
from enum import IntEnum

from trimtab.cluster import NodeId

__all__ = ["ReadClass", "SlowNodes", "add_missing_indices", "reorder_reads"]


class ReadClass(IntEnum):
    """Read preference classes; lower is tried first."""

    LOCAL = 0
    LOCAL_FAIL = 1
    REMOTE = 2
    REMOTE_FAIL = 3
    READ_ONLY = 4
    SLOW = 5
    UNAVAILABLE = 6


class SlowNodes:
    """Nodes a speculative read found slow, each forgotten ``expiry_ms`` after it was reported.

    Upstream keeps them in a Guava cache with ``expireAfterWrite``; here the clock is injected
    and expiry is checked on read, so tests move a fake clock.
    """

    __slots__ = ("_clock", "_entries", "expiry_ms")

    def __init__(self, *, expiry_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.expiry_ms = expiry_ms
        self._clock = clock
        self._entries: dict[str, tuple[int, float]] = {}

    def __repr__(self) -> str:
        return f"SlowNodes({len(self._entries)} registered, expiry {self.expiry_ms} ms)"

    def register(self, node: str, entry_id: int) -> None:
        """Mark ``node`` slow as of now (``entry_id`` is the read that timed out)."""
        self._entries[NodeId(node)] = (entry_id, self._clock() + self.expiry_ms / 1000.0)

    def __contains__(self, node: object) -> bool:
        if not isinstance(node, str) or not self._entries:
            return False
        found = self._entries.get(node)
        if found is None:
            return False
        if found[1] <= self._clock():
            del self._entries[node]
            return False
        return True

    def __len__(self) -> int:
        now = self._clock()
        return sum(1 for _, deadline in self._entries.values() if deadline > now)


def _classify(
    node: NodeId,
    *,
    writable: Container[NodeId],
    readonly: Container[NodeId],
    slow: Container[NodeId],
    failure_history: Mapping[NodeId, int],
    pending: Mapping[NodeId, int],
    remote: bool,
) -> tuple[ReadClass, int]:
    if node in writable:
        failed = failure_history.get(node, -1)
        if failed >= 0:
            return (ReadClass.REMOTE_FAIL if remote else ReadClass.LOCAL_FAIL), failed
        if node in slow:
            return ReadClass.SLOW, pending.get(node, 0)
        return (ReadClass.REMOTE if remote else ReadClass.LOCAL), 0
    if node in readonly:
        if node in slow:
            return ReadClass.SLOW, pending.get(node, 0)
        return ReadClass.READ_ONLY, 0
    return ReadClass.UNAVAILABLE, 0


def reorder_reads(
    ensemble: Sequence[NodeId],
    write_set: Sequence[int],
    *,
    writable: Container[NodeId],
    readonly: Container[NodeId],
    slow: Container[NodeId],
    failure_history: Mapping[NodeId, int],
    pending: Mapping[NodeId, int],
    threshold: int = 0,
    region_of: Callable[[NodeId], str | None] | None = None,
    local_region: str | None = None,
    remote_position: int = 2,
    rng: random.Random | None = None,
) -> tuple[tuple[int, ...], bool]:
    """The read order for ``write_set`` and whether it differs in kind from the input.

    ``region_of``/``local_region`` switch on the region-aware rules; ``rng`` switches on random
    reordering. See the module docstring for the classes and rules.
    """
    order = list(write_set)
    region_aware = region_of is not None and local_region is not None
    members = [ensemble[i] for i in order]
    must_sort = region_aware or rng is not None
    if not must_sort:
        must_sort = any((n not in writable and n not in readonly) or n in slow for n in members)
    reordered = False
    if threshold > 0 and order:
        counts = [pending.get(n, 0) for n in members]
        best = min(range(len(counts)), key=counts.__getitem__)
        if best > 0 and counts[0] >= counts[best] + threshold:
            order.insert(0, order.pop(best))
            reordered = True
    if not must_sort:
        return tuple(order), reordered
    keyed = []
    for position, index in enumerate(order):
        node = ensemble[index]
        remote = region_aware and region_of(node) != local_region  # type: ignore[misc]
        cls, sub = _classify(
            node,
            writable=writable,
            readonly=readonly,
            slow=slow,
            failure_history=failure_history,
            pending=pending,
            remote=remote,
        )
        keyed.append((cls, sub, position, index))
    keyed.sort()
    classes = [k[0] for k in keyed]
    order = [k[3] for k in keyed]
    if rng is not None:
        _shuffle_groups(order, classes, rng)
    if region_aware:
        _insert_first_remote(order, classes, remote_position)
    return tuple(order), True


def _shuffle_groups(order: list[int], classes: list[ReadClass], rng: random.Random) -> None:
    shuffled = (ReadClass.LOCAL, ReadClass.REMOTE, ReadClass.READ_ONLY, ReadClass.UNAVAILABLE)
    for cls in shuffled:
        spots = [i for i, c in enumerate(classes) if c is cls]
        if len(spots) > 1:
            values = [order[i] for i in spots]
            rng.shuffle(values)
            for i, v in zip(spots, values, strict=True):
                order[i] = v


def _insert_first_remote(order: list[int], classes: list[ReadClass], most_local: int) -> None:
    remote = (ReadClass.REMOTE, ReadClass.REMOTE_FAIL)
    first = next((i for i, c in enumerate(classes) if c in remote), None)
    if first is None:
        return
    local = (ReadClass.LOCAL, ReadClass.LOCAL_FAIL)
    leading = 0
    while leading < min(most_local, len(classes)) and classes[leading] in local:
        leading += 1
    order.insert(leading, order.pop(first))
    classes.insert(leading, classes.pop(first))


def add_missing_indices(order: Sequence[int], ensemble_size: int) -> tuple[int, ...]:
    """``order`` then every other index of the ensemble in ascending order (LAC reads)."""
    present = set(order)
    return (*order, *(i for i in range(ensemble_size) if i not in present))
