"""One cluster's streaming state across micro-batches, and its one-text persistence.

Why a module of its own
    Spark's state store keeps one column per cluster; this is what it holds: per node the
    samples not yet sealed and the engine's fold through the sealed ones, per (bundle,
    broker) its newest sample, and the shedder's own state with its cycle count. It is
    plain Python (the state function's body, and ``pipeline run --replay``'s too), and its
    JSON must read back what an earlier checkpoint wrote.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from trimtab.pipeline.bundle_samples import BundleSamples
from trimtab.shedding import Folded, NodeSample, Prediction, ShedderState
from trimtab.shedding.decisions import frozen_map

__all__ = ["ClusterStream"]


@dataclass(slots=True)
class ClusterStream:
    """A cluster's streaming state: per node its pending samples and sealed fold, per
    (bundle, broker) its newest sample, and the shedder's state (see the module docstring)."""

    sealed_us: int = 0  # samples before this time are folded into ``folded`` and final
    pending: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    folded: dict[str, Folded] = field(default_factory=dict)
    bundles: BundleSamples = field(default_factory=BundleSamples)
    shedder: ShedderState = field(default_factory=ShedderState)
    cycles: int = 0

    # -- persistence as one JSON text (the state store's one column) --------------------------
    def dumps(self) -> str:
        return json.dumps(
            {
                "sealed_us": self.sealed_us,
                "pending": {
                    n: {str(ts): s for ts, s in by_ts.items()} for n, by_ts in self.pending.items()
                },
                "folded": {n: _folded_doc(f) for n, f in self.folded.items()},
                "bundle_samples": self.bundles.encode(),
                "shedder": _shedder_doc(self.shedder),
                "cycles": self.cycles,
            },
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, text: str) -> ClusterStream:
        doc = json.loads(text)
        return cls(
            sealed_us=int(doc["sealed_us"]),
            pending={
                n: {int(ts): s for ts, s in by_ts.items()} for n, by_ts in doc["pending"].items()
            },
            folded={n: _folded_of(f) for n, f in doc["folded"].items()},
            bundles=(
                BundleSamples.decode(doc["bundle_samples"])
                if "bundle_samples" in doc
                else BundleSamples.of_slots(doc["bundles"])  # a checkpoint of trimtab <= 0.x
            ),
            shedder=_shedder_of(doc["shedder"]),
            cycles=int(doc["cycles"]),
        )


def _folded_doc(folded: Folded) -> dict[str, Any]:
    return asdict(folded)


def _folded_of(doc: Mapping[str, Any]) -> Folded:
    return Folded(
        last=NodeSample(**doc["last"]),
        weighted_max_ema=float(doc["weighted_max_ema"]),
        msg_throughput_ema=float(doc["msg_throughput_ema"]),
        samples=int(doc["samples"]),
    )


def _shedder_doc(state: ShedderState) -> dict[str, Any]:
    """Every field of the shedder's state as JSON values (a field added later comes along)."""
    doc: dict[str, Any] = {}
    for f in fields(state):
        value = getattr(state, f.name)
        if f.name == "predictions":
            value = [asdict(p) for p in value]
        elif isinstance(value, Mapping):
            value = dict(value)
        doc[f.name] = value
    return doc


def _shedder_of(doc: Mapping[str, Any]) -> ShedderState:
    values: dict[str, Any] = {}
    for f in fields(ShedderState):
        value = doc[f.name]
        if f.name == "predictions":
            values[f.name] = tuple(Prediction(**p) for p in value)
        elif isinstance(value, Mapping):
            values[f.name] = frozen_map((k, float(v)) for k, v in value.items())
        else:
            values[f.name] = int(value)
    return ShedderState(**values)
