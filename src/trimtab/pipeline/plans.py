"""Shedding plans per cluster: the Pulsar shedder run on each cluster's loads and bundles.

Algorithm
    1. Brokers are the nodes whose ``role`` is ``broker`` or empty. Each one's newest
       ``node_load`` window already holds the engine's moving averages through its last sample
       (:mod:`trimtab.pipeline.loads`); Spark adds its sample count, its inventory limits and
       state, and that last sample itself: the newest accepted ``node_metrics`` row, which
       ingest summarised per node while checking, so no telemetry is read again here. Each
       bundle's newest accepted sample goes to the other side of a cogroup.
    2. ``cogroup(cluster).applyInPandas`` hands these plain values to the engine:
       :func:`trimtab.shedding.telemetry.snapshot_of` builds the :class:`LoadSnapshot`, the
       same function ``trimtab shed`` builds its snapshot with, and
       :func:`trimtab.shedding.advise` (the call ``trimtab shed`` makes) plans ``balanced``
       (or the strategy named) and upstream's configured shedder from the newest sample time,
       and picks the plan to recommend.
       Clusters are planned in parallel across executors, never in a driver loop.
    3. The result is one long table: a ``summary`` row per cluster (std before → after, and
       the plan's ``warning`` when its moves would raise the std; a cluster with no writable
       broker, or none with load data, gets only this row, its note saying why nothing is
       done and no std), a ``decision`` row per
       decision and a ``transfer`` row per bundle move, with the std the shedder expects
       after that cycle. For the report, a ``broker`` row per broker gives its load now and
       where the plan leaves it once the moves have settled (``load_before``,
       ``load_after``), and a ``cycle`` row per cycle the settled std before and after that
       cycle's moves, as the plan records them (:attr:`Plan.settled`), with the cycle's
       outcome in ``label``/``reason``. The rows are the recommended plan's; a
       ``recommendation`` row holds the sentence and an ``upstream`` row what upstream's
       configured shedder would do (its std after, its transfer count in ``cycle``); a
       ``stale`` row counts the bundles left out as no longer reported (see
       :func:`~trimtab.shedding.telemetry.snapshot_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from trimtab.cluster import NodeState, Role
from trimtab.config import SheddingConfig
from trimtab.pipeline.loads import SAMPLE_FIELDS
from trimtab.pipeline.schemas import serves
from trimtab.shedding import (
    BrokerTelemetry,
    BundleLoads,
    Decision,
    Folded,
    Limits,
    LoadModel,
    NodeSample,
    Plan,
    advise,
    shedder_for,
    snapshot_of,
)
from trimtab.shedding.recommend import Recommendation

__all__ = [
    "DECISION_COLUMNS",
    "PLAN_COLUMNS",
    "PLAN_SCHEMA",
    "STALE_NAMED",
    "TRANSFER_COLUMNS",
    "decision_fields",
    "inventory_rows",
    "shedding_plans",
    "stale_rows",
]

PLAN_SCHEMA = (
    "cluster string, kind string, cycle int, label string, reason string, broker string, "
    "bundle string, source string, destination string, throughput double, std_before double, "
    "std_after double, note string, load_before double, load_after double, warning string"
)
PLAN_COLUMNS = [c.split()[0] for c in PLAN_SCHEMA.split(", ")]
#: How many of the bundles left out as no longer reported run.json and status.json name.
STALE_NAMED = 5
#: The ``decisions`` and ``transfers`` tables' columns (``pipeline run`` and the stream).
DECISION_COLUMNS = ("cluster", "cycle", "label", "reason", "broker", "bundle", "note")
TRANSFER_COLUMNS = (
    "cluster",
    "cycle",
    "bundle",
    "source",
    "destination",
    "throughput",
    "reason",
    "std_after",
)


def shedding_plans(
    node_load: DataFrame,
    bundles: DataFrame,
    nodes: DataFrame,
    config: SheddingConfig,
    *,
    samples: DataFrame,
    strategy: str | None = None,
    cycles: int = 1,
    until_balanced: bool = False,
    seed: int = 0,
) -> DataFrame:
    """The plan of every cluster as rows of :data:`PLAN_SCHEMA` (see the module docstring).

    ``bundles`` holds the newest accepted sample per (cluster, bundle, broker) and ``samples``
    the newest accepted ``node_metrics`` row per (cluster, node), as ingest summarises them
    (:attr:`CheckedTable.latest`).
    """
    model = LoadModel.of(config)
    shedder_for(config, strategy)  # an unknown strategy fails here, before Spark runs

    def per_cluster(broker_rows: pd.DataFrame, bundle_rows: pd.DataFrame) -> pd.DataFrame:
        if broker_rows.empty:
            return pd.DataFrame(columns=PLAN_COLUMNS)
        table, times = _bundle_loads(bundle_rows)
        built = snapshot_of(
            _telemetry(broker_rows),
            table,
            model,
            bundle_times=times,
            stale_after_s=config.load_data_ttl_seconds,
        )
        cluster = str(broker_rows["cluster"].iloc[0])
        stale = stale_rows(cluster, built.left_out)
        advice = advise(
            built.snapshot,
            config,
            now=built.now,
            cycles=cycles,
            until_balanced=until_balanced,
            seed=seed,
            explicit=strategy,
        )
        if advice.recommendation is None:
            # no load to compare: one summary row saying why, no std (never NaN)
            note = f"nothing to do because {advice.nothing_to_shed}"
            return pd.DataFrame(
                [_row(cluster, kind="summary", note=note), *stale], columns=PLAN_COLUMNS
            )
        chosen = advice.recommendation
        rows = [*_rows(cluster, chosen.plan), *_advice_rows(cluster, chosen), *stale]
        return pd.DataFrame(rows, columns=PLAN_COLUMNS)

    brokers = _brokers(node_load, samples, nodes)
    return (
        brokers.groupBy("cluster")
        .cogroup(_newest_bundles(bundles).groupBy("cluster"))
        .applyInPandas(per_cluster, PLAN_SCHEMA)
    )


def inventory_rows(nodes: DataFrame) -> DataFrame:
    """Accepted ``nodes`` rows with what the shedding plans read of them: limits, state (lower
    case) and whether the node is a broker."""
    return nodes.select(
        "cluster",
        "node",
        "cores",
        "memory_bytes",
        "nic_bps",
        F.lower(F.col("state")).alias("state"),
        serves(Role.BROKER).alias("broker"),
    )


def _brokers(node_load: DataFrame, samples: DataFrame, nodes: DataFrame) -> DataFrame:
    """Per broker with samples: limits, state, sample count, the moving averages through its
    last sample (its newest ``node_load`` window) and that sample's values (``ts`` and
    :data:`SAMPLE_FIELDS`, from ``samples``: the newest accepted row per node)."""
    brokers = inventory_rows(nodes).where("broker").drop("broker")
    newest = node_load.where("latest").select(
        "cluster",
        "node",
        F.col("last_sample_ts").alias("ts"),
        "load",
        "msg_throughput_ema",
        F.col("folded_samples").alias("samples"),
    )
    last = samples.select(
        "cluster", "node", "ts", *(F.col(f).cast("double").alias(f) for f in SAMPLE_FIELDS)
    )
    # The newest window's last sample is the node's newest accepted sample: same time.
    return newest.join(brokers, ["cluster", "node"]).join(last, ["cluster", "node", "ts"])


def _newest_bundles(bundles: DataFrame) -> DataFrame:
    """A bundle that moved has a newest sample per broker it had; the newest one wins (ties
    by broker name, so the choice is stable)."""
    newest_first = Window.partitionBy("cluster", "bundle").orderBy(
        F.col("ts").desc(), F.col("broker")
    )
    return (
        bundles.withColumn("_n", F.row_number().over(newest_first))
        .where(F.col("_n") == 1)
        .drop("_n")
    )


def _telemetry(rows: pd.DataFrame) -> list[BrokerTelemetry]:
    """The engine's input per broker, from the rows of :func:`_brokers`."""
    records: list[dict[Any, Any]] = rows.sort_values("node").to_dict("records")
    return [
        BrokerTelemetry(
            node=str(row["node"]),
            limits=Limits(
                cores=float(row["cores"]),
                memory_bytes=float(row["memory_bytes"]),
                nic_bps=float(row["nic_bps"]),
            ),
            writable=NodeState.parse(str(row["state"])) is NodeState.WRITABLE,
            folded=Folded(
                last=NodeSample(
                    ts=pd.Timestamp(row["ts"]).timestamp(),
                    **{f: float(row[f]) for f in SAMPLE_FIELDS},
                ),
                weighted_max_ema=float(row["load"]),
                msg_throughput_ema=float(row["msg_throughput_ema"]),
                samples=int(row["samples"]),
            ),
        )
        for row in records
    ]


def _bundle_loads(rows: pd.DataFrame) -> tuple[BundleLoads, np.ndarray]:
    """The cluster's bundles in name order, and each one's sample time (seconds)."""
    ordered = rows.sort_values("bundle", kind="stable")
    table = BundleLoads.from_arrays(
        ordered["bundle"].astype(str).tolist(),
        ordered["broker"].astype(str).tolist(),
        throughput_in=ordered["throughput_in_bytes_per_s"].to_numpy(dtype=float),
        throughput_out=ordered["throughput_out_bytes_per_s"].to_numpy(dtype=float),
        msg_rate_in=ordered["msg_in_per_s"].to_numpy(dtype=float),
        msg_rate_out=ordered["msg_out_per_s"].to_numpy(dtype=float),
    )
    stamps = pd.to_datetime(ordered["ts"], utc=True).dt.tz_localize(None)
    return table, stamps.to_numpy(dtype="datetime64[us]").astype(np.int64) / 1e6


def _rows(cluster: str, result: Plan) -> list[dict[str, object]]:
    """A cluster's rows of :data:`PLAN_SCHEMA`: summary, decisions, brokers, cycles."""
    summary = _row(
        cluster,
        kind="summary",
        std_before=result.std_before,
        std_after=result.std_after,
        note=f"{len(result.results)} cycles, strategy {result.strategy}",
        warning=result.warning,
    )
    return [summary, *_decision_rows(cluster, result), *_load_rows(cluster, result)]


def _decision_rows(cluster: str, result: Plan) -> list[dict[str, object]]:
    """A ``transfer`` row per move and a ``decision`` row per other decision, by cycle."""
    rows = []
    for cycle, outcome in enumerate(result.results, start=1):
        for decision in outcome.decisions:
            rows.append(
                _row(
                    cluster,
                    cycle=cycle,
                    std_before=outcome.std,
                    std_after=outcome.std_after,
                    **decision_fields(decision),
                )
            )
    return rows


def decision_fields(decision: Decision) -> dict[str, object]:
    """A decision as the plan and stream tables hold it: ``kind`` (``transfer`` for a move,
    else ``decision``), its label and reason, and the move's bundle, brokers and bytes/s."""
    move = decision.move
    return {
        "kind": "transfer" if move is not None else "decision",
        "label": decision.label.value,
        "reason": decision.reason.value,
        "broker": decision.broker,
        "bundle": move.bundle if move else None,
        "source": move.source if move else None,
        "destination": move.destination if move else None,
        "throughput": move.throughput if move else None,
        "note": decision.note,
    }


def _load_rows(cluster: str, result: Plan) -> list[dict[str, object]]:
    """``broker`` rows (load now → settled after the plan) and ``cycle`` rows (settled std
    before and after each cycle, as the plan recorded them)."""
    rows = [
        _row(
            cluster,
            kind="broker",
            broker=broker,
            load_before=load,
            load_after=result.loads_after.get(broker),
        )
        for broker, load in sorted(result.loads_before.items())
    ]
    for cycle, (outcome, (before, after)) in enumerate(
        zip(result.results, result.cycle_stds, strict=True), start=1
    ):
        decision = outcome.outcome
        rows.append(
            _row(
                cluster,
                kind="cycle",
                cycle=cycle,
                label=decision.label.value,
                reason=decision.reason.value,
                std_before=before,
                std_after=after,
                note=decision.note,
            )
        )
    return rows


def _advice_rows(cluster: str, advice: Recommendation) -> list[dict[str, object]]:
    """The ``recommendation`` row (label: the strategy to run, or ``none``; note: the
    sentence) and upstream's ``upstream`` row (std before → after, transfers in ``cycle``)."""
    up = advice.upstream
    return [
        _row(
            cluster,
            kind="recommendation",
            label=advice.plan.strategy if advice.apply else "none",
            note=advice.sentence,
        ),
        _row(
            cluster,
            kind="upstream",
            label=up.strategy,
            cycle=len(up.transfers),
            std_before=up.std_before,
            std_after=up.std_after,
        ),
    ]


def stale_rows(cluster: str, left_out: Sequence[str]) -> list[dict[str, object]]:
    """A ``stale`` row when bundles were left out as no longer reported: how many (in
    ``cycle``) and the first :data:`STALE_NAMED` by name (``note``, one per line)."""
    if not left_out:
        return []
    names = "\n".join(left_out[:STALE_NAMED])
    return [_row(cluster, kind="stale", cycle=len(left_out), note=names)]


def _row(cluster: str, **values: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(PLAN_COLUMNS)
    row.update(cluster=cluster, **values)
    return row
