"""Per-node and per-core replica counts of one cluster, and the transaction that rolls them back.

Goals
    One working state every allocator (RFC round-robin, constraints, rendezvous) reads and
    changes, so that counts, capacity and rollback mean the same thing in each of them.

Capacity (the RFC, and Redpanda's ``allocation_node`` today)
    A node of ``c`` cores holds ``c × topic_partitions_per_shard − topic_partitions_reserve_shard0``
    replicas. Each core has a *weight*, roughly its replica count; core 0 starts at the reserve
    (the RFC's ``core0_extra_weight``: core 0 also runs the controller). A new replica goes to
    the core of least weight, the first such core on ties (``std::min_element``), which keeps
    the weights of a node within one of each other as long as replicas are only added.

    Worked example: 2 cores at 1000 per core with reserve 2 → capacity 1998, weights start
    (2, 0); five replicas go to cores 1, 1, 0, 1, 0 and leave weights (4, 3).

Rollback (Redpanda's ``allocated_partition`` / ``allocation_units``)
    Changes are made through a :class:`Transaction`, a context manager that undoes every change
    it made unless :meth:`Transaction.commit` was called. ``mark()``/``rollback_to(mark)`` undo
    part of it (one failed request inside a batch); undoing twice is harmless.

Nodes are kept in id order (for deterministic iteration); a node is *active* when its state is
``writable``. Read-only and down nodes keep the replicas they hold but take no new ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType

from trimtab.allocation.model import PartitionAssignment, Replica, balance
from trimtab.cluster import ClusterState, NodeId, NodeState
from trimtab.config.redpanda import AllocationConfig

__all__ = ["AllocationState", "Transaction", "replicas_of"]

_PLACED, _UNPLACED, _REGISTERED, _UNREGISTERED = range(4)


class AllocationState:
    """The replica counts of one cluster: per node, per core, per topic, and disk bytes assigned.

    Build one with :meth:`of` from an inventory snapshot and the assignments that already exist.
    Indices (``0..N-1``, in node id order) are used internally; the public methods take ids.
    """

    __slots__ = (
        "_partitions",
        "_replicas",
        "_watchers",
        "active",
        "active_capacity",
        "assigned_bytes",
        "capacity",
        "cluster",
        "cores",
        "counts",
        "disk_total",
        "disk_used",
        "ids",
        "index",
        "rack_ids",
        "racks",
        "reserve_shard0",
        "topic_counts",
        "weights",
    )

    def __init__(
        self,
        cluster: ClusterState,
        *,
        partitions_per_shard: int,
        reserve_shard0: int,
        existing: Iterable[PartitionAssignment] = (),
    ) -> None:
        nodes = cluster.nodes
        self.cluster = cluster
        self.ids: tuple[NodeId, ...] = tuple(n.id for n in nodes)
        self.index: dict[NodeId, int] = {node: i for i, node in enumerate(self.ids)}
        self.racks: tuple[str, ...] = tuple(n.rack for n in nodes)
        names = sorted(set(self.racks))
        self.rack_ids: tuple[int, ...] = tuple(names.index(r) for r in self.racks)
        self.cores: tuple[int, ...] = tuple(max(1, n.capacity.cores) for n in nodes)
        self.reserve_shard0 = reserve_shard0
        self.capacity: tuple[int, ...] = tuple(
            max(0, c * partitions_per_shard - reserve_shard0) for c in self.cores
        )
        self.active: tuple[bool, ...] = tuple(n.state is NodeState.WRITABLE for n in nodes)
        self.active_capacity = sum(c for c, a in zip(self.capacity, self.active, strict=True) if a)
        self.disk_total: tuple[int, ...] = tuple(n.capacity.disk_total_bytes for n in nodes)
        self.disk_used: tuple[int, ...] = tuple(
            0
            if n.capacity.disk_free_bytes is None
            else n.capacity.disk_total_bytes - n.capacity.disk_free_bytes
            for n in nodes
        )
        self.counts: list[int] = [0] * len(nodes)
        self.weights: list[list[int]] = [[reserve_shard0] + [0] * (c - 1) for c in self.cores]
        self.assigned_bytes: list[int] = [0] * len(nodes)
        self.topic_counts: dict[str, dict[int, int]] = {}
        self._partitions: dict[str, dict[int, PartitionAssignment]] = {}
        self._watchers: list[Callable[[int], None]] = []
        self._replicas: dict[tuple[int, int], Replica] = {}
        with self.transaction() as tx:
            for assignment in existing:
                tx.add(assignment)
            tx.commit()

    @classmethod
    def of(
        cls,
        cluster: ClusterState,
        config: AllocationConfig | None = None,
        existing: Iterable[PartitionAssignment] = (),
    ) -> AllocationState:
        """A state for ``cluster`` with the per-core settings of ``config``."""
        cfg = config or AllocationConfig()
        return cls(
            cluster,
            partitions_per_shard=cfg.topic_partitions_per_shard,
            reserve_shard0=cfg.topic_partitions_reserve_shard0,
            existing=existing,
        )

    # -- reading ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.ids)

    def node_index(self, node: str) -> int:
        try:
            return self.index[NodeId(node)]
        except KeyError:
            raise KeyError(f"cluster {self.cluster.name!r} has no node {node!r}") from None

    def count(self, node: str) -> int:
        return self.counts[self.node_index(node)]

    def core_counts(self, node: str) -> tuple[int, ...]:
        """Replicas per core of ``node`` (the weights without core 0's reserve)."""
        weights = self.weights[self.node_index(node)]
        return (weights[0] - self.reserve_shard0, *weights[1:])

    def topic_count(self, topic: str, node: str) -> int:
        return self.topic_counts.get(topic, {}).get(self.node_index(node), 0)

    def least_loaded_core(self, i: int) -> int:
        """The first core of least weight (``min_element``)."""
        weights = self.weights[i]
        return weights.index(min(weights))

    def usable(self, i: int) -> bool:
        """Active and with a free partition slot."""
        return self.active[i] and self.counts[i] < self.capacity[i]

    def free_slots(self) -> tuple[int, int]:
        """(free partition slots, nodes with at least one) over active nodes."""
        free = [self.capacity[i] - self.counts[i] for i in range(len(self.ids)) if self.usable(i)]
        return sum(free), len(free)

    def per_node(self) -> dict[NodeId, int]:
        return dict(zip(self.ids, self.counts, strict=True))

    def per_core(self) -> dict[NodeId, tuple[int, ...]]:
        return {node: self.core_counts(node) for node in self.ids}

    def balance(self) -> float:
        """N·Σx²/(Σx)², x = replicas/capacity, over active nodes (see :func:`balance`)."""
        live = [i for i in range(len(self.ids)) if self.active[i]]
        return balance([self.counts[i] for i in live], [self.capacity[i] for i in live])

    def assignments(self, topic: str | None = None) -> tuple[PartitionAssignment, ...]:
        """Every assignment held (of one topic if given), by topic then partition."""
        topics = [topic] if topic is not None else sorted(self._partitions)
        return tuple(
            self._partitions[t][p]
            for t in topics
            if t in self._partitions
            for p in sorted(self._partitions[t])
        )

    def held(self, topic: str, partition: int) -> PartitionAssignment | None:
        """The assignment held for ``topic``/``partition``, if any."""
        return self._partitions.get(topic, {}).get(partition)

    def topic_replicas(self, topic: str) -> int:
        """Replicas of ``topic`` held, on every node."""
        return sum(self.topic_counts.get(topic, {}).values())

    def widths(self) -> list[int]:
        """The replica count of every partition held (what caps a node's and a rack's share,
        :mod:`trimtab.allocation.shares`)."""
        return [len(a.replicas) for held in self._partitions.values() for a in held.values()]

    def next_partition(self, topic: str) -> int:
        """The id a new partition of ``topic`` gets: one past the highest held, else 0."""
        held = self._partitions.get(topic)
        return max(held) + 1 if held else 0

    # -- changing -----------------------------------------------------------------------------

    def transaction(self) -> Transaction:
        return Transaction(self)

    def deallocate(self, assignment: PartitionAssignment) -> None:
        """Release a held partition's replicas (its full nodes take replicas again)."""
        with self.transaction() as tx:
            tx.remove(assignment)
            tx.commit()

    def watch(self, callback: Callable[[int], None]) -> Callable[[], None]:
        """Call ``callback(node index)`` after every change to a node; returns the unwatch."""
        self._watchers.append(callback)
        return lambda: self._watchers.remove(callback)

    def _place(self, i: int, core: int, topic: str, size: int) -> None:
        self.counts[i] += 1
        self.weights[i][core] += 1
        self.assigned_bytes[i] += size
        per_topic = self.topic_counts.get(topic)
        if per_topic is None:
            per_topic = self.topic_counts[topic] = {}
        per_topic[i] = per_topic.get(i, 0) + 1
        for watcher in self._watchers:
            watcher(i)

    def _unplace(self, i: int, core: int, topic: str, size: int) -> None:
        self.counts[i] -= 1
        self.weights[i][core] -= 1
        self.assigned_bytes[i] -= size
        per_topic = self.topic_counts[topic]
        left = per_topic[i] - 1
        if left:
            per_topic[i] = left
        else:
            del per_topic[i]
            if not per_topic:
                del self.topic_counts[topic]
        for watcher in self._watchers:
            watcher(i)

    def _register(self, assignment: PartitionAssignment) -> None:
        held = self._partitions.setdefault(assignment.topic, {})
        if assignment.partition in held:
            raise ValueError(f"partition {assignment.topic}/{assignment.partition} is already held")
        held[assignment.partition] = assignment

    def _unregister(self, assignment: PartitionAssignment) -> None:
        held = self._partitions.get(assignment.topic, {})
        if held.get(assignment.partition) != assignment:
            raise KeyError(
                f"partition {assignment.topic}/{assignment.partition} is not held as given"
            )
        del held[assignment.partition]
        if not held:
            del self._partitions[assignment.topic]


class Transaction:
    """Changes to an :class:`AllocationState` that are undone unless committed.

    Used as a context manager: leaving the block without :meth:`commit` rolls back. ``mark()``
    and ``rollback_to(mark)`` undo the changes made since the mark, which is how one failed
    request of a batch leaves the earlier ones in place. Undo is idempotent.
    """

    __slots__ = ("_closed", "_state", "_undo")

    def __init__(self, state: AllocationState) -> None:
        self._state = state
        self._undo: list[tuple[int, object, int, str, int]] = []
        self._closed = False

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.rollback()

    @property
    def closed(self) -> bool:
        return self._closed

    def place(self, i: int, topic: str, size: int, core: int | None = None) -> int:
        """One replica of ``topic`` on node index ``i``, on ``core`` or its least loaded core."""
        if self._closed:
            self._check_open()
        state = self._state
        if core is None:
            weights = state.weights[i]
            core = weights.index(min(weights))
        state._place(i, core, topic, size)
        self._undo.append((_PLACED, i, core, topic, size))
        return core

    def register(self, assignment: PartitionAssignment) -> None:
        """Record a partition whose replicas were placed with :meth:`place`."""
        self._check_open()
        self._state._register(assignment)
        self._undo.append((_REGISTERED, assignment, 0, "", 0))

    def add(self, assignment: PartitionAssignment) -> None:
        """Place and record an assignment made elsewhere (an existing topic, a plan to apply)."""
        state = self._state
        nodes = assignment.nodes
        if len(set(nodes)) != len(nodes):
            raise ValueError(f"{assignment.topic}/{assignment.partition}: two replicas on one node")
        for replica in assignment.replicas:
            i = state.node_index(replica.node)
            if not 0 <= replica.core < state.cores[i]:
                raise ValueError(
                    f"{assignment.topic}/{assignment.partition}: node {replica.node} has no core "
                    f"{replica.core} (it has {state.cores[i]})"
                )
        self.register(assignment)
        for replica in assignment.replicas:
            self.place(
                state.index[replica.node], assignment.topic, assignment.size_bytes, replica.core
            )

    def remove(self, assignment: PartitionAssignment) -> None:
        """Release a held partition's replicas."""
        self._check_open()
        state = self._state
        state._unregister(assignment)
        self._undo.append((_UNREGISTERED, assignment, 0, "", 0))
        for replica in assignment.replicas:
            i = state.index[replica.node]
            state._unplace(i, replica.core, assignment.topic, assignment.size_bytes)
            self._undo.append((_UNPLACED, i, replica.core, assignment.topic, assignment.size_bytes))

    def mark(self) -> int:
        return len(self._undo)

    def rollback_to(self, mark: int) -> None:
        """Undo, newest first, every change made after ``mark``."""
        state = self._state
        undo = self._undo
        while len(undo) > mark:
            op, what, core, topic, size = undo.pop()
            if op == _PLACED:
                assert isinstance(what, int)
                state._unplace(what, core, topic, size)
            elif op == _UNPLACED:
                assert isinstance(what, int)
                state._place(what, core, topic, size)
            elif op == _REGISTERED:
                assert isinstance(what, PartitionAssignment)
                state._unregister(what)
            else:
                assert isinstance(what, PartitionAssignment)
                state._register(what)

    def commit(self) -> None:
        """Keep every change; the transaction is closed."""
        self._check_open()
        self._undo.clear()
        self._closed = True

    def rollback(self) -> None:
        """Undo every change not committed; the transaction is closed. Safe to call again."""
        if not self._closed:
            self.rollback_to(0)
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the transaction is closed (committed or rolled back)")


def replicas_of(state: AllocationState, placed: list[tuple[int, int]]) -> tuple[Replica, ...]:
    """Replica values for (node index, core) pairs (immutable, so shared between partitions)."""
    made = state._replicas
    out = []
    for pair in placed:
        replica = made.get(pair)
        if replica is None:
            replica = made[pair] = Replica(state.ids[pair[0]], pair[1])
        out.append(replica)
    return tuple(out)
