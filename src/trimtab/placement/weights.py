"""Disk weights: free bytes, capped against hot spots, optionally weighted down by disk load.

Goals (BOOKKEEPER-950, reference §1; the seed's §1.1-1.2)
    Nodes fill at the pace of their capacity: a node is picked in proportion to its free disk
    space, so small disks no longer turn read-only first.

Constraints (the weight rule, :func:`capped_weights`, over one *candidate pool*)
    * weight = free bytes (``BookieInfo.free_disk_bytes``); no info or 0 -> the smallest positive
      weight of the pool, so an unknown node is still picked, rarely; all zero -> uniform.
    * Cap: ``k × basis`` with k = ``bookieMaxMultipleForWeightBasedPlacement`` (k <= 0: no
      cap). ``basis`` is the *median of the pool's raw weights, zeros included* (upstream Impl;
      an even count averages the two middle values) or, as the seed's alternative, the
      *minimum* positive weight. A cap of 0 (most of the pool unknown) caps nothing.
    * The pool is what the policy draws from: every writable node, one rack, or one region,
      excluded nodes included (as upstream Impl). Read-only and departed nodes are never in a
      pool, so they never carry weight nor move the median.
    * Load-aware (the seed's third approach, option): a node whose disk I/O utilisation ``u``
      exceeds the threshold ``t`` (0.7) has its free bytes scaled by ``(1-u)/(1-t)``: full
      weight at t, none at 100 % busy (then the smallest positive weight, as unknown nodes).

Worked examples (the seed)
    free 100/100/200/200/300/100 GB -> single-pick shares .1/.1/.2/.2/.3/.1;
    free 200/200/300/500/1000 GB, 2 × median (300) -> 200/200/300/500/600;
    2 × minimum (200) -> 200/200/300/400/400.
"""

from __future__ import annotations

import random
import statistics
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate

from trimtab.cluster import NodeId
from trimtab.config.bookkeeper import CapBasis, PlacementConfig, Sampling
from trimtab.config.core import Config
from trimtab.diskinfo import BookieInfo
from trimtab.placement.sampling import Plan, inclusion_probabilities, systematic_sample
from trimtab.placement.selection import Sampler, Weights

__all__ = [
    "DiskWeights",
    "WeightRule",
    "capped_weights",
    "disk_weights",
    "load_factor",
    "pick_probabilities",
    "weights_for",
]

#: Current I/O utilisation (0..1) per node, read at every ``update_bookie_info``.
LoadSource = Callable[[], Mapping[NodeId, float]]


def capped_weights(
    raw: Sequence[float], *, multiple: float = 3, basis: str = CapBasis.MEDIAN
) -> list[float]:
    """The effective weights of one pool (see the module docstring for the rule)."""
    if not raw:
        return []
    positive = [w for w in raw if w > 0]
    if not positive:
        return [1.0] * len(raw)
    smallest = min(positive)
    out = [float(w) if w > 0 else float(smallest) for w in raw]
    ref = statistics.median(raw) if basis == CapBasis.MEDIAN else smallest
    cap = multiple * ref
    if multiple > 0 and cap > 0:
        out = [min(w, cap) for w in out]
    return out


def pick_probabilities(
    free: Mapping[NodeId, float], pool: Iterable[str], rule: WeightRule
) -> dict[NodeId, tuple[float, float]]:
    """``node -> (capped weight, single-pick probability)`` over a whole writable ``pool``.

    What a policy would use to draw one node from the cluster (nodes missing from ``free``
    get the smallest positive weight): the figures ``trimtab watch`` exports and the
    pipeline's ``bookie_weights`` table holds.
    """
    members = sorted(NodeId(n) for n in pool)
    weights = capped_weights(
        [float(free.get(n, 0.0)) for n in members], multiple=rule.multiple, basis=rule.basis
    )
    total = sum(weights)
    return {n: (w, w / total if total else 0.0) for n, w in zip(members, weights, strict=True)}


def load_factor(utilization: float, threshold: float = 0.7) -> float:
    """1 up to ``threshold``, then linearly down to 0 at 100 % busy."""
    if utilization <= threshold or threshold >= 1.0:
        return 1.0
    return max(0.0, (1.0 - utilization) / (1.0 - threshold))


@dataclass(frozen=True, slots=True)
class WeightRule:
    """The cap and the sampling mode (``successive`` or ``proportional``)."""

    multiple: float = 3
    basis: str = CapBasis.MEDIAN
    sampling: str = Sampling.PROPORTIONAL

    @classmethod
    def of(cls, placement: PlacementConfig) -> WeightRule:
        return cls(
            multiple=placement.bookie_max_multiple_for_weight_based_placement,
            basis=placement.weight_cap_basis,
            sampling=placement.weighted_sampling,
        )


class _WeightedSampler:
    """Draws by cumulative weight (bisect), O(log n) per draw."""

    __slots__ = ("_cum", "_pool", "_total", "_weight")

    def __init__(self, pool: tuple[NodeId, ...], weights: Sequence[float]) -> None:
        self._pool = pool
        self._weight = dict(zip(pool, weights, strict=True))
        self._cum = list(accumulate(weights))
        self._total = self._cum[-1] if self._cum else 0.0

    def draw(self, rng: random.Random) -> NodeId:
        k = bisect_right(self._cum, rng.random() * self._total)
        return self._pool[min(k, len(self._pool) - 1)]

    def choice(self, candidates: Sequence[NodeId], rng: random.Random) -> NodeId:
        return _choose(candidates, [self._weight[n] for n in candidates], rng)


def _draw(members: Sequence[int], weights: Sequence[float], rng: random.Random) -> int:
    cum = list(accumulate(weights[i] for i in members))
    k = bisect_right(cum, rng.random() * cum[-1])
    return members[min(k, len(members) - 1)]


def _choose(candidates: Sequence[NodeId], weights: Sequence[float], rng: random.Random) -> NodeId:
    cum = list(accumulate(weights))
    k = bisect_right(cum, rng.random() * cum[-1])
    return candidates[min(k, len(candidates) - 1)]


class DiskWeights:
    """The :class:`~trimtab.placement.selection.Weights` of free disk space (see above)."""

    __slots__ = ("_effective", "raw", "rule")

    def __init__(self, raw: Mapping[NodeId, float], rule: WeightRule | None = None) -> None:
        self.raw = dict(raw)
        self.rule = rule if rule is not None else WeightRule()
        self._effective: dict[tuple[NodeId, ...], list[float]] = {}  # per pool, weights fixed

    def __repr__(self) -> str:
        return f"DiskWeights({len(self.raw)} nodes, {self.rule!r})"

    def effective(self, pool: Sequence[NodeId]) -> list[float]:
        """The capped weights of ``pool``'s members, in pool order (cached per pool)."""
        key = tuple(pool)
        found = self._effective.get(key)
        if found is None:
            rule = self.rule
            raw = [self.raw.get(n, 0.0) for n in key]
            found = capped_weights(raw, multiple=rule.multiple, basis=rule.basis)
            if len(self._effective) < 64:
                self._effective[key] = found
        return found

    def sampler(self, pool: tuple[NodeId, ...]) -> Sampler:
        return _WeightedSampler(pool, self.effective(pool))

    def choice(self, candidates: Sequence[NodeId], rng: random.Random) -> NodeId:
        return _choose(candidates, self.effective(candidates), rng)

    def plan(
        self,
        nodes: tuple[NodeId, ...],
        excluded: Collection[NodeId],
        size: int,
        rng: random.Random,
        group_of: Mapping[NodeId, str] | None = None,
    ) -> Plan | None:
        """An inclusion-proportional sample of ``size`` of ``nodes`` minus ``excluded`` (cap
        over all of ``nodes``); None in successive mode.

        With ``group_of`` (node -> rack) and at least ``size`` racks, the sample is of *racks*
        (rack weight = sum of its nodes'), then one node per chosen rack by weight: node i of
        rack r is included with ``π_r · w_i / W_r``, which is ``E · w_i / Σw`` unless the rack
        is certain (``π_r = 1``): then one-per-rack allows no more than ``w_i / W_r``."""
        if self.rule.sampling != Sampling.PROPORTIONAL:
            return None
        weights = self.effective(nodes)
        keep = [i for i, n in enumerate(nodes) if n not in excluded]
        racks: dict[str, list[int]] = {}
        if group_of is not None:
            for i in keep:
                racks.setdefault(group_of[nodes[i]], []).append(i)
        if len(racks) < max(size, 2):
            pi = inclusion_probabilities([weights[i] for i in keep], size)
            return Plan([nodes[keep[i]] for i in systematic_sample(pi, rng)])
        groups = list(racks.values())
        totals = [sum(weights[i] for i in g) for g in groups]
        chosen = systematic_sample(inclusion_probabilities(totals, size), rng)
        return Plan([nodes[_draw(groups[g], weights, rng)] for g in chosen])


def weights_for(
    info: Mapping[NodeId, BookieInfo],
    placement: PlacementConfig,
    utilization: Mapping[NodeId, float] | None = None,
) -> DiskWeights:
    """Disk weights from the latest info, load-aware when the config says so."""
    raw: dict[NodeId, float] = {n: float(i.free_disk_bytes) for n, i in info.items()}
    if placement.load_aware_weighting_enabled and utilization:
        t = placement.io_utilization_threshold
        raw = {n: w * load_factor(utilization.get(n, 0.0), t) for n, w in raw.items()}
    return DiskWeights(raw, WeightRule.of(placement))


def disk_weights(
    config: Config | PlacementConfig | None = None, load: LoadSource | None = None
) -> Callable[[Mapping[NodeId, BookieInfo]], Weights]:
    """The weights factory for a policy (``make_policy`` passes it when
    ``diskWeightBasedPlacementEnabled``); ``load`` feeds load-aware weighting."""
    if config is None:
        config = Config()
    placement = config.placement if isinstance(config, Config) else config

    def build(info: Mapping[NodeId, BookieInfo]) -> Weights:
        return weights_for(info, placement, load() if load is not None else None)

    return build
