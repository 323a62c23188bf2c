"""Node loads: per-window means in Spark, then the engine's load formula and moving averages.

Goals
    ``node_load`` holds, per node and window, the mean of each metric, the weighted max and
    its moving average exactly as :class:`trimtab.shedding.LoadModel` computes them, so a
    plan made from the pipeline's loads is the plan the engine would make.

Algorithm
    1. Spark tags each accepted ``node_metrics`` sample with its window's start (windows are
       aligned to the epoch, as Spark's ``window()`` aligns them) and swaps the cluster and
       node names for integers from the inventory (a broadcast join, no shuffle); times
       travel as microseconds. Only numbers cross to Python, which Arrow hands over fastest;
       the inventory's limits (cores, memory, NIC) go with the function, not with each row.
    2. ``groupBy(cluster).applyInPandas`` gets each cluster's samples once. pandas averages
       every metric per (node, window) and keeps the sample count, the last sample's time and
       its disk view (what ``bookie_weights`` draws from, so it needs no pass of its own):
       with samples about as frequent as windows, a Spark aggregation would shuffle and hash
       as many groups as rows for no reduction, while pandas does it in one vectorised pass.
    3. In the same call the engine runs per cluster (its reference limits for ``absolute``
       load are the largest of the cluster's brokers, as the shedding plans use, or of all
       its nodes when it has no broker): the weighted max column-wise with
       :meth:`LoadModel.weighted_max_array`, then, per node in window order, the moving
       averages (first window sets them; then ``h·ema + (1 − h)·x``).
    4. The names come back by a broadcast join on the node's integer. The integers follow
       the names' order and each cluster's rows leave Python sorted by node and window, so
       every output partition is already in (cluster, node, window_start) order: writing
       needs no sort of its own.
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
    "SAMPLE_FIELDS",
    "ema_by_group",
    "node_loads",
    "parse_window",
    "window_seconds",
]

#: What the engine's load formula reads (``NodeSample``), plus the disk view.
SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeSample) if f.name != "ts")
METRICS = (*SAMPLE_FIELDS, "disk_free_bytes", "disk_total_bytes")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_window(text: str) -> str:
    """``"1m"`` -> ``"1 minutes"``; Spark's own forms (``"5 minutes"``) pass through."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd])\s*", text)
    if match:
        return f"{match.group(1)} {_UNITS[match.group(2)]}"
    if re.fullmatch(r"\s*\d+\s+(second|minute|hour|day)s?\s*", text):
        return text.strip()
    raise ValueError(f"bad window {text!r}: use e.g. 30s, 1m, 5m, 1h")


def window_seconds(text: str) -> int:
    """``"1m"`` or ``"1 minutes"`` -> 60."""
    amount, unit = parse_window(text).split()
    return int(amount) * {"second": 1, "minute": 60, "hour": 3600, "day": 86400}[unit.rstrip("s")]


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
    step_us = window_seconds(window) * 1_000_000
    role = F.lower(F.trim(F.coalesce(F.col("role"), F.lit(""))))
    inventory = (
        nodes.select(
            "cluster",
            "node",
            "cores",
            "memory_bytes",
            "nic_bps",
            role.isin("", "broker").alias("broker"),
        )
        .orderBy("cluster", "node")
        .collect()
    )
    # Nodes and clusters travel to Python as small integers: strings and timestamps are what
    # makes Arrow's hand-over to pandas slow, and every sample would carry them.
    clusters = {name: i for i, name in enumerate(sorted({row["cluster"] for row in inventory}))}
    ids = metrics.sparkSession.createDataFrame(
        [(i, clusters[r["cluster"]], r["cluster"], r["node"]) for i, r in enumerate(inventory)],
        "_node int, _cluster int, cluster string, node string",
    )
    cores = np.array([float(r["cores"]) for r in inventory])
    memory = np.array([float(r["memory_bytes"]) for r in inventory])
    nic = np.array([float(r["nic_bps"]) for r in inventory])
    broker = np.array([bool(r["broker"]) for r in inventory])
    micros = F.unix_micros("ts")
    samples = metrics.join(F.broadcast(ids), ["cluster", "node"], "inner").select(
        "_cluster",
        "_node",
        micros.alias("_ts"),
        (micros - F.pmod(micros, F.lit(step_us))).alias("_window"),
        *(F.col(m).cast("double") for m in METRICS),
    )
    model = LoadModel.of(config)

    def per_cluster(rows: pd.DataFrame) -> pd.DataFrame:
        rows = rows.sort_values(["_node", "_ts"], kind="stable")
        windows = rows.groupby(["_node", "_window"], sort=True)
        frame = windows[list(METRICS)].mean()
        frame["samples"] = windows.size()
        frame["_last"] = windows["_ts"].max()
        disks = windows[["disk_free_bytes", "disk_total_bytes"]].last()
        frame["last_disk_free_bytes"] = disks["disk_free_bytes"]
        frame["last_disk_total_bytes"] = disks["disk_total_bytes"]
        frame = frame.reset_index()
        node = frame["_node"].to_numpy()
        reference = None
        if model.normalisation == "absolute":
            members = np.unique(node)
            pool = members[broker[members]] if broker[members].any() else members
            reference = Limits(
                cores=cores[pool].max(), memory_bytes=memory[pool].max(), nic_bps=nic[pool].max()
            )
        columns = {m: frame[m].to_numpy(dtype=float) for m in METRICS}
        weighted = model.weighted_max_array(
            columns,
            cores=cores[node],
            memory_bytes=memory[node],
            nic_bps=nic[node],
            reference=reference,
        )
        throughput = columns["throughput_in_bytes_per_s"] + columns["throughput_out_bytes_per_s"]
        return frame.assign(
            weighted_max=weighted,
            load=ema_by_group(weighted, node, model.history),
            msg_throughput_ema=ema_by_group(throughput, node, model.history),
            latest=~frame["_node"].duplicated(keep="last").to_numpy(),
        )[list(_NUMERIC_COLUMNS)]

    numeric = samples.groupBy("_cluster").applyInPandas(per_cluster, _NUMERIC_SCHEMA)
    return numeric.join(F.broadcast(ids.drop("_cluster")), "_node").select(
        "cluster",
        "node",
        F.timestamp_micros("_window").alias("window_start"),
        "samples",
        F.timestamp_micros("_last").alias("last_sample_ts"),
        *METRICS,
        "weighted_max",
        "load",
        "msg_throughput_ema",
        "latest",
        "last_disk_free_bytes",
        "last_disk_total_bytes",
    )


#: What the Python side returns (names and node as integers, times in microseconds).
_NUMERIC_SCHEMA = (
    "_node int, _window long, samples long, _last long, "
    + ", ".join(f"{m} double" for m in METRICS)
    + ", weighted_max double, load double, msg_throughput_ema double, latest boolean"
    + ", last_disk_free_bytes long, last_disk_total_bytes long"
)
_NUMERIC_COLUMNS = tuple(c.split()[0] for c in _NUMERIC_SCHEMA.split(", "))
