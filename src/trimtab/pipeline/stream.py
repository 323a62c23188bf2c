"""``trimtab pipeline stream``: the shedder followed live on Spark Structured Streaming.

Goals
    Decide every trigger from the telemetry that has landed so far, as PIP-220's shedder
    decides every minute, with the batch job's schemas, row rules and quarantine reasons, and
    with a restart from the checkpoint that neither loses nor repeats a decision.

Algorithm
    1. One file stream per (telemetry table, format) under ``INPUT/node_metrics/`` and
       ``INPUT/bundle_metrics/`` (CSV files read whole, so that each file's header names its
       columns, as ingest matches them), and one over ``INPUT/load_reports/``, whose files
       become node and bundle rows by the batch job's own function
       (:func:`trimtab.pipeline.load_reports.report_rows`); all typed and checked by the row
       rules of :mod:`trimtab.pipeline.rules` (and the key rule ``bad_bundle``) exactly as
       ingest does, then unioned into one wide frame with a watermark on ``ts``.
    2. ``groupBy(cluster).applyInPandasWithState``: per cluster, Spark's state store keeps
       * per node, the samples not yet *sealed* (newer than the watermark's window), and the
         engine's fold (:func:`trimtab.shedding.telemetry.fold`: the moving averages with
         ``loadBalancerHistoryResourcePercentage``) through the sealed ones. Windows are
         sealed as the watermark passes their end; each sealed window is emitted once as a
         ``node_load`` row (metric means, sample count, load after its last sample). A row
         older than the sealed point is refused as ``late`` (a rule the batch job does not
         need); any later row is folded in its time order, so within the watermark a late
         file changes nothing against the batch job;
       * per (bundle, broker), its newest sample;
       * the shedder's own state (:class:`~trimtab.shedding.ShedderState`: hit counts,
         cooldowns, recently unloaded bundles and brokers) and its cycle count.
       Membership (``unknown_cluster``, ``unknown_node``) and repeats (``duplicate``,
       ``conflict``) are decided there, with the batch job's rule names and reasons.
       Each trigger with new rows for a cluster runs one shedder cycle on it (the engine's
       :func:`~trimtab.shedding.run_cycle`, as :class:`~trimtab.shedding.follow.Follower`),
       at the newest sample time, with a random source seeded by (seed, cluster, cycle): a
       batch Spark re-runs after a crash decides the same. That cycle is :func:`live_cycle`,
       which ``pipeline run --replay`` (:mod:`trimtab.pipeline.replay`) runs once a minute.
    3. ``foreachBatch`` publishes batch N: ``decisions``, ``transfers``, ``quarantine`` and
       ``node_load`` under ``OUT/<table>/batch=N/``, each renamed into place from a staging
       directory, then ``status.json`` (written aside and renamed), then the marker
       ``OUT/_batches/N``. A batch whose marker exists is skipped; a table already in place
       is not written again. With Spark's checkpoint this makes each decision appear once.
    4. The driver polls the inventory (``INPUT/nodes/``) and restarts the query from its
       checkpoint when its files change, so the state function sees the new inventory.
"""

from __future__ import annotations

import json
import math
import random
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trimtab.cluster import NodeState
from trimtab.config import Config, SheddingConfig
from trimtab.pipeline.bundle_samples import BUNDLE_VALUES, BundleSamples, Outcome
from trimtab.pipeline.loads import METRICS, SAMPLE_FIELDS, window_seconds
from trimtab.pipeline.plans import (
    DECISION_COLUMNS,
    STALE_NAMED,
    TRANSFER_COLUMNS,
    decision_fields,
    inventory_rows,
)
from trimtab.shedding import (
    BrokerTelemetry,
    CycleResult,
    Folded,
    Limits,
    LoadModel,
    LoadSnapshot,
    NodeSample,
    Prediction,
    ShedderState,
    run_cycle,
    shedder_for,
    snapshot_of,
)
from trimtab.shedding.decisions import frozen_map
from trimtab.shedding.telemetry import fold

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.state import GroupState

    from trimtab.pipeline.schemas import InputTable

__all__ = [
    "OUTPUT_TABLES",
    "ClusterStream",
    "Inventory",
    "StreamOptions",
    "read_inventory",
    "run_stream",
]

STREAM_TABLES = ("node_metrics", "bundle_metrics")
#: The file formats a stream reads, by glob.
_GLOBS = {"parquet": "*.{parquet,pq}", "json": "*.{jsonl,json,ndjson}", "csv": "*.csv"}
_CORRUPT = "_corrupt_record"
OUTPUT_TABLES = ("decisions", "transfers", "quarantine", "node_load")

#: The wide frame's numeric sample columns (bundle rates share these names).
_IN_DOUBLES = tuple(SAMPLE_FIELDS)

#: What the state function emits: one long table, ``kind`` telling the rows apart.
OUT_SCHEMA = (
    "kind string, cluster string, cycle long, at_us long, label string, reason string, "
    "broker string, bundle string, source string, destination string, throughput double, "
    "std double, std_after double, note string, table_name string, source_file string, "
    "rule string, row string, node string, window_us long, samples long, load double, "
    "msg_throughput_ema double, "
    + ", ".join(f"{m} double" for m in METRICS)
    + ", rows_in long, landed_us long"
)
OUT_COLUMNS = [c.split()[0] for c in OUT_SCHEMA.split(", ")]
STATE_SCHEMA = "blob string"


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamOptions:
    """What one streaming run reads, writes and decides with."""

    input: str
    output: str
    checkpoint: str | None = None  # default: OUTPUT/_checkpoint
    trigger: str = "1m"
    window: str = "1m"
    watermark: str = "2m"  # how late a row may land and still be folded in time order
    config: Config = field(default_factory=Config)
    strategy: str | None = None  # default: the config's loadBalancerLoadSheddingStrategy
    seed: int = 0
    future_tolerance_s: float = 300.0
    inventory_poll_s: float = 5.0

    @property
    def checkpoint_dir(self) -> str:
        return self.checkpoint or f"{self.output.rstrip('/')}/_checkpoint"


# --------------------------------------------------------------------------------------------
# The inventory: small, read on the driver, handed to the state function as plain values.


@dataclass(frozen=True, slots=True)
class Node:
    limits: Limits
    broker: bool
    writable: bool

    @classmethod
    def of(cls, row: Sequence[Any]) -> Node:
        """A row of :func:`inventory_rows` (cluster, node, limits, state, broker)."""
        return cls(
            limits=Limits(cores=float(row[2]), memory_bytes=float(row[3]), nic_bps=float(row[4])),
            writable=NodeState.parse(str(row[5])) is NodeState.WRITABLE,
            broker=bool(row[6]),
        )


@dataclass(frozen=True, slots=True)
class Inventory:
    """The accepted inventory per cluster; ``signature`` tells when its files changed."""

    clusters: Mapping[str, Mapping[str, Node]]
    signature: str = ""


def read_inventory(spark: SparkSession, input_dir: str, *, now: datetime) -> Inventory:
    """The inventory's accepted rows, checked by ingest's readers and row rules; a key
    (cluster, node) given twice keeps one row if the copies are equal, none if they differ."""
    from pyspark.sql import functions as F

    from trimtab.pipeline.fs import HadoopFS
    from trimtab.pipeline.ingest import read_table
    from trimtab.pipeline.schemas import INPUT_TABLES

    fs = HadoopFS(spark, input_dir)
    frame = read_table(
        spark, fs, input_dir, INPUT_TABLES["nodes"], now=now, future_tolerance_s=300.0
    ).frame
    rows = inventory_rows(frame.where(F.col("_rule").isNull())).collect()
    seen: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        seen.setdefault((row["cluster"], row["node"]), []).append(tuple(row))
    clusters: dict[str, dict[str, Node]] = {}
    for (cluster, node), copies in sorted(seen.items()):
        if len(set(copies)) > 1:
            continue  # conflicting rows: both refused, as ingest does
        clusters.setdefault(cluster, {})[node] = Node.of(copies[0])
    return Inventory(clusters, inventory_signature(spark, input_dir))


def inventory_signature(spark: SparkSession, input_dir: str) -> str:
    """Names, sizes and modification times of the inventory's files."""
    jvm: Any = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(f"{input_dir.rstrip('/')}/nodes")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return ""
    parts = [
        f"{s.getPath().getName()}:{s.getLen()}:{s.getModificationTime()}"
        for s in fs.listStatus(path)
        if s.isFile()
    ]
    return "|".join(sorted(parts))


# --------------------------------------------------------------------------------------------
# One cluster's state across micro-batches (plain Python: the state function's body).


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


def _iso(us: int) -> str:
    """A time as Spark's ``cast(ts as string)`` shows it in UTC (the batch job's reasons)."""
    text = datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return text.rstrip("0").rstrip(".")


def _empty_out(**values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(OUT_COLUMNS)
    row.update(values)
    return row


@dataclass(frozen=True, slots=True)
class Decider:
    """What the state function needs besides the rows: inventory, model, strategy, seed."""

    inventory: Inventory
    config: Config
    strategy: str | None
    seed: int
    window_us: int

    def run(
        self, cluster: str | None, rows: pd.DataFrame, state: ClusterStream, watermark_us: int
    ) -> list[dict[str, Any]]:
        """One micro-batch of one cluster: check, absorb, seal, decide; the output rows.

        Row by row only where it is cheap (refused rows, node samples); the bundle samples, a
        hundred per broker, go in as columns (:meth:`BundleSamples.absorb`)."""
        nodes = self.inventory.clusters.get(cluster) if cluster is not None else None
        rows = rows.sort_values(["_landed_us", "_source_file", "ts_us"], kind="stable")
        rows = rows.reset_index(drop=True)
        newest_landed = int(rows["_landed_us"].max()) if len(rows) else 0
        is_node = (rows["_table"] == "node_metrics").to_numpy()
        member = pd.Series(np.where(is_node, rows["node"], rows["broker"]))
        known = member.isin(list(nodes or ())).to_numpy()
        checked = known & rows["_rule"].isna().to_numpy()
        refused: list[tuple[int, dict[str, Any]]] = []  # (row, quarantine row): in row order
        for at, rec in _records(rows, np.flatnonzero(~checked)):
            rule, reason = _verdict(rec, cluster, nodes)
            assert rule is not None  # not checked: a row rule, or not a node of the cluster
            refused.append((at, _quarantine(rec, cluster, rule, reason)))
        fresh = False
        for at, rec in _records(rows, np.flatnonzero(checked & is_node)):
            rule, reason = _absorb_node(rec, state)
            if rule is not None:
                refused.append((at, _quarantine(rec, cluster, rule, reason)))
            fresh = fresh or rule is None
        bundle_rows = np.flatnonzero(checked & ~is_node)
        outcome, seen_source = state.bundles.absorb(rows.iloc[bundle_rows])
        fresh = fresh or bool((outcome <= Outcome.OLDER).any())
        repeats = np.flatnonzero(outcome >= Outcome.DUPLICATE)
        for j, (at, rec) in zip(repeats, _records(rows, bundle_rows[repeats]), strict=True):
            what = _bundle_key(rec)
            rule, reason = (
                ("duplicate", _duplicate(what))
                if outcome[j] == Outcome.DUPLICATE
                else ("conflict", _conflict(what, seen_source[j]))
            )
            refused.append((at, _quarantine(rec, cluster, rule, reason)))
        out = [row for _, row in sorted(refused, key=lambda pair: pair[0])]
        if cluster is None:  # rows without a cluster: all refused (missing_key)
            out.append(_empty_out(kind="cluster", rows_in=len(rows), landed_us=newest_landed))
            return out
        model = LoadModel.of(self.config.shedding)
        out += self._seal(str(cluster), state, watermark_us, nodes or {}, model)
        summary = _empty_out(
            kind="cluster", cluster=cluster, rows_in=len(rows), landed_us=newest_landed
        )
        if fresh and nodes:
            out += self._decide(str(cluster), state, nodes, model, summary)
        out.append(summary)
        return out

    def _seal(
        self,
        cluster: str,
        state: ClusterStream,
        watermark_us: int,
        nodes: Mapping[str, Node],
        model: LoadModel,
    ) -> list[dict[str, Any]]:
        """Fold the samples of windows the watermark has passed; a ``node_load`` row each."""
        until = watermark_us - watermark_us % self.window_us if watermark_us > 0 else 0
        if until <= state.sealed_us:
            return []
        reference = _reference(nodes, model)
        out = []
        for node in sorted(state.pending):
            by_ts = state.pending[node]
            done = sorted(ts for ts in by_ts if ts < until)
            windows: dict[int, list[int]] = {}
            for ts in done:
                windows.setdefault(ts - ts % self.window_us, []).append(ts)
            info = nodes.get(node)
            for start, stamps in sorted(windows.items()):
                kept = [by_ts[ts] for ts in stamps if not by_ts[ts].get("_conflict")]
                if kept and info is not None:
                    samples = [_sample(ts, by_ts[ts]) for ts in stamps if _kept(by_ts[ts])]
                    folded = fold(model, samples, info.limits, reference, state.folded.get(node))
                    if folded is not None:
                        state.folded[node] = folded
                        row = _empty_out(
                            kind="node_load",
                            cluster=cluster,
                            node=node,
                            window_us=start,
                            samples=len(kept),
                            at_us=round(folded.last.ts * 1e6),
                            load=folded.weighted_max_ema,
                            msg_throughput_ema=folded.msg_throughput_ema,
                        )
                        for metric in METRICS:
                            values = [float(s[metric]) for s in kept if s.get(metric) is not None]
                            row[metric] = sum(values) / len(values) if values else None
                        out.append(row)
            for ts in done:
                del by_ts[ts]
            if not by_ts:
                del state.pending[node]
        state.sealed_us = until
        return out

    def _decide(
        self,
        cluster: str,
        state: ClusterStream,
        nodes: Mapping[str, Node],
        model: LoadModel,
        summary: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """One shedder cycle on the cluster as it stands (see :func:`live_cycle`)."""
        cycle = live_cycle(
            cluster, state, nodes, model, self.config.shedding, self.strategy, self.seed
        )
        summary.update(
            cycle=cycle.number,
            at_us=cycle.at_us,
            std=_finite(cycle.result.std),
            std_after=_finite(cycle.result.std_after),
            note=cycle.strategy,
            # The bundles forgotten: how many, and the first names (see _status).
            samples=len(cycle.left_out),
            bundle="\n".join(cycle.left_out[:STALE_NAMED]) or None,
        )
        return [_empty_out(**row) for row in cycle.rows()]


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
        std, after = _finite(self.result.std), _finite(self.result.std_after)
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
    reference = _reference(nodes, model)
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


def _records(rows: pd.DataFrame, at: np.ndarray) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows ``at`` (positions) with their dicts of plain Python values (a tenth of
    ``to_dict``'s time)."""
    names = list(rows.columns)
    picked = rows.iloc[at]
    arrays = [picked[c].to_numpy(dtype=object) for c in names]
    for i, values in zip(at.tolist(), zip(*arrays, strict=True), strict=True):
        yield i, dict(zip(names, values, strict=True))


def _kept(sample: Mapping[str, Any]) -> bool:
    """False for a sample refused since as a ``conflict`` (kept only to refuse more copies)."""
    return not sample.get("_conflict")


def cycle_seed(seed: int, cluster: str, cycle: int) -> int:
    """The random source of one cycle: the same after a restart, different per cluster."""
    return zlib.crc32(f"{seed}/{cluster}/{cycle}".encode())


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _reference(nodes: Mapping[str, Node], model: LoadModel) -> Limits | None:
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
    samples = [_sample(ts, s) for ts, s in sorted(pending.items()) if _kept(s)]
    previous = state.folded.get(node)
    if not samples:
        return previous
    return fold(model, samples, info.limits, reference, previous)


def _sample(ts_us: int, values: Mapping[str, Any]) -> NodeSample:
    return NodeSample(ts=ts_us / 1e6, **{f: float(values[f]) for f in SAMPLE_FIELDS})


def _verdict(
    rec: Mapping[str, Any], cluster: str | None, nodes: Mapping[str, Node] | None
) -> tuple[str | None, str | None]:
    """The row rules' verdict, then membership (the batch job's order and reasons)."""
    if rec["_rule"] is not None:
        return rec["_rule"], rec["_reason"]
    if nodes is None:
        return "unknown_cluster", f"cluster {cluster} is not in the inventory"
    column = "node" if rec["_table"] == "node_metrics" else "broker"
    if rec[column] not in nodes:
        return "unknown_node", f"{column} {rec[column]} is not a node of cluster {cluster}"
    return None, None


def _content(rec: Mapping[str, Any], table: str) -> dict[str, Any]:
    names = METRICS if table == "node_metrics" else BUNDLE_VALUES
    return {n: _plain(rec.get(n)) for n in names}


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def _absorb_node(rec: Mapping[str, Any], state: ClusterStream) -> tuple[str | None, str | None]:
    """A checked node sample into the pending samples; its repeat, conflict or lateness."""
    ts = int(rec["ts_us"])
    node = str(rec["node"])
    what = f"ts {_iso(ts)}, cluster {rec['cluster']}, node {node}"
    if ts < state.sealed_us:
        return "late", (
            f"ts {_iso(ts)} is before {_iso(state.sealed_us)}, where the stream has sealed "
            "its windows (the watermark passed): land files within --watermark"
        )
    values = _content(rec, "node_metrics") | {"_source_file": rec["_source_file"]}
    by_ts = state.pending.setdefault(node, {})
    seen = by_ts.get(ts)
    if seen is None:
        by_ts[ts] = values
        return None, None
    return _repeat(seen, values, what, by_ts, ts)


def _repeat(
    seen: dict[str, Any],
    values: dict[str, Any],
    what: str,
    by_ts: dict[int, dict[str, Any]],
    ts: int,
) -> tuple[str, str]:
    """A second row for a node's sample time: ``duplicate`` if equal, else ``conflict``
    (both refused: the kept one is marked, so no later decision uses it)."""
    same = {k: v for k, v in seen.items() if not k.startswith("_") and k != "ts_us"}
    new = {k: v for k, v in values.items() if not k.startswith("_") and k != "ts_us"}
    if same == new and not seen.get("_conflict"):
        return "duplicate", _duplicate(what)
    by_ts[ts] = seen | {"_conflict": True}
    return "conflict", _conflict(what, seen["_source_file"])


def _bundle_key(rec: Mapping[str, Any]) -> str:
    """A bundle row's key in the contract's order, as ingest names it."""
    ts = _iso(int(rec["ts_us"]))
    return f"ts {ts}, cluster {rec['cluster']}, bundle {rec['bundle']}, broker {rec['broker']}"


def _duplicate(what: str) -> str:
    return f"an exact duplicate of an earlier row for {what}"


def _conflict(what: str, source: str | None) -> str:
    return f"conflicting rows for {what}: this one and one in {source} differ, so both are refused"


def _quarantine(
    rec: Mapping[str, Any], cluster: str | None, rule: str, reason: str | None
) -> dict[str, Any]:
    raw = rec["_raw"]
    if raw is None:  # refused after parsing cleanly: the typed row, as ingest renders it
        names = (
            ("ts", "cluster", "node")
            if rec["_table"] == "node_metrics"
            else ("ts", "cluster", "bundle", "broker")
        )
        doc = {n: (_iso(int(rec["ts_us"])) if n == "ts" else rec[n]) for n in names}
        raw = json.dumps(doc | _content(rec, str(rec["_table"])))
    return _empty_out(
        kind="quarantine",
        cluster=cluster,
        table_name=rec["_table"],
        source_file=rec["_source_file"],
        rule=rule,
        reason=reason,
        row=raw,
    )


# --------------------------------------------------------------------------------------------
# Spark: the streams, the stateful step, the publication.


def telemetry_stream(spark: SparkSession, options: StreamOptions) -> DataFrame:
    """Every telemetry file and load report landing under the input, checked row by row, as
    one wide frame with a watermark on ``ts``."""

    from trimtab.pipeline.schemas import INPUT_TABLES

    frames = []
    for name in STREAM_TABLES:
        table = INPUT_TABLES[name]
        path = f"{options.input.rstrip('/')}/{name}"
        parquet = _file_stream(spark, path, "parquet", table)
        frames.append(_checked(parquet, table, options, parquet=True))
        frames.append(_checked(_file_stream(spark, path, "json", table), table, options))
        frames.append(_checked(_csv_stream(spark, path, table), table, options))
    frames += _report_streams(spark, options)
    wide = frames[0]
    for other in frames[1:]:
        wide = wide.unionByName(other)
    return wide.withWatermark("ts", _interval(options.watermark))


def _interval(text: str) -> str:
    return f"{window_seconds(text)} seconds"


#: A rule a whole file breaks, before the row rules (a CSV header lacking a required column).
_RULE_TYPE = "struct<r:string,m:string>"


def _file_stream(spark: SparkSession, path: str, fmt: str, table: InputTable) -> DataFrame:
    """One table's Parquet or JSON-lines files: their columns as ``_in_<name>``, matched by
    name (Parquet with the contract's types, JSON as text, as ingest reads them)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from trimtab.pipeline.schemas import SPARK_TYPES

    names = [c.name for c in table.columns]
    if fmt == "parquet":
        schema = T.StructType([T.StructField(c.name, SPARK_TYPES[c.type]) for c in table.columns])
    else:
        schema = T.StructType([T.StructField(n, T.StringType()) for n in names])
        schema = schema.add(_CORRUPT, T.StringType())
    reader = spark.readStream.schema(schema).option("pathGlobFilter", _GLOBS[fmt])
    if fmt == "json":
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", _CORRUPT)
    frame = reader.format(fmt).load(path)
    return frame.select(
        *(F.col(c).alias(f"_in_{c}") for c in names),
        (F.col(_CORRUPT) if fmt != "parquet" else F.lit(None).cast("string")).alias("_corrupt"),
        F.lit(None).cast(_RULE_TYPE).alias("_file_rule"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.unix_micros(F.col("_metadata.file_modification_time")).alias("_landed_us"),
    )


#: The cells a CSV line of the stream may have (``from_csv`` needs a fixed schema: a line is
#: parsed into this many positional cells, then each file's header maps names to positions).
_CSV_WIDTH = 128
#: Appended to each CSV line as one more cell: where it lands counts the line's cells.
_END = "\ue000"


def _csv_stream(spark: SparkSession, path: str, table: InputTable) -> DataFrame:
    """One table's CSV files, their columns matched by each file's own header as ingest's
    ``_read_group`` matches them: a file is read whole, its first line names the columns
    (split as ingest splits it), and each later non-blank line is parsed by Spark's CSV
    parser (quotes and all) into positional cells. A line with more or fewer cells than the
    header is ``malformed`` where Spark's reader makes it so (when the header names only
    contract columns); a header lacking a required column refuses every row of its file, as
    ``missing_key`` or ``missing_value``, with the message the batch job stops with."""
    from pyspark.sql import functions as F

    files = (
        spark.readStream.format("text")
        .option("wholetext", True)
        .option("pathGlobFilter", _GLOBS["csv"])
        .load(path)
    )
    lines = F.split(F.col("value"), r"\r\n|\r|\n")
    # Spark's CSV reader skips blank lines (Java's trim), its header the first non-blank one
    filled = F.filter(lines, lambda line: ~line.rlike(r"^[\x00-\x20]*$"))
    names = F.transform(
        F.split(F.element_at(lines, 1), ","),
        lambda c: F.regexp_replace(F.regexp_replace(c, r"^\s+|\s+$", ""), '^"+|"+$', ""),
    )
    frame = files.select(
        names.alias("_names"),
        F.explode(F.slice(filled, 2, F.greatest(F.size(filled) - 1, F.lit(0)))).alias("_line"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.unix_micros(F.col("_metadata.file_modification_time")).alias("_landed_us"),
    )
    schema = ", ".join(f"_c{i} string" for i in range(_CSV_WIDTH + 1))
    parsed = F.from_csv(F.concat(F.col("_line"), F.lit("," + _END)), schema, {"mode": "PERMISSIVE"})
    # one SQL expression, parsed once (not a Py4J call per cell)
    cells = F.expr("array(" + ", ".join(f"_parsed._c{i}" for i in range(_CSV_WIDTH + 1)) + ")")
    # The mark is a cell of its own, or the end of the last cell when a quote left open runs
    # to the end of the line (Spark's reader then reads that cell to the end of the line)
    marked = F.array_position("_cells", _END)
    swallowed = F.array_position(F.transform("_cells", lambda c: c.endswith("," + _END)), True)
    frame = frame.select("*", parsed.alias("_parsed")).select("*", cells.alias("_cells"))
    frame = frame.select("*", F.when(marked > 0, marked - 1).otherwise(swallowed).alias("_count"))
    count = F.col("_count")
    values = []
    for column in table.columns:
        at = F.array_position("_names", column.name)
        cell = F.regexp_replace(F.try_element_at("_cells", at.cast("int")), f",{_END}$", "")
        values.append(F.when((at > 0) & (at <= count), cell).alias(f"_in_{column.name}"))
    # Spark's reader counts a line's cells only when it reads every column of the header: a
    # header naming a column outside the contract has it parse only the contract's columns
    contract = F.array(*(F.lit(c.name) for c in table.columns))
    outside = F.filter("_names", lambda name: ~F.array_contains(contract, name))
    checked = F.size(outside) == 0
    missing = [F.when(F.array_position("_names", c) == 0, F.lit(c)) for c in table.required]
    keys = [F.when(F.array_position("_names", c) == 0, F.lit(c)) for c in table.keys]
    has = F.concat_ws(", ", "_names")
    message = F.format_string(
        f"table {table.name}: %s lacks required column(s) %s; it has %s. "
        f"Required: {', '.join(table.required)}",
        F.col("_source_file"),
        F.concat_ws(", ", *missing),
        F.when(has == "", F.lit("none")).otherwise(has),
    )
    rule = F.when(F.concat_ws("", *keys) != "", F.lit("missing_key")).otherwise("missing_value")
    lacking = F.concat_ws("", *missing) != ""
    return frame.select(
        *values,
        F.when(checked & (count != F.size("_names")), F.col("_line")).alias("_corrupt"),
        F.when(lacking, F.struct(rule.alias("r"), message.alias("m"))).alias("_file_rule"),
        "_source_file",
        "_landed_us",
    )


_BINARY_FILE = "path string, modificationTime timestamp, length long, content binary"
_REPORT_ROWS = "array<struct<table:string, line:string, cluster:string, reason:string, raw:string>>"


def _report_streams(spark: SparkSession, options: StreamOptions) -> list[DataFrame]:
    """``load_reports/<cluster>/*`` as the batch job reads it: each file, as it lands, turned
    by :func:`trimtab.pipeline.load_reports.report_rows` into node and bundle rows (JSON
    lines, read as ingest reads its staged files), checked like the tables' rows; each
    document the reader refuses is one row of table ``load_reports``, rule ``bad_report``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from trimtab.pipeline.fs import HadoopFS
    from trimtab.pipeline.load_reports import LOAD_REPORTS
    from trimtab.pipeline.schemas import INPUT_TABLES

    root = f"{options.input.rstrip('/')}/{LOAD_REPORTS}"
    base = HadoopFS(spark, options.input).qualify(root)
    # A glob (matching the directory itself) is not required to exist when the query starts.
    glob = f"{root[:-1]}[{root[-1]}]"
    files = (
        spark.readStream.schema(_BINARY_FILE)
        .format("binaryFile")
        .option("recursiveFileLookup", True)
        .load(glob)
    )
    # a plain Python UDF (a trigger brings a few files; useArrow given: no type-hint guess)
    rows_of = F.udf(partial(_report_file, base), _REPORT_ROWS, useArrow=False)
    reports = files.select(
        F.explode(rows_of(F.col("_metadata.file_path"), F.col("content"))).alias("_r"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.unix_micros(F.col("_metadata.file_modification_time")).alias("_landed_us"),
    )
    frames = []
    for name in STREAM_TABLES:
        table = INPUT_TABLES[name]
        names = [c.name for c in table.columns]
        schema = T.StructType([T.StructField(n, T.StringType()) for n in names])
        schema = schema.add(_CORRUPT, T.StringType())
        options_ = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT}
        parsed = reports.where(F.col("_r.table") == name).select(
            F.from_json("_r.line", schema, options_).alias("_j"), "_source_file", "_landed_us"
        )
        frame = parsed.select(
            *(F.col(f"_j.{c}").alias(f"_in_{c}") for c in names),
            F.col(f"_j.{_CORRUPT}").alias("_corrupt"),
            F.lit(None).cast(_RULE_TYPE).alias("_file_rule"),
            "_source_file",
            "_landed_us",
        )
        frames.append(_checked(frame, table, options))
    refused = reports.where(F.col("_r.reason").isNotNull())
    frames.append(
        refused.select(
            *_wide(
                _table=F.lit(LOAD_REPORTS),
                cluster=F.col("_r.cluster"),
                _rule=F.lit("bad_report"),
                _reason=F.col("_r.reason"),
                _raw=F.col("_r.raw"),
                _source_file=F.col("_source_file"),
                _landed_us=F.col("_landed_us"),
            )
        )
    )
    return frames


def _report_file(base: str, path: str, content: bytes) -> list[tuple[str | None, ...]]:
    """One load report file's rows (see :func:`_report_streams`); none for a file deeper than
    ``load_reports/<cluster>/``, which the batch job does not read either."""
    from urllib.parse import unquote, urlsplit

    from trimtab.pipeline.load_reports import report_rows

    root = unquote(urlsplit(base).path).rstrip("/") + "/"
    local = unquote(urlsplit(path).path)
    parts = local.removeprefix(root).split("/") if local.startswith(root) else []
    if not 1 <= len(parts) <= 2:
        return []
    cluster = parts[0] if len(parts) == 2 else ""  # a report directly under load_reports/
    got = report_rows(path, bytes(content), cluster)
    out: list[tuple[str | None, ...]] = [
        (table, line, cluster, None, None) for table, lines in got.lines.items() for line in lines
    ]
    out += [(None, None, cluster, reason, raw) for reason, raw in got.refused]
    return out


#: The wide frame's columns and their types, in order (every stream gives them all).
_WIDE = (
    ("_table", "string"),
    ("cluster", "string"),
    ("node", "string"),
    ("bundle", "string"),
    ("broker", "string"),
    ("ts", "timestamp"),
    ("ts_us", "long"),
    *((name, "double") for name in _IN_DOUBLES),
    ("disk_free_bytes", "long"),
    ("disk_total_bytes", "long"),
    ("storage_bytes", "long"),
    ("_rule", "string"),
    ("_reason", "string"),
    ("_raw", "string"),
    ("_source_file", "string"),
    ("_landed_us", "long"),
)


def _wide(**values: SparkColumn) -> list[SparkColumn]:
    """The wide frame's columns from ``values``, null where not given."""
    from pyspark.sql import functions as F

    return [
        values[name].cast(type_).alias(name)
        if name in values
        else F.lit(None).cast(type_).alias(name)
        for name, type_ in _WIDE
    ]


def _checked(
    frame: DataFrame, table: InputTable, options: StreamOptions, *, parquet: bool = False
) -> DataFrame:
    """Rows read as ``_in_<name>`` (text, or with the contract's types from ``parquet``)
    typed and ruled as ingest's ``_read_group`` does, as the wide frame's columns."""
    from pyspark.sql import functions as F

    from trimtab.pipeline.ingest import typed_columns
    from trimtab.pipeline.rules import key_verdict, row_rules, time_limit

    names = [c.name for c in table.columns]
    typed, errors, texts = typed_columns(table, "parquet" if parquet else "text", names, {})
    frame = frame.select("*", *typed, errors.alias("_type_errors"))
    tolerance = int(options.future_tolerance_s) * 1_000_000
    limit = time_limit(f"unix_micros(current_timestamp()) + {tolerance}")
    first = F.coalesce(F.col("_file_rule"), row_rules(table, texts, limit))
    verdict = key_verdict(table)
    if verdict is not None:  # bad_bundle: a key rule, after the row rules
        rule, reason = verdict
        first = F.coalesce(
            first, F.when(rule.isNotNull(), F.struct(rule.alias("r"), reason.alias("m")))
        )
    original = F.struct(*[F.col(f"_in_{c}").alias(c) for c in names])
    frame = frame.select("*", first.alias("_first"))
    present = set(names)
    values: dict[str, SparkColumn] = {"_table": F.lit(table.name)}
    for name, _ in _WIDE:
        if name in present:
            values[name] = F.col(name)
    values |= {
        "ts_us": F.unix_micros("ts"),
        "_rule": F.col("_first.r"),
        "_reason": F.col("_first.m"),
        "_raw": F.when(F.col("_first").isNotNull(), F.to_json(original)),
        "_source_file": F.col("_source_file"),
        "_landed_us": F.col("_landed_us"),
    }
    return frame.select(*_wide(**values))


def stateful(wide: DataFrame, decider: Decider) -> DataFrame:
    """``groupBy(cluster).applyInPandasWithState``: the per-cluster state across batches."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    def per_cluster(
        key: tuple[Any, ...], frames: Iterator[pd.DataFrame], group: GroupState
    ) -> Iterator[pd.DataFrame]:
        cluster = key[0]
        state = ClusterStream.loads(group.get[0]) if group.exists else ClusterStream()
        parts = [f for f in frames if len(f)]
        if not parts:
            return
        rows = pd.concat(parts, ignore_index=True)
        watermark_us = int(group.getCurrentWatermarkMs()) * 1000
        out = decider.run(cluster, rows, state, watermark_us)
        if cluster is not None:
            group.update((state.dumps(),))
        yield pd.DataFrame(out, columns=OUT_COLUMNS)

    # ``ts`` stays: without the watermark's column the state function sees no watermark
    return wide.groupBy("cluster").applyInPandasWithState(
        per_cluster, OUT_SCHEMA, STATE_SCHEMA, "update", GroupStateTimeout.NoTimeout
    )


@dataclass(slots=True)
class Publisher:
    """``foreachBatch``: batch N's tables published once, then ``status.json``."""

    spark: SparkSession
    output: str
    on_status: Callable[[dict[str, Any]], None] | None = None

    def __call__(self, frame: DataFrame, batch: int) -> None:
        from trimtab.pipeline.fs import HadoopFS

        fs = HadoopFS(self.spark, self.output)
        root = fs.qualify(self.output.rstrip("/"))
        marker = f"{root}/_batches/{batch}"
        if fs.exists(marker):
            return  # published before a restart: never twice
        began = time.perf_counter()
        rows = frame.toPandas()  # runs the micro-batch: read, check, state, decide
        if rows.empty:
            return
        computed = time.perf_counter()
        trigger = datetime.now(UTC)
        staging = f"{root}/_staging/{batch}"
        for name, part in _tables(rows, trigger, batch).items():
            target = f"{root}/{name}/batch={batch}"
            if part.empty or fs.exists(target):
                continue
            fs.delete(f"{staging}/{name}")
            typed = self.spark.createDataFrame(part, TABLE_SCHEMAS[name])
            typed.coalesce(1).write.parquet(f"{staging}/{name}")
            fs.mkdirs(f"{root}/{name}")
            if not fs.rename(f"{staging}/{name}", target):
                raise OSError(f"could not publish {staging}/{name} as {target}")
        fs.delete(staging)
        status = _status(rows, trigger, batch, _previous_status(fs, root))
        status["timings_s"] = {
            "compute": round(computed - began, 3),
            "publish": round(time.perf_counter() - computed, 3),
        }
        fs.replace_text(f"{root}/status.json", json.dumps(status, indent=2) + "\n")
        fs.write_text(marker, "")
        if self.on_status is not None:
            self.on_status(status)


def _previous_status(fs: Any, root: str) -> dict[str, Any] | None:
    path = f"{root}/status.json"
    if not fs.exists(path):
        return None
    loaded: dict[str, Any] = json.loads(fs.read_text(path))
    return loaded


#: The published tables' columns: explicit, so a batch whose column is all null still writes
#: the same Parquet type as the others (readers merge the batches' files).
TABLE_SCHEMAS = {
    "decisions": "trigger_time timestamp, data_time timestamp, cluster string, cycle long, "
    "label string, reason string, broker string, bundle string, note string",
    "transfers": "trigger_time timestamp, data_time timestamp, cluster string, cycle long, "
    "bundle string, source string, destination string, throughput double, reason string, "
    "std_after double",
    "quarantine": "trigger_time timestamp, table string, source_file string, rule string, "
    "reason string, row string",
    "node_load": "trigger_time timestamp, cluster string, node string, window_start timestamp, "
    "samples long, last_sample_ts timestamp, "
    + ", ".join(f"{m} double" for m in METRICS)
    + ", load double, msg_throughput_ema double",
}


def _tables(rows: pd.DataFrame, trigger: datetime, batch: int) -> dict[str, pd.DataFrame]:
    """The batch's output tables, each with the trigger time and the data time decided at."""
    stamp = pd.Timestamp(trigger).tz_convert(None)

    def of(kinds: tuple[str, ...], columns: tuple[str, ...], order: list[str]) -> pd.DataFrame:
        part = rows[rows["kind"].isin(kinds)]
        table = part[list(columns)].copy()
        if "at_us" in part:
            table.insert(0, "data_time", pd.to_datetime(part["at_us"], unit="us"))
        table.insert(0, "trigger_time", stamp)
        table["cycle"] = table["cycle"].astype("int64")
        return table.sort_values(order, kind="stable").reset_index(drop=True)

    quarantine = rows[rows["kind"] == "quarantine"].rename(columns={"table_name": "table"})
    quarantine = quarantine[["table", "source_file", "rule", "reason", "row"]].copy()
    quarantine.insert(0, "trigger_time", stamp)
    loads = rows[rows["kind"] == "node_load"].copy()
    node_load = loads[["cluster", "node"]].copy()
    node_load["window_start"] = pd.to_datetime(loads["window_us"], unit="us")
    node_load["samples"] = loads["samples"].astype("int64")
    node_load["last_sample_ts"] = pd.to_datetime(loads["at_us"], unit="us")
    for metric in METRICS:
        node_load[metric] = loads[metric]
    node_load["load"] = loads["load"]
    node_load["msg_throughput_ema"] = loads["msg_throughput_ema"]
    node_load.insert(0, "trigger_time", stamp)
    return {
        "decisions": of(
            ("decision", "transfer"), DECISION_COLUMNS, ["cluster", "broker", "bundle"]
        ),
        "transfers": of(("transfer",), TRANSFER_COLUMNS, ["cluster", "source", "bundle"]),
        "quarantine": quarantine.sort_values(["table", "source_file", "rule", "row"]),
        "node_load": node_load.sort_values(["cluster", "node", "window_start"]),
    }


def _status(
    rows: pd.DataFrame, trigger: datetime, batch: int, previous: dict[str, Any] | None
) -> dict[str, Any]:
    """``status.json``: this trigger's figures and the running totals."""
    summaries = rows[rows["kind"] == "cluster"]
    rows_in = int(summaries["rows_in"].sum())
    quarantined = int((rows["kind"] == "quarantine").sum())
    landed = summaries["landed_us"].dropna()
    newest_landed = int(landed.max()) if len(landed) else None
    clusters: dict[str, Any] = dict((previous or {}).get("clusters", {}))
    # A batch run again after a restart was published and counted already.
    counted = previous is not None and int(previous.get("batch", -1)) >= batch
    transfers = rows[rows["kind"] == "transfer"].groupby("cluster").size()
    for row in summaries.to_dict("records"):
        if row["cluster"] is None or row["cycle"] is None or pd.isna(row["cycle"]):
            continue
        data_time = datetime.fromtimestamp(row["at_us"] / 1e6, UTC)
        entry = {
            "cycle": int(row["cycle"]),
            "batch": batch,
            "strategy": row["note"],
            "data_time": data_time.isoformat(),
            "std": _json_float(row["std"]),
            "std_after": _json_float(row["std_after"]),
            "transfers": int(transfers.get(row["cluster"], 0)),
            "lag_s": round((trigger - data_time).total_seconds(), 3),
        }
        stale = dict(clusters.get(row["cluster"], {}).get("stale_bundles", {}))
        forgotten = 0 if pd.isna(row["samples"]) else int(row["samples"])
        if forgotten and not counted:  # how many since the stream started, the latest names
            stale = {
                "count": int(stale.get("count", 0)) + forgotten,
                "latest": row["bundle"].split("\n"),
            }
        if stale:
            entry["stale_bundles"] = stale
        clusters[row["cluster"]] = entry
    totals = dict((previous or {}).get("totals", {"rows_in": 0, "rows_quarantined": 0}))
    if not counted:
        totals = {
            "rows_in": int(totals["rows_in"]) + rows_in,
            "rows_quarantined": int(totals["rows_quarantined"]) + quarantined,
        }
    landing = None if newest_landed is None else round(time.time() - newest_landed / 1e6, 3)
    return {
        "last_trigger": trigger.isoformat(),
        "batch": batch,
        "rows_in": rows_in,
        "rows_quarantined": quarantined,
        "landing_to_decision_s": landing,
        "totals": totals,
        "clusters": dict(sorted(clusters.items())),
    }


def _json_float(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 6)


#: How long a stop waits for the trigger under way to finish.
_DRAIN_S = 120.0


def _busy(query: StreamingQuery) -> bool:
    """A trigger under way, or the query still starting: stopped then, Spark interrupts its
    first writes to the checkpoint and logs each with a Java stack trace."""
    if not query.isActive:
        return False
    status = query.status
    return bool(status["isTriggerActive"]) or str(status["message"]).startswith("Initializing")


def run_stream(
    spark: SparkSession,
    options: StreamOptions,
    *,
    on_status: Callable[[dict[str, Any]], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    hurry: Callable[[], bool] = lambda: False,
    on_restart: Callable[[str], None] | None = None,
) -> None:
    """Run until ``should_stop``; restart the query from its checkpoint when the inventory's
    files change, so the state function decides with the new inventory.

    A stop lets the trigger under way (or the first one, while the query starts) finish and
    publish (up to ``_DRAIN_S``, or until ``hurry``), so its decisions are out and the
    restart starts from the next one; stopped mid-trigger, the query would be interrupted
    inside its writes (Spark logs each one)."""
    publisher = Publisher(spark, options.output, on_status)
    while not should_stop():
        inventory = read_inventory(spark, options.input, now=datetime.now(UTC))
        query = _start(spark, options, inventory, publisher)
        polled = time.monotonic()
        try:
            while not should_stop():
                if query.awaitTermination(1):
                    if query.exception() is not None:
                        raise RuntimeError(str(query.exception()))
                    return
                if time.monotonic() - polled < options.inventory_poll_s:
                    continue
                polled = time.monotonic()
                if inventory_signature(spark, options.input) != inventory.signature:
                    if on_restart is not None:
                        on_restart("the inventory changed: restarting from the checkpoint")
                    break  # re-read it and go on from the checkpoint
            deadline = time.monotonic() + _DRAIN_S
            while time.monotonic() < deadline and not hurry() and _busy(query):
                time.sleep(0.2)
        finally:
            query.stop()


def _start(
    spark: SparkSession, options: StreamOptions, inventory: Inventory, publisher: Publisher
) -> StreamingQuery:
    decider = Decider(
        inventory=inventory,
        config=options.config,
        strategy=options.strategy,
        seed=options.seed,
        window_us=window_seconds(options.window) * 1_000_000,
    )
    frame = stateful(telemetry_stream(spark, options), decider)
    return (
        frame.writeStream.foreachBatch(publisher)
        .outputMode("update")
        .option("checkpointLocation", options.checkpoint_dir)
        .trigger(processingTime=_interval(options.trigger))
        .start()
    )
