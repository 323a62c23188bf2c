"""The reader's feed into a real placement policy, and the weights that policy then uses.

:class:`PolicyFeed` is the :class:`~trimtab.diskinfo.BookieInfoSink` that ``trimtab watch``
hands the reader: it forwards membership and disk info to a placement policy (built by
:func:`trimtab.systems.bookkeeper.placement_setup.make_policy` from the config) and remembers
the writable pool, so
that :class:`PlacementWeightsCollector` can export, per writable node, the capped weight and the
single-pick probability the policy would draw with — upstream's "expose the weightage it is giving
to each of the bookies".
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from trimtab.cluster import NodeId
from trimtab.config import PlacementConfig
from trimtab.diskinfo import BookieInfo, BookieInfoSink, InfoMap
from trimtab.placement.weights import WeightRule, pick_probabilities

__all__ = ["PlacementWeightsCollector", "PolicyFeed"]


class PolicyFeed:
    """Forwards the reader's calls to ``policy`` and keeps what the weights export needs."""

    def __init__(self, policy: BookieInfoSink, placement: PlacementConfig) -> None:
        self.policy = policy
        self.enabled = placement.disk_weight_based_placement_enabled
        self.rule = WeightRule.of(placement)
        self._lock = threading.Lock()  # the reader's thread writes, the metrics thread reads
        self._writable: frozenset[NodeId] = frozenset()
        self._free: dict[NodeId, float] = {}

    def on_cluster_changed(
        self, writable: Iterable[str], readonly: Iterable[str]
    ) -> AbstractSet[NodeId]:
        rw, ro = frozenset(NodeId(n) for n in writable), frozenset(NodeId(n) for n in readonly)
        left = self.policy.on_cluster_changed(rw, ro)
        with self._lock:
            self._writable = rw - ro
            self._free = {n: f for n, f in self._free.items() if n in self._writable}
        return set(left)

    def update_bookie_info(self, info: InfoMap) -> None:
        self.policy.update_bookie_info(info)
        with self._lock:
            self._free = {NodeId(n): float(BookieInfo(*i).free_disk_bytes) for n, i in info.items()}

    def weights(self) -> dict[NodeId, tuple[float, float]]:
        """Per writable node: (weight, single-pick probability) as the policy would draw.

        With disk weights off the policy draws uniformly, and so does this answer.
        """
        with self._lock:
            pool, free = self._writable, dict(self._free)
        if not self.enabled:
            return {n: (1.0, 1.0 / len(pool)) for n in sorted(pool)} if pool else {}
        return pick_probabilities(free, pool, self.rule)


class PlacementWeightsCollector(Collector):
    """``trimtab_placement_weight{node}`` and ``trimtab_placement_pick_probability{node}``."""

    def __init__(self, feed: PolicyFeed) -> None:
        self._feed = feed

    def collect(self) -> Iterable[Metric]:
        weight = GaugeMetricFamily(
            "trimtab_placement_weight",
            "Weight the placement policy gives the node (capped free bytes; 1 when uniform)",
            labels=["node"],
        )
        probability = GaugeMetricFamily(
            "trimtab_placement_pick_probability",
            "Probability the node is drawn when the policy picks one node from the cluster",
            labels=["node"],
        )
        for node, (w, p) in self._feed.weights().items():
            weight.add_metric([node], w)
            probability.add_metric([node], p)
        yield weight
        yield probability
