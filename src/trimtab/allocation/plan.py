"""One call per cluster: an inventory snapshot and requests in, an all-or-nothing plan out.

This is the entry point the CLI and the Spark pipeline use (``groupBy(cluster)`` then one
call per group): plain objects in and out, no files. Every request is placed in one
transaction; if any cannot be met, nothing of the batch stays allocated and the typed
:class:`~trimtab.errors.AllocationError` (with ``request_index``) says which and why.

In constraints mode the batch's own new replicas are then evened out towards capacity shares
(:func:`~trimtab.allocation.repair.even_out`, config ``even_out_batch``) before the commit.

Kafka makes a partition's first replica its preferred leader. Allocators tend to place a
partition's first replica on the roomiest node, so the plan reorders each new partition's
replicas to put first the node leading the fewest partitions for its capacity
(:func:`order_leaders`); the set of nodes and cores is unchanged.

    >>> from trimtab.cluster import Capacity, ClusterState, Node
    >>> nodes = [Node(id=f"b{i}", location="/r1", capacity=Capacity(
    ...     cores=2, memory_bytes=1, disk_total_bytes=0, nic_bps=1)) for i in range(3)]
    >>> plan = plan_allocations(ClusterState.of("c", nodes),
    ...     [AllocationRequest(topic="t", partitions=4, replication_factor=3)])
    >>> plan.partitions, plan.replicas, plan.balance, sorted(plan.per_node.values())
    (4, 12, 1.0, [4, 4, 4])
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from trimtab.allocation.allocator import ConstraintAllocator
from trimtab.allocation.base import Allocator, excluded_indices, is_internal_topic
from trimtab.allocation.model import AllocationRequest, PartitionAssignment, Replica
from trimtab.allocation.rendezvous import RendezvousAllocator
from trimtab.allocation.repair import even_out
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.allocation.rfc import RfcAllocator
from trimtab.allocation.shares import target_balance, target_shares
from trimtab.allocation.state import AllocationState, Transaction
from trimtab.cluster import ClusterState, NodeId
from trimtab.config.redpanda import ALLOCATORS, AllocationConfig
from trimtab.errors import AllocationError, ClusterLimitError, ConfigError, TopicExistsError

__all__ = [
    "MODES",
    "AllocationPlan",
    "Move",
    "assignments_from_nodes",
    "check_cluster_limits",
    "evens_out",
    "make_allocator",
    "order_leaders",
    "plan_allocations",
]

MODES = tuple(sorted(set(ALLOCATORS.values())))

#: An existing partition that a rebalance moves: (before, after).
Move = tuple[PartitionAssignment, PartitionAssignment]


@dataclass(frozen=True, slots=True)
class AllocationPlan:
    """New assignments, and the counts and balance of the cluster once they are made."""

    cluster: str
    mode: str
    rack_aware: bool
    seed: int
    assignments: tuple[PartitionAssignment, ...]
    per_node: Mapping[NodeId, int]
    per_core: Mapping[NodeId, tuple[int, ...]]
    capacity: Mapping[NodeId, int]
    active: frozenset[NodeId]
    balance: float
    leaders: Mapping[NodeId, int]
    moves: tuple[Move, ...] = ()
    #: each active node's reachable share of the replicas (:mod:`trimtab.allocation.shares`),
    #: which ``balance`` is measured against
    shares: Mapping[NodeId, float] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return len(self.assignments)

    @property
    def replicas(self) -> int:
        return sum(len(a.replicas) for a in self.assignments)

    @property
    def moved_replicas(self) -> int:
        """Replicas of existing partitions that change node (each one copies data)."""
        return sum(len(set(after.nodes) - set(before.nodes)) for before, after in self.moves)


def make_allocator(
    mode: str,
    state: AllocationState,
    config: AllocationConfig,
    *,
    rng: random.Random,
    rack_aware: bool,
) -> Allocator:
    """The allocator of ``mode`` (``rfc``, ``constraints``, ``rendezvous``) over ``state``."""
    if mode == "rfc":
        if rack_aware:
            raise ConfigError(
                "the rfc allocator has no rack awareness (the 2019 RFC ignores racks): "
                "use mode constraints or rendezvous"
            )
        return RfcAllocator(state)
    if mode == "constraints":
        return ConstraintAllocator.from_config(state, config, rng=rng, rack_aware=rack_aware)
    if mode == "rendezvous":
        return RendezvousAllocator(
            state, rack_aware=rack_aware, bias_correction=config.rendezvous_bias_correction
        )
    raise ConfigError(f"unknown allocation mode {mode!r}: use one of {', '.join(MODES)}")


def plan_allocations(
    cluster: ClusterState,
    requests: Sequence[AllocationRequest],
    config: AllocationConfig | None = None,
    *,
    mode: str | None = None,
    rack_aware: bool | None = None,
    seed: int = 0,
    existing: Iterable[PartitionAssignment] = (),
    excluded: Collection[NodeId] = (),
    rebalance: bool = False,
    max_moves: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    add_partitions: bool = False,
) -> AllocationPlan:
    """Place every request on ``cluster`` (holding ``existing``), all or nothing.

    ``mode`` and ``rack_aware`` default to the config's ``allocator`` and
    ``enable_rack_awareness``; ``seed`` fixes every random choice. ``progress(done, total)``
    is called with replicas placed so far after each request.

    ``rebalance=True`` (constraints mode) also moves replicas of ``existing`` partitions, at
    most ``max_moves`` of them, towards capacity shares: Redpanda's counts rebalancing, needed
    when a node joins a cluster that already holds data. Moved partitions are in ``moves``.

    A request for a topic that already has partitions (in ``existing`` or earlier in the batch)
    is :class:`~trimtab.errors.TopicExistsError` unless ``add_partitions``: then its partitions
    are added after the highest held. Each request is checked against the cluster limits
    (:func:`check_cluster_limits`) first.
    """
    cfg = config or AllocationConfig()
    chosen_mode = mode or cfg.allocator
    racks = cfg.enable_rack_awareness if rack_aware is None else rack_aware
    _check_clusters(cluster, requests)
    state = AllocationState.of(cluster, cfg, existing)
    allocator = make_allocator(chosen_mode, state, cfg, rng=random.Random(seed), rack_aware=racks)
    moves: tuple[Move, ...] = ()
    with state.transaction() as tx:
        made = _place_all(
            allocator,
            tx,
            requests,
            cfg,
            excluded=excluded,
            progress=progress,
            add_partitions=add_partitions,
        )
        if evens_out(cfg, mode=chosen_mode, rebalance=rebalance):
            made, moves = _even_out_batch(
                state,
                tx,
                made,
                cfg,
                rack_aware=racks,
                rebalance=rebalance,
                excluded=excluded,
                max_moves=max_moves,
            )
        elif rebalance:
            raise ConfigError("rebalancing moves replicas by the constraints; use that mode")
        tx.commit()
    capacity = dict(zip(state.ids, state.capacity, strict=True))
    ordered, leaders = order_leaders(made, capacity, state.assignments())
    return AllocationPlan(
        cluster=cluster.name,
        mode=chosen_mode,
        rack_aware=racks,
        seed=seed,
        assignments=ordered,
        per_node=state.per_node(),
        per_core=state.per_core(),
        capacity=capacity,
        active=frozenset(n for n, a in zip(state.ids, state.active, strict=True) if a),
        balance=target_balance(state, rack_aware=racks),
        shares=dict(zip(state.ids, target_shares(state, rack_aware=racks), strict=True)),
        leaders=leaders,
        moves=moves,
    )


def evens_out(config: AllocationConfig, *, mode: str | None, rebalance: bool) -> bool:
    """Whether :func:`plan_allocations` evens the batch out once every replica is placed (a
    phase of its own, often longer than the placing): constraints mode (``mode``, default the
    config's allocator) with ``even_out_batch`` set or ``rebalance`` asked."""
    return (mode or config.allocator) == "constraints" and (config.even_out_batch or rebalance)


def _check_clusters(cluster: ClusterState, requests: Sequence[AllocationRequest]) -> None:
    """A request that names another cluster is a caller's mistake, not a row to skip."""
    for n, request in enumerate(requests):
        if request.cluster is not None and request.cluster != cluster.name:
            raise ValueError(
                f"request {n} ({request.topic}) is for cluster {request.cluster!r}, "
                f"not {cluster.name!r}"
            )


def _place_all(
    allocator: Allocator,
    tx: Transaction,
    requests: Sequence[AllocationRequest],
    cfg: AllocationConfig,
    *,
    excluded: Collection[NodeId],
    progress: Callable[[int, int], None] | None,
    add_partitions: bool,
) -> list[PartitionAssignment]:
    """Every request's new partitions, in order; the error of a request that cannot be met
    carries its index."""
    total = sum(r.replicas for r in requests)
    made: list[PartitionAssignment] = []
    done = 0
    state = allocator.state
    for n, request in enumerate(requests):
        try:
            held = len(state.assignments(request.topic))
            if held and not add_partitions:
                raise TopicExistsError(request.topic, held)
            check_cluster_limits(state, request, cfg)
            made.extend(allocator.allocate(request, tx, excluded=excluded))
        except AllocationError as error:
            error.request_index = n
            raise
        done += request.replicas
        if progress is not None:
            progress(done, total)
    return made


def check_cluster_limits(
    state: AllocationState, request: AllocationRequest, cfg: AllocationConfig
) -> None:
    """Redpanda's ``check_cluster_limits`` for memory and file descriptors: all replicas once
    the request is placed must fit ``nodes × smallest node memory / topic_memory_per_partition``
    and ``nodes × node_open_files_limit / topic_fds_per_partition`` (as if every node were the
    smallest: a partition must fit wherever a failure sends it). Internal topics are exempt;
    an unset key is no limit. The per-core limit is the allocator's, node by node."""
    if is_internal_topic(request.topic, cfg.internal_topics):
        return
    nodes = state.cluster.nodes
    proposed = sum(state.counts) + request.replicas
    per_memory = cfg.topic_memory_per_partition
    memory = [n.capacity.memory_bytes for n in nodes if n.capacity.memory_bytes > 0]
    if per_memory and memory:
        allowed = len(nodes) * min(memory) // per_memory
        if proposed > allowed:
            raise ClusterLimitError(
                request.topic,
                limit="memory",
                proposed=proposed,
                allowed=allowed,
                why=f"{len(nodes)} nodes × {min(memory):,} bytes (the smallest) / "
                f"topic_memory_per_partition {per_memory:,}",
            )
    per_fd, files = cfg.topic_fds_per_partition, cfg.node_open_files_limit
    if per_fd and files:
        allowed = len(nodes) * files // per_fd
        if proposed > allowed:
            raise ClusterLimitError(
                request.topic,
                limit="fds",
                proposed=proposed,
                allowed=allowed,
                why=f"{len(nodes)} nodes × node_open_files_limit {files:,} / "
                f"topic_fds_per_partition {per_fd}",
            )


def _even_out_batch(
    state: AllocationState,
    tx: Transaction,
    made: list[PartitionAssignment],
    cfg: AllocationConfig,
    *,
    rack_aware: bool,
    rebalance: bool,
    excluded: Collection[NodeId],
    max_moves: int | None,
) -> tuple[list[PartitionAssignment], tuple[Move, ...]]:
    """The batch evened out towards capacity shares, and with ``rebalance`` the existing
    partitions that move too (as (before, after) pairs)."""
    fresh = {(a.topic, a.partition) for a in made}
    held = [a for a in state.assignments() if (a.topic, a.partition) not in fresh]
    held = held if rebalance else []
    changed = even_out(
        state,
        tx,
        [*held, *made],
        rack_aware=rack_aware,
        topic_aware=cfg.topic_aware,
        hard_disk_ratio=disk_ratios(cfg)[1],
        excluded=excluded_indices(state, excluded),
        max_moves=max_moves,
    )
    moves = tuple((b, a) for b, a in zip(held, changed, strict=False) if a != b)
    return changed[len(held) :], moves


def order_leaders(
    made: Sequence[PartitionAssignment],
    capacity: Mapping[NodeId, int],
    held: Iterable[PartitionAssignment] = (),
) -> tuple[tuple[PartitionAssignment, ...], dict[NodeId, int]]:
    """Put first (Kafka's preferred leader) the replica whose node leads the fewest partitions
    for its capacity; the other replicas keep their order. Returns the reordered assignments
    and the preferred-leader count per node (of ``held`` too, whose order is kept)."""
    new = {(a.topic, a.partition) for a in made}
    leaders: dict[NodeId, int] = dict.fromkeys(capacity, 0)
    for a in held:
        if (a.topic, a.partition) not in new and a.replicas:
            leaders[a.replicas[0].node] += 1
    weight = {node: 1 / max(1, cap) for node, cap in capacity.items()}
    out = []
    for a in made:
        replicas = a.replicas
        best, lowest = 0, (leaders[replicas[0].node] + 1) * weight[replicas[0].node]
        for k in range(1, len(replicas)):
            ratio = (leaders[replicas[k].node] + 1) * weight[replicas[k].node]
            if ratio < lowest:
                best, lowest = k, ratio
        leaders[replicas[best].node] += 1
        if best:
            replicas = (replicas[best], *replicas[:best], *replicas[best + 1 :])
            a = PartitionAssignment(a.topic, a.partition, replicas, a.size_bytes)
        out.append(a)
    return tuple(out), leaders


def assignments_from_nodes(
    cluster: ClusterState,
    partitions: Iterable[tuple[str, int, Sequence[NodeId]]],
    config: AllocationConfig | None = None,
) -> tuple[PartitionAssignment, ...]:
    """Assignments of partitions known only by their nodes (Kafka records no cores): each
    replica on its node's least-loaded core, partitions taken in the order given."""
    state = AllocationState.of(cluster, config)
    with state.transaction() as tx:
        for topic, partition, nodes in partitions:
            if len(set(nodes)) != len(nodes):
                raise ValueError(f"{topic}/{partition}: two replicas on one node")
            replicas = []
            for node in nodes:
                i = state.node_index(node)
                replicas.append(Replica(state.ids[i], tx.place(i, topic, 0)))
            tx.register(PartitionAssignment(topic, partition, tuple(replicas)))
        tx.commit()
    return state.assignments()
