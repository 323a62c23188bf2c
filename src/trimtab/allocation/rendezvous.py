"""Weighted rendezvous (highest random weight) hashing, and an allocator built on it.

Goals
    A partition's replica set that depends only on its key and the nodes' weights: the same
    key always gives the same nodes, adding or removing a node moves only the keys that must
    move, and over many keys each node holds replicas in proportion to its weight.

Algorithm
    For key k and node n of weight w > 0: ``u = ((h(k, n) >> 12) + ½) / 2⁵²``, strictly inside
    (0, 1), and ``score = −w / ln(u)``. The k **largest** scores win. ``−ln u`` is exponential,
    so the score is ``w/E``: an exponential race that node n wins with probability ``w/Σw``
    (CRUSH straw2 computes ``ln(u)/w`` and takes the maximum: the same race). The RFC's
    snippet sorts the scores ascending and takes ``[:k]``, which picks the *lightest* nodes;
    ``u = 0`` or ``1`` would give a score of 0 or a division by zero, which ``+ ½`` rules out.
    ``h`` is blake2b of the key and of the node id, combined by splitmix64's finaliser.

    Adding a node changes no other node's score, so a key moves only if the new node enters
    its top k (and then only the lowest member leaves). Removing a node moves only the keys
    that held it.

Multi-pick bias
    For k > 1 unequal weights are not honoured: see :mod:`trimtab.allocation.multipick`, which
    the allocator uses (``bias_correction=True``) to reweight nodes so that each node's
    expected share of replicas is its capacity share.

Allocator
    Key ``"<topic>/<partition>"``, weight = the node's partition capacity. Nodes that are full,
    inactive or excluded are skipped in score order; with rack awareness a node whose rack
    already holds a replica is skipped while some rack holds none. Cores: least loaded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence

import numpy as np
from numpy.typing import NDArray

from trimtab.allocation.base import NoPlacementError, run_request
from trimtab.allocation.model import AllocationRequest, PartitionAssignment
from trimtab.allocation.multipick import corrected_weights
from trimtab.allocation.state import AllocationState, Transaction
from trimtab.cluster import NodeId

__all__ = ["RendezvousAllocator", "pick", "ranking", "scores", "stable_hash", "unit_interval"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_INV52 = 2.0**-52
_BATCH = 512  # partitions scored per NumPy batch
_SHORTLIST = 32  # candidates sorted per partition before falling back to the whole order


def stable_hash(text: str) -> int:
    """64 bits of blake2b: the same on every machine and Python version (unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _mix(z: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """splitmix64's finaliser (array arithmetic wraps modulo 2⁶⁴ without warnings)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def unit_interval(hashes: NDArray[np.uint64]) -> NDArray[np.float64]:
    """``((h >> 12) + ½) / 2⁵²``: 52 bits of each hash, strictly inside (0, 1).

    52 bits, not 53: ``(2⁵³ − 1) + ½`` is not a float64 and rounds up to 2⁵³, giving u = 1
    and a division by zero; ``(2⁵² − 1) + ½`` is exact, so u ≤ 1 − 2⁻⁵³.
    """
    return np.asarray(((hashes >> np.uint64(12)).astype(np.float64) + 0.5) * _INV52)


def scores(
    key_hashes: Sequence[int] | NDArray[np.uint64],
    node_hashes: NDArray[np.uint64],
    weights: NDArray[np.float64],
) -> NDArray[np.float64]:
    """``−w/ln(u)`` for every (key, node): shape (keys, nodes). Weight 0 scores 0."""
    keys = np.asarray(key_hashes, dtype=np.uint64)
    u = unit_interval(_mix(keys[:, None] ^ node_hashes[None, :]))
    return np.asarray(-weights[None, :] / np.log(u), dtype=np.float64)


def ranking(key: str, nodes: Sequence[str], weights: Sequence[float]) -> list[str]:
    """``nodes`` by descending score for ``key`` (ties by position); weight-0 nodes left out."""
    w = np.asarray(weights, dtype=np.float64)
    hashes = np.array([stable_hash(n) for n in nodes], dtype=np.uint64)
    row = scores([stable_hash(key)], hashes, w)[0]
    order = np.argsort(-row, kind="stable")
    return [nodes[i] for i in order if w[i] > 0]


def pick(key: str, nodes: Sequence[str], weights: Sequence[float], k: int = 1) -> list[str]:
    """The ``k`` nodes of largest score for ``key`` (the RFC's ``pick_destinations``, fixed)."""
    return ranking(key, nodes, weights)[:k]


class RendezvousAllocator:
    """Replica sets by weighted rendezvous hashing of ``topic/partition``, capacity-checked."""

    def __init__(
        self, state: AllocationState, *, rack_aware: bool = False, bias_correction: bool = True
    ) -> None:
        self._state = state
        self._rack_aware = rack_aware
        self._bias_correction = bias_correction
        self._hashes = np.array([stable_hash(n) for n in state.ids], dtype=np.uint64)
        self._weights: dict[int, NDArray[np.float64]] = {}

    @property
    def state(self) -> AllocationState:
        return self._state

    def weights(self, replication_factor: int) -> NDArray[np.float64]:
        """Per node: the capacity of active nodes, corrected for ``replication_factor``."""
        cached = self._weights.get(replication_factor)
        if cached is not None:
            return cached
        state = self._state
        raw = np.array(
            [
                cap if active else 0
                for cap, active in zip(state.capacity, state.active, strict=True)
            ],
            dtype=np.float64,
        )
        live = raw > 0
        out = raw.copy()
        if self._bias_correction and 1 < replication_factor < int(live.sum()):
            out[live] = corrected_weights(raw[live], replication_factor)
        self._weights[replication_factor] = out
        return out

    def allocate(
        self,
        request: AllocationRequest,
        tx: Transaction | None = None,
        *,
        excluded: Collection[NodeId] = (),
    ) -> tuple[PartitionAssignment, ...]:
        """Place each partition on the top-scoring usable nodes of its key."""

        def place(active: Transaction, banned: frozenset[int]) -> list[list[tuple[int, int]]]:
            first = self._state.next_partition(request.topic)
            weights = self.weights(request.replication_factor)
            out: list[list[tuple[int, int]]] = []
            for start in range(0, request.partitions, _BATCH):
                ids = range(first + start, first + min(request.partitions, start + _BATCH))
                keys = [stable_hash(f"{request.topic}/{p}") for p in ids]
                table = scores(keys, self._hashes, weights)
                width = min(_SHORTLIST, table.shape[1])
                short = np.argpartition(-table, width - 1, axis=1)[:, :width]
                order = np.take_along_axis(
                    short,
                    np.argsort(-np.take_along_axis(table, short, axis=1), axis=1, kind="stable"),
                    axis=1,
                )
                for row in range(len(keys)):
                    out.append(
                        self._partition(active, request, banned, table[row], order[row], len(out))
                    )
            return out

        return run_request(self._state, request, tx, excluded, place)

    def _partition(
        self,
        tx: Transaction,
        request: AllocationRequest,
        banned: frozenset[int],
        row: NDArray[np.float64],
        shortlist: NDArray[np.intp],
        done: int,
    ) -> list[tuple[int, int]]:
        chosen = self._choose(request.replication_factor, banned, shortlist.tolist())
        if chosen is None:  # the shortlist ran out: walk the whole order
            chosen = self._choose(
                request.replication_factor, banned, np.argsort(-row, kind="stable").tolist()
            )
        if chosen is None:
            raise NoPlacementError(
                f"fewer than {request.replication_factor} usable nodes for a partition",
                placed=done * request.replication_factor,
            )
        return [(i, tx.place(i, request.topic, request.partition_size_bytes)) for i in chosen]

    def _choose(self, rf: int, banned: frozenset[int], order: list[int]) -> list[int] | None:
        """The first ``rf`` usable nodes in ``order``, racks spread first when rack-aware;
        None when ``order`` (a shortlist) does not settle the choice."""
        state = self._state
        counts, capacity, active = state.counts, state.capacity, state.active
        chosen: list[int] = []
        if not self._rack_aware:
            for i in order:
                if active[i] and counts[i] < capacity[i] and i not in banned:
                    chosen.append(i)
                    if len(chosen) == rf:
                        return chosen
            return None
        racks = state.rack_ids
        seen: set[int] = set()
        spare: list[int] = []
        for i in order:
            if active[i] and counts[i] < capacity[i] and i not in banned:
                if racks[i] in seen:
                    spare.append(i)
                    continue
                chosen.append(i)
                seen.add(racks[i])
                if len(chosen) == rf:
                    return chosen
        if len(order) < len(state):
            return None  # a rack not seen yet may hold a usable node further down
        chosen.extend(spare[: rf - len(chosen)])
        return chosen if len(chosen) == rf else None
