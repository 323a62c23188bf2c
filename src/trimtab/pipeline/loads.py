"""Node loads: per-window means in Spark, then the engine's load formula and moving averages.

Goals
    ``node_load`` holds, per node and window, the mean of each metric, the weighted max and
    its moving average exactly as :class:`trimtab.shedding.LoadModel` computes them, so a
    plan made from the pipeline's loads is the plan the engine would make.

Algorithm
    1. Spark groups accepted ``node_metrics`` by (cluster, node, window start) and averages
       every metric; the last sample time and sample count are kept.
    2. Each node's inventory limits (cores, memory, NIC) are joined in.
    3. ``groupBy(cluster).applyInPandas`` runs the engine per cluster (its reference limits
       for ``absolute`` load are the largest of the cluster's brokers, as the shedding plans
       use, or of all its nodes when it has no broker): the weighted max column-wise with
       :meth:`LoadModel.weighted_max_array`, then, per node in window order, the moving
       averages (first window sets them; then ``h·ema + (1 − h)·x``).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from trimtab.config import SheddingConfig
from trimtab.shedding.load import Limits, LoadModel, NodeSample

__all__ = [
    "METRICS",
    "NODE_LOAD_SCHEMA",
    "SAMPLE_FIELDS",
    "ema_by_group",
    "node_loads",
    "parse_window",
]

#: What the engine's load formula reads (``NodeSample``), plus the disk view.
SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeSample) if f.name != "ts")
METRICS = (*SAMPLE_FIELDS, "disk_free_bytes", "disk_total_bytes")
NODE_LOAD_SCHEMA = (
    "cluster string, node string, window_start timestamp, samples long, last_sample_ts timestamp, "
    + ", ".join(f"{m} double" for m in METRICS)
    + ", weighted_max double, load double, msg_throughput_ema double, latest boolean"
)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_window(text: str) -> str:
    """``"1m"`` -> ``"1 minutes"``; Spark's own forms (``"5 minutes"``) pass through."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd])\s*", text)
    if match:
        return f"{match.group(1)} {_UNITS[match.group(2)]}"
    if re.fullmatch(r"\s*\d+\s+(second|minute|hour|day)s?\s*", text):
        return text.strip()
    raise ValueError(f"bad window {text!r}: use e.g. 30s, 1m, 5m, 1h")


def ema_by_group(values: np.ndarray, groups: np.ndarray, history: float) -> np.ndarray:
    """The moving average of ``values`` restarted at each new group (rows sorted by group).

    ``y0 = x0``; ``y_t = h·y_(t−1) + (1 − h)·x_t``: pandas' ``ewm(alpha=1 − h, adjust=False)``.
    """
    series = pd.Series(values)
    if history >= 1.0:  # all history: the first value stays
        return series.groupby(groups).transform("first").to_numpy()
    smoothed = series.groupby(groups).transform(
        lambda s: s.ewm(alpha=1.0 - history, adjust=False).mean()
    )
    return smoothed.to_numpy()


def node_loads(
    metrics: DataFrame, nodes: DataFrame, config: SheddingConfig, *, window: str = "1m"
) -> DataFrame:
    """Per node and window: metric means, weighted max, load (its moving average)."""
    duration = parse_window(window)
    windowed = metrics.groupBy(
        "cluster", "node", F.window("ts", duration).start.alias("window_start")
    ).agg(
        F.count("*").alias("samples"),
        F.max("ts").alias("last_sample_ts"),
        *[F.mean(m).alias(m) for m in METRICS],
    )
    role = F.lower(F.trim(F.coalesce(F.col("role"), F.lit(""))))
    limits = nodes.select(
        "cluster",
        "node",
        "cores",
        "memory_bytes",
        "nic_bps",
        role.isin("", "broker").alias("_broker"),
    )
    joined = windowed.join(limits, ["cluster", "node"], "inner")
    model = LoadModel.of(config)

    def per_cluster(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.sort_values(["node", "window_start"], kind="stable").reset_index(drop=True)
        cores = frame["cores"].to_numpy(dtype=float)
        memory = frame["memory_bytes"].to_numpy(dtype=float)
        nic = frame["nic_bps"].to_numpy(dtype=float)
        reference = None
        if model.normalisation == "absolute":
            pool = frame["_broker"].to_numpy(dtype=bool)
            pool = pool if pool.any() else np.ones(len(frame), dtype=bool)
            reference = Limits(
                cores=cores[pool].max(), memory_bytes=memory[pool].max(), nic_bps=nic[pool].max()
            )
        columns = {m: frame[m].to_numpy(dtype=float) for m in METRICS}
        weighted = model.weighted_max_array(
            columns, cores=cores, memory_bytes=memory, nic_bps=nic, reference=reference
        )
        groups = frame["node"].to_numpy()
        throughput = columns["throughput_in_bytes_per_s"] + columns["throughput_out_bytes_per_s"]
        out = frame[["cluster", "node", "window_start", "samples", "last_sample_ts", *METRICS]]
        return out.assign(
            weighted_max=weighted,
            load=ema_by_group(weighted, groups, model.history),
            msg_throughput_ema=ema_by_group(throughput, groups, model.history),
            latest=~frame["node"].duplicated(keep="last").to_numpy(),
        )

    return joined.groupBy("cluster").applyInPandas(per_cluster, NODE_LOAD_SCHEMA)
