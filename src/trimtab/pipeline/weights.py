"""Bookie weights: per cluster, each writable bookie's latest disk view, capped weight and
single-pick probability — exactly what the placement engine would draw with.

Algorithm
    1. The latest accepted ``node_metrics`` sample per node gives free and total disk; the
       loads stage already keeps it on each node's latest ``node_load`` window.
    2. The pool is the cluster's writable nodes whose ``role`` is ``bookie`` or empty (read-only
       and down nodes never carry weight, as in the policies); their disk info is
       :func:`trimtab.diskinfo.disk_info` of the samples, so a pool member without a free
       space gets the smallest positive weight, as upstream treats a bookie with no info.
    3. ``groupBy(cluster).applyInPandas`` runs
       :func:`trimtab.placement.weights.pick_probabilities` with the config's cap
       (``bookieMaxMultipleForWeightBasedPlacement`` × median or minimum of the pool).
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from trimtab.cluster import NodeId, Role
from trimtab.config import PlacementConfig
from trimtab.diskinfo import disk_info
from trimtab.pipeline.schemas import serves
from trimtab.placement.weights import WeightRule, pick_probabilities

__all__ = ["BOOKIE_WEIGHTS_SCHEMA", "bookie_weights"]

BOOKIE_WEIGHTS_SCHEMA = (
    "cluster string, node string, sample_ts timestamp, disk_free_bytes long, "
    "disk_total_bytes long, weight double, probability double"
)


def bookie_weights(node_load: DataFrame, nodes: DataFrame, placement: PlacementConfig) -> DataFrame:
    """One row per writable bookie of every cluster (see the module docstring)."""
    latest = node_load.where("latest").select(
        "cluster",
        "node",
        F.col("last_sample_ts").alias("sample_ts"),
        F.col("last_disk_free_bytes").alias("disk_free_bytes"),
        F.col("last_disk_total_bytes").alias("disk_total_bytes"),
    )
    writable = F.lower(F.trim(F.col("state"))) == "writable"
    pool = nodes.where(writable & serves(Role.BOOKIE)).select("cluster", "node")
    joined = pool.join(latest, ["cluster", "node"], "left")
    rule = WeightRule.of(placement)

    def per_cluster(frame: pd.DataFrame) -> pd.DataFrame:
        sizes = (frame[c].astype("float64") for c in ("disk_total_bytes", "disk_free_bytes"))
        disks = zip(frame["node"], *sizes, strict=True)  # NaN: no sample
        free = {n: float(i.free_disk_bytes) for n, i in disk_info(disks).items()}
        chosen = pick_probabilities(free, frame["node"], rule)
        ordered = frame.assign(_node=frame["node"]).sort_values("_node").drop(columns="_node")
        return ordered.assign(
            weight=[chosen[NodeId(n)][0] for n in ordered["node"]],
            probability=[chosen[NodeId(n)][1] for n in ordered["node"]],
        )[
            [
                "cluster",
                "node",
                "sample_ts",
                "disk_free_bytes",
                "disk_total_bytes",
                "weight",
                "probability",
            ]
        ]

    return joined.groupBy("cluster").applyInPandas(per_cluster, BOOKIE_WEIGHTS_SCHEMA)
