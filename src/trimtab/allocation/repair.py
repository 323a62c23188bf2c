"""Even out a batch's own new replicas before they are committed (moving them is free).

Goals
    End a batch with every node as close to its capacity share as the rules allow. A greedy
    pass cannot always get there: a node whose share is one replica of *every* partition
    (an 8-core node among four 4-core ones, RF 3) loses the partitions whose last slots were
    filled while it was momentarily ahead, and never gets them back. Redpanda fixes such
    leftovers afterwards by moving data (its partition balancer); a plan not yet committed
    can fix them before any data exists.

Constraints (a move never makes a partition worse at a level ranked above replica counts)
    Only replicas of the batch move. The receiving node must be usable (active, a free slot,
    not excluded, its disk not overflowed) and not hold the partition already. With racks, its
    rack must hold no more of the partition's other replicas than the leaving node's rack. The
    leaving replica must sit on one of its node's heaviest cores, so core weights stay within
    one.

Algorithm (Redpanda's counts rebalancing: topic first, then totals; every move improves)
    1. Topics (when topic-aware): move a replica of a topic from a node above ``⌈q⌉`` (its
       share q of the topic, rounded up) to one with room below ``⌈q⌉``, or from a node above
       ``⌊q⌋`` to one below ``⌊q⌋``.
    2. Totals: ``excess(i) = countᵢ − tᵢ`` over active nodes, tᵢ the node's reachable share
       (:func:`~trimtab.allocation.shares.target_shares`: ``total·capᵢ/Σcap`` unless a rack
       or the partition count caps it); move from a donor
       to the node most below its share when ``excess(donor) − excess(receiver) > 1`` (Σ
       excess² drops) and the receiver's topic score is at least the donor's.
    Which replica moves (replica-set diversity): among the partitions a giver may send to a
    taker (at most 16 looked at), the one whose other nodes share the fewest partitions of its
    topic, then of all topics, with the taker, net of those they share with the giver; and
    among givers and takers tied on counts (up to 4 each, 2 in step 2), the pair whose best
    move costs least. Moving the first eligible partition instead formed replica clusters:
    after three nodes joined three, 135 of 150 partitions sat on two replica sets.
    The search is bounded so that a pass over a million replicas takes seconds: 32 takers
    per giver, 32 receivers and donors per step 2 move; only replicas on a donor's heaviest
    cores are looked at, and disks without room for the batch's smallest partition take none.
    Step 1 runs topic by topic (a move of one topic leaves the others' bands alone) until no
    move helps; step 2 then repeats while a move helps. Step 1 lowers a topic's distance to
    its band and step 2 never raises it while lowering Σ excess², so both end.

Worked example: nodes of 4, 4, 4, 4 and 8 cores, one topic of 77 RF3 partitions (231
replicas; the 8-core node's share is 77, one per partition). The greedy pass leaves it at 71
and four partitions with three 4-core replicas each; six moves, each from the 4-core node
most above its share of 38.5, bring it to 77 and the others to 38 or 39.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

import numpy as np

from trimtab.allocation.model import PartitionAssignment, Replica
from trimtab.allocation.replica_constraints import disk_fits, topic_band
from trimtab.allocation.shares import pinned_shares, target_shares
from trimtab.allocation.state import AllocationState, Transaction

__all__ = ["even_out"]

_EPS = 1e-9
_TIES = 4  # tied givers and takers weighed against each other for replica-set diversity
_TOTAL_TIES = 2  # the same for the totals step (slower per move, and fewer ties there)
_LOOK = 32  # takers per giver, receivers and donors per step, looked at for a move
_SCAN = 16  # movable partitions weighed per (giver, taker)


def _tied(ranked: list[int], key: Mapping[int, object], first: int, ties: int = _TIES) -> list[int]:
    """``first`` and up to ``ties − 1`` nodes after it in ``ranked`` with the same key."""
    start = ranked.index(first)
    return [i for i in ranked[start:] if key[i] == key[first]][:ties]


def even_out(
    state: AllocationState,
    tx: Transaction,
    made: Sequence[PartitionAssignment],
    *,
    rack_aware: bool,
    topic_aware: bool,
    hard_disk_ratio: float = 0.95,
    excluded: frozenset[int] = frozenset(),
    max_moves: int | None = None,
    free: Collection[tuple[int, int]] | None = None,
    pinned: frozenset[int] = frozenset(),
) -> list[PartitionAssignment]:
    """Move replicas of ``made`` (held by the state, changed through ``tx``) towards capacity
    shares, at most ``max_moves`` of them; returns the assignments as they end, in order.

    ``made`` is usually the batch's new partitions; existing ones may be passed too (that is
    Redpanda's counts rebalancing, and each of their moves copies data). ``free`` are
    (index in ``made``, node index) replicas whose move copies nothing more: they reached
    that node earlier in the same plan, so moving them on changes where an earlier move
    lands (a → b → c is one move a → c). Among equally good moves those go first, and so
    does a replica this pass moved already. None (a batch of new partitions): every move is
    as free as any other. ``pinned`` nodes' counts are their targets (a full disk: it takes
    nothing its disk cannot hold, so the others are balanced among themselves, with the
    shares of what they hold; with racks, a pinned node's replicas keep their slots in its
    rack).
    """
    batch = _Batch(state, tx, made, rack_aware, topic_aware, hard_disk_ratio, excluded)
    if pinned:
        batch.pin(pinned)
    batch.tracks_free = free is not None
    for k, i in free or ():
        batch.free.setdefault(i, {})[k] = None
    if not batch.whole:
        return batch.out
    budget = max_moves if max_moves is not None else -1
    if topic_aware:
        for topic in sorted(batch.by_topic):
            while batch.moves != budget and batch.topic_move(topic):
                pass
    while batch.moves != budget and batch.total_move():
        pass
    return batch.out


class _Batch:
    """The batch's assignments, which node holds which of them, and the two kinds of move."""

    def __init__(
        self,
        state: AllocationState,
        tx: Transaction,
        made: Sequence[PartitionAssignment],
        rack_aware: bool,
        topic_aware: bool,
        hard_disk_ratio: float,
        excluded: frozenset[int],
    ) -> None:
        self.state, self.tx, self.out = state, tx, list(made)
        self.rack_aware, self.topic_aware = rack_aware, topic_aware
        self.hard, self.excluded = hard_disk_ratio, excluded
        self.live = [i for i in range(len(state)) if state.active[i] and state.capacity[i] > 0]
        self.whole = sum(state.capacity[i] for i in self.live)
        self.total = sum(state.counts[i] for i in self.live)
        # the reachable shares (capacity shares where racks and distinct nodes allow them)
        self.target = target_shares(state, rack_aware=rack_aware, total=self.total)
        # insertion-ordered sets (dicts), so that every scan is deterministic without sorting
        self.holding: dict[int, dict[int, None]] = {i: {} for i in range(len(state))}
        self.by_topic: dict[str, list[int]] = {}
        # the same by core: a replica may leave only one of its node's heaviest cores
        self.on_core: dict[tuple[int, int], dict[int, None]] = {}
        for k, a in enumerate(self.out):
            self.by_topic.setdefault(a.topic, []).append(k)
            for r in a.replicas:
                i = state.index[r.node]
                self.holding[i][k] = None
                self.on_core.setdefault((i, r.core), {})[k] = None
        self.by_capacity = sorted(self.live, key=lambda i: -state.capacity[i])
        self.moves = 0
        self._pairs: list[list[int]] | None = None
        self.topic_holding: dict[str, dict[int, set[int]]] = {}
        self.topic_totals: dict[str, int] = {}
        self.smallest = min((a.size_bytes for a in self.out), default=0)
        # per giver and topic: its partitions that may leave it (see _leaving)
        self._leave_memo: dict[int, dict[str, list[list[int]]]] = {}
        # per node: the partitions whose replica there moves for free (see even_out)
        self.free: dict[int, dict[int, None]] = {}
        self.tracks_free = False

    @property
    def pairs(self) -> list[list[int]]:
        """How many partitions of the batch each pair of nodes shares (built when first
        needed: a batch that needs no move never pays for it)."""
        if self._pairs is None:
            n, index = len(self.state), self.state.index
            flat = np.zeros(n * n, dtype=np.int64)
            by_width: dict[int, list[list[int]]] = {}
            for a in self.out:
                by_width.setdefault(len(a.replicas), []).append([index[r.node] for r in a.replicas])
            for rows in by_width.values():
                matrix = np.array(rows, dtype=np.int64)
                for x, y in itertools.permutations(range(matrix.shape[1]), 2):
                    flat += np.bincount(matrix[:, x] * n + matrix[:, y], minlength=n * n)
            made: list[list[int]] = flat.reshape(n, n).tolist()  # read cell by cell: lists win
            self._pairs = made
            return made
        return self._pairs

    def topic_total(self, topic: str) -> int:
        """Replicas of ``topic`` (moves do not change it)."""
        total = self.topic_totals.get(topic)
        if total is None:
            total = self.topic_totals[topic] = sum(self.state.topic_counts.get(topic, {}).values())
        return total

    def pin(self, nodes: frozenset[int]) -> None:
        """Targets with ``nodes`` held at their counts: the others share the rest."""
        counts = self.state.counts
        rest = self.total - sum(counts[i] for i in nodes if i in self.live)
        self.target = pinned_shares(
            self.state, rack_aware=self.rack_aware, pinned=nodes, total=rest
        )
        for i in nodes:
            self.target[i] = float(counts[i])

    def excess(self, i: int) -> float:
        return self.state.counts[i] - self.target[i]

    def can_take(self, i: int) -> bool:
        """Active, a free slot, not excluded, and room on the disk for the batch's smallest
        partition (a disk at its limit is passed over without looking at its partitions)."""
        state = self.state
        used = state.disk_used[i] + state.assigned_bytes[i] + self.smallest
        return (
            state.active[i]
            and state.counts[i] < state.capacity[i]
            and i not in self.excluded
            and disk_fits(used, state.disk_total[i], self.hard)
        )

    def topic_move(self, topic: str) -> bool:
        """One move bringing ``topic``'s counts closer to their bands ⌊q⌋..⌈q⌉: from a node
        above ⌈q⌉ to one with room below ⌈q⌉, or from above ⌊q⌋ to below ⌊q⌋."""
        state = self.state
        counts = state.topic_counts.get(topic, {})
        replicas, whole = sum(counts.values()), state.active_capacity

        capacity = state.capacity
        bands: dict[int, tuple[int, int]] = {}

        def band(i: int) -> tuple[int, int]:  # worked out once per node and call
            found = bands.get(i)
            if found is None:
                share = replicas * capacity[i]
                found = bands[i] = (share // whole, -(-share // whole))
            return found

        nodes = {i for i in counts if state.active[i]}  # inactive nodes keep their replicas
        for i in self.by_capacity:  # nodes whose band starts at one or more
            if replicas * state.capacity[i] < whole:
                break
            nodes.add(i)
        over = [i for i in nodes if counts.get(i, 0) > band(i)[1]]
        under = [i for i in nodes if counts.get(i, 0) < band(i)[0] and self.can_take(i)]
        if not over and not under:
            return False
        if over:  # anyone with room in its band may take from them
            givers = over
            takers = [i for i in self.live if counts.get(i, 0) < band(i)[1] and self.can_take(i)]
        else:  # only nodes above ⌊q⌋ may give to those below it
            givers = [i for i in nodes if counts.get(i, 0) > band(i)[0]]
            takers = under
        givers.sort(key=lambda i: (-(counts.get(i, 0) - band(i)[1]), -self.excess(i), i))
        takers.sort(key=lambda i: (counts.get(i, 0) - band(i)[0], self.excess(i), i))
        giver_key = {v: (counts.get(v, 0) - band(v)[1], self.excess(v)) for v in givers}
        taker_key = {u: (counts.get(u, 0) - band(u)[0], self.excess(u)) for u in takers}
        for v in givers:
            if not self._leaving(v, topic):
                continue
            for u in takers[:_LOOK]:
                if u != v and self.movable(v, u, topic) is not None:
                    return self._move_among(
                        _tied(givers, giver_key, v), _tied(takers, taker_key, u), topic
                    )
        return False

    def total_move(self) -> bool:
        """One move from a node above its capacity share to one below that lowers Σ excess²
        and leaves the topic level no worse."""
        counts, target = self.state.counts, self.target
        excess = {i: counts[i] - target[i] for i in self.live}
        # the first _LOOK of each ranking, and the tie partners _tied may look at after them
        # (heapq's n smallest/largest are the sorted lists' first n, ties in the same order)
        first = _LOOK + _TOTAL_TIES
        receivers = heapq.nsmallest(
            first, (i for i in self.live if self.can_take(i)), key=excess.__getitem__
        )
        donors = heapq.nlargest(
            first, (i for i in self.live if self.holding[i]), key=excess.__getitem__
        )
        for u in receivers[:_LOOK]:
            if excess[u] >= 0:
                return False
            for v in donors[:_LOOK]:
                if excess[v] - excess[u] <= 1 + _EPS:
                    break
                if self.movable(v, u, None) is not None:
                    return self._move_among(
                        _tied(donors, excess, v, _TOTAL_TIES),
                        _tied(receivers, excess, u, _TOTAL_TIES),
                        None,
                    )
        return False

    def _move_among(self, givers: list[int], takers: list[int], topic: str | None) -> bool:
        """The move of least pair cost between tied givers and takers (both rank alike on
        counts, so the choice only affects which replica sets form)."""
        best: tuple[tuple[int, int, int], int, int, int] | None = None
        for v in givers:
            for u in takers:
                if u == v:
                    continue
                found = self._cheapest(v, u, topic)
                if found is not None and (best is None or found[0] < best[0]):
                    best = (found[0], found[1], v, u)
        assert best is not None
        self.move(best[1], best[2], best[3])
        return True

    def movable(self, v: int, u: int, topic: str | None) -> int | None:
        """The batch partition (of ``topic`` if given) whose replica on v may move to u and
        whose other nodes share the fewest partitions with u (net of those they leave with v),
        first in the scan on ties: pair counts stay even (no replica clusters)."""
        found = self._cheapest(v, u, topic)
        return None if found is None else found[1]

    def _cheapest(
        self, v: int, u: int, topic: str | None
    ) -> tuple[tuple[int, int, int], int] | None:
        """(cost, partition) of :meth:`movable`'s choice, at most :data:`_SCAN` looked at: a
        free replica first (it copies nothing more), then the pair cost."""
        best, best_cost = None, (0, 0, 0)
        pairs = self.pairs
        free = self.free.get(v, {})
        for seen, (k, others) in enumerate(self._candidates(v, u, topic), 1):
            shared = self._topic_holding(self.out[k].topic)
            at_u, at_v = shared.get(u, set()), shared.get(v, set())
            in_topic = sum(len(at_u & shared.get(o, set())) - len(at_v & shared[o]) for o in others)
            at_u_pairs, at_v_pairs = pairs[u], pairs[v]
            paid = int(k not in free)
            cost = (paid, in_topic, sum(at_u_pairs[o] - at_v_pairs[o] for o in others))
            if best is None or cost < best_cost:
                best, best_cost = k, cost
            if seen == _SCAN:
                break
        return None if best is None else (best_cost, best)

    def _topic_holding(self, topic: str) -> dict[int, set[int]]:
        """The batch partitions of ``topic`` each node holds (built when first needed)."""
        held = self.topic_holding.get(topic)
        if held is None:
            held = self.topic_holding[topic] = {}
            index = self.state.index
            for k in self.by_topic[topic]:
                for r in self.out[k].replicas:
                    held.setdefault(index[r.node], set()).add(k)
        return held

    def _leaving(self, v: int, topic: str) -> list[list[int]]:
        """``topic``'s batch partitions on v, by the weight of the core their replica there
        sits on, heaviest first: a replica leaves the heaviest core that has one that can go
        (worked out once per giver until a move touches it: a topic move weighs up to 32
        takers for each giver, and most givers have none: the scan per pair was 90 % of the
        pass). Ranking by level, not "heaviest core only", matters when the heaviest core
        holds none that can go (core 0's reserve weight, or only partitions the taker
        already has): such a node would otherwise never give a replica (issue 43)."""
        memo = self._leave_memo.setdefault(v, {})
        found = memo.get(topic)
        if found is None:
            state = self.state
            donor, weights = state.ids[v], state.weights[v]
            levels: dict[int, list[int]] = {}
            for k in sorted(self._topic_holding(topic).get(v, ())):
                core = next(r.core for r in self.out[k].replicas if r.node == donor)
                levels.setdefault(weights[core], []).append(k)
            found = [levels[w] for w in sorted(levels, reverse=True)]
            memo[topic] = found
        return found

    def _candidates(self, v: int, u: int, topic: str | None) -> Iterator[tuple[int, list[int]]]:
        """The batch partitions whose replica on v may move to u, with their other nodes:
        the free ones on v's heaviest cores when any fits, else the others."""
        weights = self.state.weights[v]
        levels: Iterable[Iterable[int]]
        if topic is not None:  # the topic's partitions on v, heaviest cores first
            levels = self._leaving(v, topic)
        else:  # the batch partitions on v, heaviest cores first (lazily: most stop at one)
            holding = sorted(
                (c for c in range(len(weights)) if self.on_core.get((v, c))),
                key=lambda c: -weights[c],
            )
            levels = (
                itertools.chain.from_iterable(self.on_core[(v, c)] for c in same)
                for _, same in itertools.groupby(holding, key=lambda c: weights[c])
            )
        free = self._free_on_top(v, topic)
        if free:  # the free replicas are looked at as a level of their own, before the others
            levels = itertools.chain([free], levels)
        for level in levels:  # a lighter core only when no heavier one has a candidate
            found = False
            for k, others in self._fits(level, v, u, topic):
                found = True
                yield k, others
            if found:
                return

    def _free_on_top(self, v: int, topic: str | None) -> list[int]:
        """The free replicas on v (of ``topic`` if given) that sit on one of its heaviest
        cores (so core weights stay within one, as for any other leaving replica)."""
        free = self.free.get(v)
        if not free:
            return []
        state = self.state
        donor, weights = state.ids[v], state.weights[v]
        top = max(weights)
        out = []
        for k in free:
            a = self.out[k]
            if topic is not None and a.topic != topic:
                continue
            if weights[next(r.core for r in a.replicas if r.node == donor)] == top:
                out.append(k)
        return out

    def _fits(
        self, scan: Iterable[int], v: int, u: int, topic: str | None
    ) -> Iterator[tuple[int, list[int]]]:
        """Those of ``scan`` whose replica on v may move to u, with their other nodes."""
        state = self.state
        donor, receiver = state.ids[v], state.ids[u]
        rack_u, rack_v = state.racks[u], state.racks[v]
        for k in scan:
            a = self.out[k]
            if any(r.node == receiver for r in a.replicas):
                continue
            used = state.disk_used[u] + state.assigned_bytes[u] + a.size_bytes
            if not disk_fits(used, state.disk_total[u], self.hard):
                continue
            if self.rack_aware and rack_u != rack_v:
                others = [state.racks[state.index[r.node]] for r in a.replicas if r.node != donor]
                if others.count(rack_u) > others.count(rack_v):
                    continue
            if topic is None and self.topic_aware:
                counts = state.topic_counts.get(a.topic, {})
                replicas, whole = self.topic_total(a.topic), state.active_capacity
                gain = topic_band(counts.get(u, 0), state.capacity[u], replicas, whole)
                keep = topic_band(counts.get(v, 0) - 1, state.capacity[v], replicas, whole)
                if gain < keep:
                    continue
            yield k, [state.index[r.node] for r in a.replicas if r.node != donor]

    def move(self, k: int, v: int, u: int) -> None:
        state = self.state
        old = self.out[k]
        self.tx.remove(old)
        core = state.least_loaded_core(u)
        replicas = tuple(
            Replica(state.ids[u], core) if r.node == state.ids[v] else r for r in old.replicas
        )
        new = PartitionAssignment(old.topic, old.partition, replicas, old.size_bytes)
        self.tx.add(new)
        self.out[k] = new
        gone = next(r.core for r in old.replicas if r.node == state.ids[v])
        del self.on_core[(v, gone)][k]
        self.on_core.setdefault((u, core), {})[k] = None
        pairs = self.pairs
        for o in (state.index[r.node] for r in old.replicas if r.node != state.ids[v]):
            pairs[v][o] -= 1
            pairs[o][v] -= 1
            pairs[u][o] += 1
            pairs[o][u] += 1
        held = self.topic_holding.get(old.topic)
        if held is not None:
            held[v].discard(k)
            held.setdefault(u, set()).add(k)
        del self.holding[v][k]
        self.holding[u][k] = None
        if self.tracks_free:
            self.free.get(v, {}).pop(k, None)
            self.free.setdefault(u, {})[k] = None  # moving it on copies nothing more
        self.moves += 1
        self._leave_memo.pop(v, None)  # v and u changed holdings and core weights, no other
        self._leave_memo.pop(u, None)
