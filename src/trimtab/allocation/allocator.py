"""The constraint allocator: Redpanda's design since 2021, hard filters then ranked soft levels.

Goals (ranked)
    1. Replicas of a partition in distinct racks, when rack awareness is on.
    2. Each topic spread over the nodes in proportion to their capacity.
    3. Replica counts in proportion to capacity (balance relative to capacity, not absolute).
    4. The least filled disks.

Constraints (hard; a request that cannot meet them is rolled back whole)
    Distinct nodes, not excluded, active (writable), a free partition slot
    (``cores × per_core − reserve``), and the disk not filled past the hard limit.

Algorithm
    The replicas of all partitions of a request are placed one at a time in random interleaved
    order (Redpanda ea2b6b4f49: placing a partition's replicas back to back forms "replica
    clusters", many partitions with the same replica set). For each replica the hard rules
    filter, the soft levels keep the best in rank order, and the injected RNG picks among the
    last ties. The core is the node's least loaded one (the RFC's ``min_element``).

    The rules are the constraint objects of :func:`default_constraints` (the spec, evaluated
    for every node by ``fast=False``); ``fast=True`` (default) uses the incremental index of
    :mod:`trimtab.allocation._fast`, which picks from the same best tie set — ``verify=True``
    checks that on every replica against the spec.

Worked example (rack-aware, one partition of replication factor 3): racks r1 = {A (8 cores),
B (4)}, r2 = {C (4), E (4)}, r3 = {D (4)}, nothing placed yet. Replica 1: every rack is free;
at the topic level A's share of the topic's 3 replicas is one whole replica (8 of 24 cores),
the others' half of one → A. Replica 2: r1 is taken, so B ranks below C, D and E, which tie
on every level → one at random, say D. Replica 3: r1 and r3 are taken → C or E at random::

    partition 0:  A  D  C        r1 r3 r2
"""

from __future__ import annotations

import random
from collections.abc import Collection

from trimtab.allocation._fast import FastChooser
from trimtab.allocation.base import NoPlacementError, is_internal_topic, run_request
from trimtab.allocation.model import AllocationRequest, PartitionAssignment
from trimtab.allocation.replica_constraints import ReplicaContext, default_constraints, disk_ratios
from trimtab.allocation.state import AllocationState, Transaction
from trimtab.cluster import NodeId
from trimtab.config.redpanda import AllocationConfig
from trimtab.constraints import NoEligibleNodeError, choose, eligible, ties

__all__ = ["ConstraintAllocator", "FastPathMismatchError"]


class FastPathMismatchError(RuntimeError):
    """``verify=True`` found the fast path choosing a node outside the spec's best tie set."""


class ConstraintAllocator:
    """Hard constraints, ranked soft levels, random ties; interleaved replica order."""

    def __init__(
        self,
        state: AllocationState,
        *,
        rng: random.Random,
        rack_aware: bool = False,
        topic_aware: bool = True,
        soft_disk_ratio: float = 0.8,
        hard_disk_ratio: float = 0.95,
        fast: bool = True,
        verify: bool = False,
        internal_topics: Collection[str] = (),
    ) -> None:
        self._state = state
        self._internal_topics = frozenset(internal_topics)
        self._internal = False  # the current request is of an internal topic
        self._rng = rng
        self.rules = default_constraints(
            rack_aware=rack_aware,
            topic_aware=topic_aware,
            soft_disk_ratio=soft_disk_ratio,
            hard_disk_ratio=hard_disk_ratio,
        )
        self._verify = verify
        self._topic_total = 0  # the current request's topic replicas once placed
        self._fast = (
            FastChooser(
                state,
                rng=rng,
                rack_aware=rack_aware,
                topic_aware=topic_aware,
                soft_disk_ratio=soft_disk_ratio,
                hard_disk_ratio=hard_disk_ratio,
            )
            if fast
            else None
        )

    @classmethod
    def from_config(
        cls,
        state: AllocationState,
        config: AllocationConfig,
        *,
        rng: random.Random,
        rack_aware: bool | None = None,
        fast: bool = True,
        verify: bool = False,
    ) -> ConstraintAllocator:
        """Settings from ``config``; ``rack_aware`` overrides ``enable_rack_awareness``."""
        soft, hard = disk_ratios(config)
        return cls(
            state,
            rng=rng,
            rack_aware=config.enable_rack_awareness if rack_aware is None else rack_aware,
            topic_aware=config.topic_aware,
            soft_disk_ratio=soft,
            hard_disk_ratio=hard,
            fast=fast,
            verify=verify,
            internal_topics=config.internal_topics,
        )

    @property
    def state(self) -> AllocationState:
        return self._state

    def close(self) -> None:
        """Stop following the state's changes."""
        if self._fast is not None:
            self._fast.close()

    def allocate(
        self,
        request: AllocationRequest,
        tx: Transaction | None = None,
        *,
        excluded: Collection[NodeId] = (),
    ) -> tuple[PartitionAssignment, ...]:
        """Place ``request``; raises a typed :class:`~trimtab.errors.AllocationError` (with
        nothing of the request left allocated) when it cannot be met."""

        internal = is_internal_topic(request.topic, self._internal_topics)

        def place(active: Transaction, banned: frozenset[int]) -> list[list[tuple[int, int]]]:
            self._topic_total = self._state.topic_replicas(request.topic) + request.replicas
            self._internal = internal
            fast = None if internal else self._fast  # the fast path keeps full nodes out
            if fast is None:
                return self._interleave(active, request, banned)
            fast.begin(request.topic, request.partition_size_bytes, banned, self._topic_total)
            try:
                return self._interleave(active, request, banned)
            finally:
                fast.end()

        return run_request(self._state, request, tx, excluded, place, internal=internal)

    def _interleave(
        self, tx: Transaction, request: AllocationRequest, banned: frozenset[int]
    ) -> list[list[tuple[int, int]]]:
        """Replicas of all partitions in random interleaved order; (node, core) per partition."""
        rf, topic, size = request.replication_factor, request.topic, request.partition_size_bytes
        chosen: list[list[int]] = [[] for _ in range(request.partitions)]
        cores: list[list[int]] = [[] for _ in range(request.partitions)]
        in_progress = list(range(request.partitions))
        rnd = self._rng.random
        place = tx.place
        fast = None if self._internal else self._fast
        pick = fast.pick if fast is not None else None
        verify = self._verify and fast is not None
        placed = 0
        while in_progress:
            slot = int(rnd() * len(in_progress))
            partition = in_progress[slot]
            nodes = chosen[partition]
            node = pick(nodes) if pick is not None else self._reference_pick(request, nodes, banned)
            if node is None:
                raise NoPlacementError(self._why_not(request, nodes, banned), placed)
            if verify:
                self._check(request, nodes, banned, node)
            cores[partition].append(place(node, topic, size))
            nodes.append(node)
            placed += 1
            if len(nodes) == rf:
                in_progress[slot] = in_progress[-1]
                in_progress.pop()
        return [list(zip(n, c, strict=True)) for n, c in zip(chosen, cores, strict=True)]

    # -- the spec, node by node ----------------------------------------------------------------

    def _context(
        self, request: AllocationRequest, nodes: list[int], banned: frozenset[int]
    ) -> ReplicaContext:
        ids = self._state.ids
        return ReplicaContext(
            state=self._state,
            topic=request.topic,
            size_bytes=request.partition_size_bytes,
            chosen=[ids[i] for i in nodes],
            excluded=frozenset(ids[i] for i in banned),
            topic_replicas=self._topic_total,
            internal=self._internal,
        )

    def _reference_pick(
        self, request: AllocationRequest, nodes: list[int], banned: frozenset[int]
    ) -> int | None:
        ctx = self._context(request, nodes, banned)
        try:
            node = choose(self._state.ids, self.rules, ctx, self._rng)
        except NoEligibleNodeError:
            return None
        return self._state.index[node]

    def _why_not(self, request: AllocationRequest, nodes: list[int], banned: frozenset[int]) -> str:
        state = self._state
        _, rejections = eligible(state.ids, self.rules, self._context(request, nodes, banned))
        why = "; ".join(f"{n} ruled out by '{rule}'" for rule, n in rejections.most_common())
        return f"no eligible node for a replica among {len(state)}: {why}"

    def _check(
        self, request: AllocationRequest, nodes: list[int], banned: frozenset[int], node: int
    ) -> None:
        state = self._state
        best = ties(state.ids, self.rules, self._context(request, nodes, banned))
        if state.ids[node] not in best:
            raise FastPathMismatchError(
                f"fast path chose {state.ids[node]} for {request.topic}; the spec's best are "
                f"{', '.join(best)}"
            )
