"""One cycle of the live shedder on a cluster's streaming state.

Why a module of its own
    The stream's triggers and ``pipeline run --replay``'s minutes decide with this one code
    path (:func:`live_cycle`): brokers folded through their newest sample, each bundle's
    newest sample, the shedder's state carried over and a random source seeded by (seed,
    cluster, cycle), so a re-run after a crash, or the replay of the same files, decides the
    same. It reads the state (:mod:`.state`) and needs nothing of Spark.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trimtab.config import SheddingConfig
from trimtab.pipeline.inventory import Node
from trimtab.pipeline.loads import SAMPLE_FIELDS
from trimtab.pipeline.plans import decision_fields
from trimtab.pipeline.stream.rows import finite
from trimtab.pipeline.stream.state import ClusterStream
from trimtab.shedding import (
    BrokerTelemetry,
    CycleResult,
    Folded,
    Limits,
    LoadModel,
    LoadSnapshot,
    NodeSample,
    run_cycle,
    shedder_for,
    snapshot_of,
)
from trimtab.shedding.telemetry import fold

__all__ = [
    "LiveCycle",
    "current_fold",
    "cycle_seed",
    "live_cycle",
    "node_sample",
    "reference_limits",
    "usable",
]


@dataclass(frozen=True, slots=True)
class LiveCycle:
    """One cycle of the live shedder on a cluster: its number, data time, shedder, result,
    the snapshot it decided on and the bundles it left out as no longer reported (they are
    forgotten in the same cycle, so each is named by one cycle only)."""

    cluster: str
    number: int
    at_us: int
    strategy: str
    result: CycleResult
    snapshot: LoadSnapshot
    left_out: tuple[str, ...] = ()

    def rows(self) -> list[dict[str, Any]]:
        """A row per decision, as the stream and ``pipeline run --replay`` write them."""
        std, after = finite(self.result.std), finite(self.result.std_after)
        return [
            {
                "cluster": self.cluster,
                "cycle": self.number,
                "at_us": self.at_us,
                "std": std,
                "std_after": after,
                **decision_fields(decision),
            }
            for decision in self.result.decisions
        ]


def live_cycle(
    cluster: str,
    state: ClusterStream,
    nodes: Mapping[str, Node],
    model: LoadModel,
    config: SheddingConfig,
    strategy: str | None,
    seed: int,
) -> LiveCycle:
    """The next cycle of the live shedder on ``state``: brokers folded through their newest
    sample, each bundle's newest sample, at the newest sample time, with the shedder's state
    carried from the cycle before and a random source seeded by (seed, cluster, cycle).
    The one code path of the stream's triggers and ``pipeline run --replay``'s minutes."""
    reference = reference_limits(nodes, model)
    brokers = []
    for name, info in sorted(nodes.items()):
        if not info.broker:
            continue
        folded = current_fold(state, name, info, model, reference)
        if folded is not None:
            brokers.append(
                BrokerTelemetry(
                    node=name, limits=info.limits, writable=info.writable, folded=folded
                )
            )
    table, times = state.bundles.newest()
    shedder = shedder_for(config, strategy)
    state.cycles += 1
    ttl = config.load_data_ttl_seconds
    built = snapshot_of(brokers, table, model, bundle_times=times, stale_after_s=ttl)
    # What the shedder can no longer see is dropped from the state (same comparison).
    state.bundles.forget(round(built.now * 1e6) - ttl * 1_000_000)
    rng = random.Random(cycle_seed(seed, cluster, state.cycles))
    result = run_cycle(shedder, built.snapshot, state.shedder, now=built.now, rng=rng)
    state.shedder = result.state
    return LiveCycle(
        cluster=cluster,
        number=state.cycles,
        at_us=round(built.now * 1e6),
        strategy=str(shedder.config.strategy),
        result=result,
        snapshot=built.snapshot,
        left_out=built.left_out,
    )


def usable(sample: Mapping[str, Any]) -> bool:
    """False for a sample refused since as a ``conflict`` (kept only to refuse more copies)."""
    return not sample.get("_conflict")


def cycle_seed(seed: int, cluster: str, cycle: int) -> int:
    """The random source of one cycle: the same after a restart, different per cluster."""
    return zlib.crc32(f"{seed}/{cluster}/{cycle}".encode())


def reference_limits(nodes: Mapping[str, Node], model: LoadModel) -> Limits | None:
    """The cluster's reference limits when loads are absolute (as the batch job's loads)."""
    if model.normalisation != "absolute" or not nodes:
        return None
    brokers = [n.limits for n in nodes.values() if n.broker] or [n.limits for n in nodes.values()]
    return Limits.reference(brokers)


def current_fold(
    state: ClusterStream, node: str, info: Node, model: LoadModel, reference: Limits | None
) -> Folded | None:
    """The node's fold through its newest sample: the sealed fold, then the pending samples
    in time order (so a row that landed late but within the watermark counts in order)."""
    pending = state.pending.get(node, {})
    samples = [node_sample(ts, s) for ts, s in sorted(pending.items()) if usable(s)]
    previous = state.folded.get(node)
    if not samples:
        return previous
    return fold(model, samples, info.limits, reference, previous)


def node_sample(ts_us: int, values: Mapping[str, Any]) -> NodeSample:
    return NodeSample(ts=ts_us / 1e6, **{f: float(values[f]) for f in SAMPLE_FIELDS})
