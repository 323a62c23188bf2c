"""The engine's shedding cycle on a cluster's rows, written plainly with pandas and the
engine's own functions: what the stream tests expect the pipeline to decide.

Each broker of the inventory gets its samples folded in time order (no streaming state),
each bundle its newest sample, then one cycle with destinations (``run_cycle``) from the
shedder state given and the stream's seed for the cycle."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd

from trimtab.cluster import NodeState, Role
from trimtab.pipeline.loads import SAMPLE_FIELDS
from trimtab.pipeline.stream import cycle_seed
from trimtab.shedding import (
    BrokerTelemetry,
    BundleLoads,
    Limits,
    LoadModel,
    NodeSample,
    ShedderState,
    run_cycle,
    snapshot_of,
)
from trimtab.shedding.telemetry import fold

#: What a node sample carries besides its time (``NodeSample``'s fields).
NODE_FIELDS = list(SAMPLE_FIELDS)
#: The columns of :func:`decision_rows`.
DECISION_COLUMNS = ["label", "reason", "broker", "bundle", "source", "destination"]


def engine_cycle(
    model: LoadModel,
    shedder: Any,
    cluster: str,
    nodes: pd.DataFrame,
    samples: pd.DataFrame,
    bundles: pd.DataFrame,
    *,
    state: ShedderState | None = None,
    cycle: int = 1,
) -> Any:
    """One cycle of ``shedder`` on ``cluster``'s rows of the inventory ``nodes``, the
    ``node_metrics`` ``samples`` and the ``bundle_metrics`` ``bundles``."""
    telemetry = []
    for row in nodes[nodes["cluster"] == cluster].sort_values("node").to_dict("records"):
        if not Role(str(row["role"] or "").lower()).serves(Role.BROKER):
            continue
        limits = Limits(
            cores=float(row["cores"]),
            memory_bytes=float(row["memory_bytes"]),
            nic_bps=float(row["nic_bps"]),
        )
        mine = samples[(samples["cluster"] == cluster) & (samples["node"] == row["node"])]
        folded = fold(
            model,
            [
                NodeSample(ts=pd.Timestamp(s["ts"]).timestamp(), **{f: s[f] for f in NODE_FIELDS})
                for s in mine.sort_values("ts", kind="stable").to_dict("records")
            ],
            limits,
            None,
        )
        if folded is not None:
            writable = NodeState.parse(str(row["state"])) is NodeState.WRITABLE
            telemetry.append(
                BrokerTelemetry(node=row["node"], limits=limits, writable=writable, folded=folded)
            )
    newest = (
        bundles[bundles["cluster"] == cluster]
        .sort_values(["ts", "broker"], ascending=[False, True])
        .drop_duplicates("bundle")
        .sort_values("bundle")
    )
    table = BundleLoads.from_arrays(
        newest["bundle"].tolist(),
        newest["broker"].tolist(),
        throughput_in=newest["throughput_in_bytes_per_s"].to_numpy(float),
        throughput_out=newest["throughput_out_bytes_per_s"].to_numpy(float),
        msg_rate_in=newest["msg_in_per_s"].to_numpy(float),
        msg_rate_out=newest["msg_out_per_s"].to_numpy(float),
    )
    times = [pd.Timestamp(ts).timestamp() for ts in newest["ts"]]
    ttl = shedder.config.load_data_ttl_seconds
    built = snapshot_of(telemetry, table, model, bundle_times=times, stale_after_s=ttl)
    rng = random.Random(cycle_seed(0, cluster, cycle))
    return run_cycle(shedder, built.snapshot, state or ShedderState(), now=built.now, rng=rng)


def decision_rows(result: Any) -> list[tuple[Any, ...]]:
    """A cycle's decisions as rows of :data:`DECISION_COLUMNS`."""
    return [
        (
            d.label.value,
            d.reason.value,
            d.broker,
            d.move.bundle if d.move else None,
            d.move.source if d.move else None,
            d.move.destination if d.move else None,
        )
        for d in result.decisions
    ]
