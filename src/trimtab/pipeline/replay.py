"""``pipeline run --replay``: what the live shedder would have decided, minute by minute.

Goals
    The decisions ``trimtab pipeline stream`` makes, from the command a user types on the
    files at rest: a stream that saw each minute of telemetry land in time decides, at its
    trigger after minute *k*, what cycle *k* of the replay decides on the same files.

Algorithm
    Per cluster (``cogroup(cluster).applyInPandas`` of the accepted ``node_metrics`` and
    ``bundle_metrics`` rows; the inventory, small, as plain values as the stream has it), in
    time order, one shedder cycle at the end of every minute that holds a sample of the
    cluster: the minute's samples are added to a
    :class:`~trimtab.pipeline.stream.state.ClusterStream` (per node its samples, per (bundle,
    broker) its newest), then :func:`~trimtab.pipeline.stream.cycle.live_cycle` decides, the
    stream's own code: brokers folded through their newest sample
    (:func:`trimtab.shedding.telemetry.fold`), each bundle's newest sample, at the newest
    sample time, the shedder's state from the cycle before, the random source seeded by
    (seed, cluster, cycle). The minute's samples are then folded for
    good, as the stream seals a window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from trimtab.config import Config
from trimtab.pipeline.bundle_samples import BUNDLE_VALUES
from trimtab.pipeline.inventory import Inventory, Node
from trimtab.pipeline.loads import SAMPLE_FIELDS
from trimtab.pipeline.plans import PLAN_SCHEMA, stale_rows
from trimtab.pipeline.stream.cycle import LiveCycle, current_fold, live_cycle, reference_limits
from trimtab.pipeline.stream.rows import finite
from trimtab.pipeline.stream.state import ClusterStream
from trimtab.shedding import LoadModel, shedder_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["MINUTE_US", "REPLAY_COLUMNS", "REPLAY_SCHEMA", "replay_plans"]

MINUTE_US = 60_000_000
#: :data:`~trimtab.pipeline.plans.PLAN_SCHEMA` and each cycle's data time (µs since the epoch).
REPLAY_SCHEMA = PLAN_SCHEMA + ", at_us long"
REPLAY_COLUMNS = [c.split()[0] for c in REPLAY_SCHEMA.split(", ")]


def replay_plans(
    node_metrics: DataFrame,
    bundle_metrics: DataFrame,
    inventory: Inventory,
    config: Config,
    *,
    strategy: str | None = None,
    seed: int = 0,
) -> DataFrame:
    """Every cluster's replayed cycles as rows of :data:`REPLAY_SCHEMA`: a ``decision`` or
    ``transfer`` row per decision, a ``cycle`` row per cycle, a ``broker`` row per broker
    (its load at the first and the last cycle) and a ``summary`` row."""
    from pyspark.sql import functions as F

    shedder_for(config.shedding, strategy)  # an unknown strategy fails here, before Spark runs
    nodes = node_metrics.select(
        "cluster", "node", F.unix_micros("ts").alias("ts_us"), *SAMPLE_FIELDS
    )
    bundles = bundle_metrics.select(
        "cluster", "bundle", "broker", F.unix_micros("ts").alias("ts_us"), *BUNDLE_VALUES
    )

    def per_cluster(node_rows: pd.DataFrame, bundle_rows: pd.DataFrame) -> pd.DataFrame:
        some = node_rows if len(node_rows) else bundle_rows
        cluster = str(some["cluster"].iloc[0])
        members = inventory.clusters.get(cluster)
        if not members:
            return pd.DataFrame(columns=REPLAY_COLUMNS)
        rows = replay_cluster(cluster, node_rows, bundle_rows, members, config, strategy, seed)
        return pd.DataFrame(rows, columns=REPLAY_COLUMNS)

    return (
        nodes.groupBy("cluster")
        .cogroup(bundles.groupBy("cluster"))
        .applyInPandas(per_cluster, REPLAY_SCHEMA)
    )


def replay_cluster(
    cluster: str,
    node_rows: pd.DataFrame,
    bundle_rows: pd.DataFrame,
    nodes: Mapping[str, Node],
    config: Config,
    strategy: str | None,
    seed: int,
) -> list[dict[str, Any]]:
    """One cluster's cycles, a minute at a time (see the module docstring)."""
    model = LoadModel.of(config.shedding)
    node_by_minute = dict(iter(node_rows.groupby(node_rows["ts_us"] // MINUTE_US)))
    bundle_by_minute = dict(iter(bundle_rows.groupby(bundle_rows["ts_us"] // MINUTE_US)))
    state = ClusterStream()
    cycles: list[LiveCycle] = []
    for minute in sorted(set(node_by_minute) | set(bundle_by_minute)):
        if (part := node_by_minute.get(minute)) is not None:
            records: list[dict[Any, Any]] = part.to_dict("records")
            for rec in records:
                values = {f: rec[f] for f in SAMPLE_FIELDS}
                state.pending.setdefault(str(rec["node"]), {})[int(rec["ts_us"])] = values
        if (part := bundle_by_minute.get(minute)) is not None:
            state.bundles.absorb(part.assign(_source_file=None))  # accepted rows: no repeats
        cycles.append(live_cycle(cluster, state, nodes, model, config.shedding, strategy, seed))
        _seal(state, nodes, model)
    return _rows(cluster, cycles)


def _seal(state: ClusterStream, nodes: Mapping[str, Node], model: LoadModel) -> None:
    """Fold the pending samples into each node's fold: later minutes only add to them."""
    reference = reference_limits(nodes, model)
    for node in sorted(state.pending):
        info = nodes.get(node)
        folded = None if info is None else current_fold(state, node, info, model, reference)
        if folded is not None:
            state.folded[node] = folded
    state.pending.clear()


def _rows(cluster: str, cycles: list[LiveCycle]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for cycle in cycles:
        for decision in cycle.rows():
            std = decision.pop("std")
            rows.append(_row(**decision, std_before=std))
        outcome = cycle.result.outcome
        rows.append(
            _row(
                cluster=cluster,
                kind="cycle",
                cycle=cycle.number,
                at_us=cycle.at_us,
                label=outcome.label.value,
                reason=outcome.reason.value,
                std_before=finite(cycle.result.std),
                std_after=finite(cycle.result.std_after),
                note=outcome.note,
            )
        )
    if not cycles:
        return rows
    first, last = cycles[0], cycles[-1]
    for broker in sorted(set(first.snapshot.loads) | set(last.snapshot.loads)):
        before, after = first.snapshot.loads.get(broker), last.snapshot.loads.get(broker)
        rows.append(
            _row(
                cluster=cluster,
                kind="broker",
                broker=broker,
                load_before=None if before is None else before.load,
                load_after=None if after is None else after.load,
            )
        )
    # Each bundle left out is forgotten in its cycle: one name per bundle that stopped
    # reporting during the replay (again if it came back and stopped again).
    rows += stale_rows(cluster, sorted(name for c in cycles for name in c.left_out))
    stds = [c.result.std for c in cycles if finite(c.result.std) is not None]
    rows.append(
        _row(
            cluster=cluster,
            kind="summary",
            std_before=stds[0] if stds else None,
            std_after=stds[-1] if stds else None,
            note=f"replay: {len(cycles)} cycles, strategy {last.strategy}",
        )
    )
    return rows


def _row(**values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(REPLAY_COLUMNS)
    row.update(values)
    return row
