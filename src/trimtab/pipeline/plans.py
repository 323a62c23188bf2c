"""Shedding plans per cluster: the Pulsar shedder run on each cluster's loads and bundles.

Algorithm
    1. Brokers are the nodes whose ``role`` is ``broker`` or empty and whose state is not
       ``down``; their per-window metric means (``node_load``) and inventory limits go to one
       side of a cogroup, each bundle's latest accepted sample to the other.
    2. Spark keeps each broker's newest window and its window count (``node_load`` already
       holds the moving averages the engine's :meth:`LoadModel.fold` would reach, tested
       equal), so the Python side does one :meth:`LoadModel.update` per broker, not one per
       window. ``cogroup(cluster).applyInPandas`` builds a :class:`LoadSnapshot` and runs
       :func:`trimtab.shedding.plan` with the chosen strategy from the latest sample time, so
       clusters are planned in parallel across executors, never in a driver loop.
    3. The result is one long table: a ``summary`` row per cluster (std before → after, and
       the plan's ``warning`` when its moves would raise the std), a ``decision`` row per
       decision and a ``transfer`` row per bundle move, with the std the shedder expects
       after that cycle. For the report, a ``broker`` row per broker gives its load now and
       where the plan leaves it once the moves have settled (``load_before``,
       ``load_after``), and a ``cycle`` row per cycle the settled std before and after that
       cycle's moves (the summary's measure, so cycle 1's before and the last cycle's after
       are the summary's) with the cycle's outcome in ``label``/``reason``.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from trimtab.config import SheddingConfig
from trimtab.pipeline.loads import SAMPLE_FIELDS
from trimtab.shedding import (
    BrokerLoad,
    BundleLoads,
    Limits,
    LoadModel,
    LoadSnapshot,
    LoadStats,
    NodeSample,
    Plan,
    load_per_byte,
    plan,
    shedder_for,
    shift,
)

__all__ = ["PLAN_COLUMNS", "PLAN_SCHEMA", "shedding_plans"]

PLAN_SCHEMA = (
    "cluster string, kind string, cycle int, label string, reason string, broker string, "
    "bundle string, source string, destination string, throughput double, std_before double, "
    "std_after double, note string, load_before double, load_after double, warning string"
)
PLAN_COLUMNS = [c.split()[0] for c in PLAN_SCHEMA.split(", ")]


def shedding_plans(
    node_load: DataFrame,
    bundles: DataFrame,
    nodes: DataFrame,
    config: SheddingConfig,
    *,
    strategy: str | None = None,
    cycles: int = 1,
    until_balanced: bool = False,
    seed: int = 0,
) -> DataFrame:
    """The plan of every cluster as rows of :data:`PLAN_SCHEMA` (see the module docstring).

    ``bundles`` holds the newest accepted sample per (cluster, bundle, broker), as ingest
    summarises it (:attr:`CheckedTable.latest`).
    """
    role = F.lower(F.trim(F.coalesce(F.col("role"), F.lit(""))))
    brokers = nodes.where(role.isin("", "broker")).select(
        "cluster",
        "node",
        "cores",
        "memory_bytes",
        "nic_bps",
        F.lower(F.col("state")).alias("state"),
    )
    # node_load marks each node's newest window already; only the window count is summed.
    counts = node_load.groupBy("cluster", "node").agg(F.count("*").alias("windows"))
    newest = node_load.where("latest").select(
        "cluster", "node", "window_start", *SAMPLE_FIELDS, "load", "msg_throughput_ema"
    )
    newest = newest.join(counts, ["cluster", "node"])
    windows = newest.join(brokers, ["cluster", "node"], "inner")
    # A bundle that moved has a newest sample per broker it had; the newest one wins (ties
    # by broker name, so the choice is stable).
    newest_first = Window.partitionBy("cluster", "bundle").orderBy(
        F.col("ts").desc(), F.col("broker")
    )
    latest = (
        bundles.withColumn("_n", F.row_number().over(newest_first))
        .where(F.col("_n") == 1)
        .drop("_n")
    )
    model = LoadModel.of(config)
    shedder = shedder_for(config, strategy)

    def per_cluster(broker_rows: pd.DataFrame, bundle_rows: pd.DataFrame) -> pd.DataFrame:
        if broker_rows.empty:
            return pd.DataFrame(columns=PLAN_COLUMNS)
        cluster = str(broker_rows["cluster"].iloc[0])
        limits: dict[str, Limits] = {}
        states: dict[str, str] = {}
        records: list[dict[Any, Any]] = broker_rows.sort_values("node").to_dict("records")
        for row in records:
            limits[str(row["node"])] = Limits(
                cores=float(row["cores"]),
                memory_bytes=float(row["memory_bytes"]),
                nic_bps=float(row["nic_bps"]),
            )
            states[str(row["node"])] = str(row["state"])
        reference = Limits.reference(limits.values())
        loads = [_broker_load(model, row, limits[str(row["node"])], reference) for row in records]
        ordered = bundle_rows.sort_values("bundle", kind="stable")
        table = BundleLoads.from_arrays(
            ordered["bundle"].astype(str).tolist(),
            ordered["broker"].astype(str).tolist(),
            throughput_in=ordered["throughput_in_bytes_per_s"].to_numpy(dtype=float),
            throughput_out=ordered["throughput_out_bytes_per_s"].to_numpy(dtype=float),
            msg_rate_in=ordered["msg_in_per_s"].to_numpy(dtype=float),
            msg_rate_out=ordered["msg_out_per_s"].to_numpy(dtype=float),
        )
        available = [n for n, s in states.items() if s != "down"]
        snapshot = LoadSnapshot.of(loads, table, available=available)
        stamps = [load.updated_at for load in loads]
        if not ordered.empty:
            stamps.append(pd.Timestamp(ordered["ts"].max()).timestamp())
        now = max(stamps, default=0.0)
        result = plan(
            snapshot,
            shedder,
            now=now,
            cycles=cycles,
            until_balanced=until_balanced,
            rng=random.Random(seed),
        )
        rows = [
            _row(
                cluster,
                "summary",
                std_before=result.std_before,
                std_after=result.std_after,
                note=f"{len(result.results)} cycles, strategy {result.strategy}",
                warning=result.warning,
            )
        ]
        for cycle, outcome in enumerate(result.results, start=1):
            for decision in outcome.decisions:
                move = decision.move
                rows.append(
                    _row(
                        cluster,
                        "transfer" if move is not None else "decision",
                        cycle=cycle,
                        label=decision.label.value,
                        reason=decision.reason.value,
                        broker=decision.broker,
                        bundle=move.bundle if move else None,
                        source=move.source if move else None,
                        destination=move.destination if move else None,
                        throughput=move.throughput if move else None,
                        std_before=outcome.std,
                        std_after=outcome.std_after,
                        note=decision.note,
                    )
                )
        rows.extend(_load_rows(cluster, snapshot, result))
        return pd.DataFrame(rows, columns=PLAN_COLUMNS)

    return (
        windows.groupBy("cluster")
        .cogroup(latest.groupBy("cluster"))
        .applyInPandas(per_cluster, PLAN_SCHEMA)
    )


def _broker_load(
    model: LoadModel, row: dict[Any, Any], limits: Limits, reference: Limits
) -> BrokerLoad:
    """What ``model.fold`` gives after all of a broker's windows, from its newest window."""
    sample = NodeSample(
        ts=pd.Timestamp(row["window_start"]).timestamp(),
        **{f: float(row[f]) for f in SAMPLE_FIELDS},
    )
    latest = model.update(None, str(row["node"]), sample, limits, reference)
    return replace(
        latest,
        weighted_max_ema=float(row["load"]),
        msg_throughput_ema=float(row["msg_throughput_ema"]),
        samples=int(row["windows"]),
    )


def _load_rows(cluster: str, snapshot: LoadSnapshot, result: Plan) -> list[dict[str, object]]:
    """``broker`` rows (load now → settled after the plan) and ``cycle`` rows (settled std).

    The settled loads are replayed cycle by cycle with the same ratios and :func:`shift` that
    :func:`trimtab.shedding.plan` uses, so the last cycle ends at ``result.loads_after``.
    """
    available = set(snapshot.available or ())
    ratios = load_per_byte([b for name, b in snapshot.loads.items() if name in available])
    rows = [
        _row(
            cluster,
            "broker",
            broker=broker,
            load_before=load,
            load_after=result.loads_after.get(broker),
        )
        for broker, load in sorted(result.loads_before.items())
    ]
    settled = dict(result.loads_before)
    for cycle, outcome in enumerate(result.results, start=1):
        before = LoadStats.of(settled.values()).std if settled else None
        settled = shift(settled, outcome.moves, ratios)
        after = LoadStats.of(settled.values()).std if settled else None
        decision = outcome.outcome
        rows.append(
            _row(
                cluster,
                "cycle",
                cycle=cycle,
                label=decision.label.value,
                reason=decision.reason.value,
                std_before=before,
                std_after=after,
                note=decision.note,
            )
        )
    return rows


def _row(cluster: str, kind: str, **values: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(PLAN_COLUMNS)
    row.update(cluster=cluster, kind=kind, **values)
    return row
