"""The main job: read and check the fleet's tables, compute, and publish the outputs atomically.

Stages (each timed into ``run.json``): validate → quarantine → (engine stages) → publish.
Spark does the data work; the engines are called per cluster from ``applyInPandas`` so that
clusters are decided in parallel across executors, never in a driver loop.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from trimtab import __version__
from trimtab.allocation.model import PartitionAssignment, Replica
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import TrimtabError
from trimtab.pipeline.allocations import allocation_plans
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.ingest.check import LOCAL_TABLE_BYTES, ingest
from trimtab.pipeline.ingest.result import Ingested
from trimtab.pipeline.inventory import inventory_of
from trimtab.pipeline.load_reports import StagedReports, stage_load_reports
from trimtab.pipeline.loads import node_loads, write_node_loads
from trimtab.pipeline.local import local_frame
from trimtab.pipeline.output import StagedOutput
from trimtab.pipeline.plans import (
    DECISION_COLUMNS,
    TRANSFER_COLUMNS,
    inventory_rows,
    shedding_plans,
)
from trimtab.pipeline.replay import replay_plans
from trimtab.pipeline.report import inventory, write_staged_report
from trimtab.pipeline.weights import bookie_weights
from trimtab.shedding import Move
from trimtab.shedding.decisions import Reason
from trimtab.shedding.net import net_transfers
from trimtab.systems.kafka.ids import broker_ids
from trimtab.systems.kafka.writers import reassignment
from trimtab.systems.pulsar.admin import unload_script

__all__ = ["STAGES", "JobOptions", "RunSummary", "run_job"]

#: The stages in the order they run (``allocations`` only when requests were given); each is
#: timed into ``run.json`` and reported to the progress hook as it starts.
STAGES = (
    "read and validate",
    "write quarantine",
    "loads",
    "weights",
    "plans",
    "allocations",
    "publish",
)

ProgressHook = Callable[[str], None]
# The small checked frames (inventory, summaries, flagged rows), kept until publication.
_CHECKED = "_checked"
_REPORTS = "_load_reports"  # load_reports/ staged as node_metrics and bundle_metrics rows


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOptions:
    """What one run reads, writes and decides with."""

    input: str
    output: str
    seed: int = 0
    now: datetime | None = None  # reference time for the future-timestamp rule; default: now
    future_tolerance_s: float = 300.0
    window: str = "1m"
    config: Config = field(default_factory=Config)
    strategy: str | None = None  # default: the config's loadBalancerLoadSheddingStrategy
    cycles: int = 1
    until_balanced: bool = True  # plan from history: run cycles until the shedder is satisfied
    replay: bool = False  # instead: the live shedder's cycle at the end of every minute
    # Telemetry tables up to this size are checked whole as local rows (see ingest).
    local_table_bytes: int = LOCAL_TABLE_BYTES


@dataclass(slots=True)
class RunSummary:
    """What ``run.json`` holds, also returned to the caller for the printed summary."""

    output: str
    run_id: str
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    quarantine_by_rule: dict[str, dict[str, int]] = field(default_factory=dict)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)
    spark: dict[str, str] = field(default_factory=dict)
    # one reason per (table, rule) of the quarantine, for the sentences of the summary
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def unusable(self) -> bool:
        """True when telemetry was given and not one node_metrics row was usable (a run
        then stops with the dominant reason instead of planning on nothing)."""
        table = self.tables.get("node_metrics", {})
        return bool(table.get("read")) and not table.get("accepted")

    def as_json(self, options: JobOptions, started: datetime) -> dict[str, Any]:
        return {
            "trimtab_version": __version__,
            "run_id": self.run_id,
            "started": started.isoformat(),
            "inputs": {
                "path": options.input,
                "seed": options.seed,
                "window": options.window,
                "replay": options.replay,
            },
            "tables": self.tables,
            "quarantine_by_rule": self.quarantine_by_rule,
            "clusters": self.clusters,
            "timings_s": self.timings_s,
            "spark": self.spark,
        }


def run_job(
    spark: SparkSession, options: JobOptions, *, progress: ProgressHook | None = None
) -> RunSummary:
    """Run the whole job; on any failure the previous output is left as it was."""
    started = datetime.now(UTC)
    run_id = started.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    summary = RunSummary(output=options.output, run_id=run_id)
    summary.spark = {"master": str(spark.sparkContext.master), "version": spark.version}
    stage = _stages(summary, progress)
    fs = HadoopFS(spark)  # the run's one FileSystem wrapper, for its input and its output
    # Staging exists from the start: whatever dies from here on, the target is untouched.
    out = StagedOutput(fs, options.output, run_id)
    try:
        with stage("read and validate"):
            reports, ingested = _read(spark, fs, options, out, now=options.now or started)
        with stage("write quarantine"):
            _write_quarantine(spark, ingested, reports, out, summary)
        with stage("loads"):
            latest = _loads(spark, ingested, options, out, summary)
        with stage("weights"):
            weights = bookie_weights(
                _few(ingested, latest),
                _few(ingested, ingested.accepted("nodes")),
                options.config.placement,
            )
            out.write_small("bookie_weights", weights, ("cluster", "node"))
        with stage("plans"):
            _plans(spark, ingested, options, out, summary, latest)
        if "allocation_requests" in ingested.checked:
            with stage("allocations"):
                _allocations(spark, ingested, options, out, summary)
        with stage("publish"):
            nodes = inventory(ingested.accepted("nodes"))
            out.write_small("inventory", nodes, ("cluster", "node"))
            out.fs.delete(out.path(_CHECKED))
            out.fs.delete(out.path(_REPORTS))
            run = summary.as_json(options, started)
            out.write_json("run.json", run)
            write_staged_report(spark, out, run, held={"node_load": latest})
            summary.output = out.commit()
    except BaseException:
        out.abandon()
        raise
    return summary


def _stages(
    summary: RunSummary, progress: ProgressHook | None
) -> Callable[[str], AbstractContextManager[None]]:
    """A stage's context: reported to ``progress`` as it starts, timed into ``run.json``."""

    @contextmanager
    def stage(name: str) -> Iterator[None]:
        if progress is not None:
            progress(name)
        began = time.perf_counter()
        yield
        summary.timings_s[name] = round(time.perf_counter() - began, 3)

    return stage


def _read(
    spark: SparkSession, fs: HadoopFS, options: JobOptions, out: StagedOutput, *, now: datetime
) -> tuple[StagedReports | None, Ingested]:
    """The load reports staged as telemetry rows, and every table read and checked; the
    small checked frames are stored in the staging directory until publication."""

    def materialize(name: str, frame: DataFrame) -> DataFrame:
        out.write_table(f"{_CHECKED}/{name}", frame)
        return out.read_table(spark, f"{_CHECKED}/{name}")

    reports = stage_load_reports(fs, options.input, out.path(_REPORTS))
    ingested = ingest(
        spark,
        fs,
        options.input,
        now=now,
        future_tolerance_s=options.future_tolerance_s,
        materialize=materialize,
        extra=reports.files if reports else None,
        local_bytes=options.local_table_bytes,
    )
    return reports, ingested


def _write_quarantine(
    spark: SparkSession,
    ingested: Ingested,
    reports: StagedReports | None,
    out: StagedOutput,
    summary: RunSummary,
) -> None:
    """Every refused row, the load reports' too, and the counts per table and rule."""
    quarantine = ingested.quarantine()
    if reports is not None:
        quarantine = reports.quarantine(spark, quarantine)
    order = ("table", "source_file", "rule", "row")
    if ingested.local:  # every refused row is a local row: few, written as one file
        out.write_small("quarantine", quarantine, order)
    else:
        out.write_table("quarantine", quarantine.orderBy(*order))
    _count(ingested, summary, reports, _by_rule(spark, out))


def _loads(
    spark: SparkSession,
    ingested: Ingested,
    options: JobOptions,
    out: StagedOutput,
    summary: RunSummary,
) -> DataFrame:
    """``node_load`` written; each node's latest window returned, all the later stages read
    of it."""
    # Already in (cluster, node, window_start) order within each file: see node_loads.
    inputs = (
        ingested.accepted("node_metrics"),
        ingested.accepted("nodes"),
        options.config.shedding,
    )
    local = out.local_path("node_load")
    if local is not None:  # written by the Python side that computed it
        latest = write_node_loads(*inputs, local, window=options.window)
    else:
        loads = node_loads(*inputs, window=options.window)
        out.write_table("node_load", loads, dictionary=("cluster", "node"))
        latest = out.read_table(spark, "node_load").where("latest")
    _load_summary(latest, summary)
    _telemetry_verdict(summary)
    if summary.unusable:  # nothing to decide on: refused before anything is published
        verdicts = [c["no_telemetry"] for c in summary.clusters.values() if "no_telemetry" in c]
        why = verdicts[0] if verdicts else "no usable telemetry and no usable inventory row"
        raise TrimtabError(f"{why}; nothing was published")
    return latest


def _few(ingested: Ingested, frame: DataFrame) -> DataFrame:
    """``frame`` in one partition when every table was small enough to be kept as local
    rows: a per-cluster step over such inputs then needs no shuffle (one partition is
    already grouped), so no Spark job per exchange, and the few clusters' engine calls run
    one after the other in one task. Bigger inputs keep their partitions, so that clusters
    are planned in parallel."""
    return frame.coalesce(1) if ingested.local else frame


def _collected(spark: SparkSession, frame: DataFrame) -> tuple[DataFrame, list[Row]]:
    """A small result computed once (one action) and kept as local rows: the outputs and
    ``run.json`` entries drawn from it then need no Spark job of their own to read it."""
    rows = frame.collect()
    return local_frame(spark, rows, frame.schema), rows


def _plans(
    spark: SparkSession,
    ingested: Ingested,
    options: JobOptions,
    out: StagedOutput,
    summary: RunSummary,
    latest: DataFrame,
) -> None:
    """Shedding plans per cluster -> decisions, transfers, pulsar-admin lines, std in run.json;
    with ``replay``, the live shedder's cycles instead, each with its ``data_time``.
    ``latest``: each node's latest ``node_load`` window."""
    if options.replay:
        members = inventory_rows(ingested.accepted("nodes")).collect()
        plans = replay_plans(
            _few(ingested, ingested.accepted("node_metrics")),
            _few(ingested, ingested.accepted("bundle_metrics")),
            inventory_of(members),
            options.config,
            strategy=options.strategy,
            seed=options.seed,
        )
    else:
        plans = shedding_plans(
            _few(ingested, latest),
            _few(ingested, ingested.latest("bundle_metrics")),
            _few(ingested, ingested.accepted("nodes")),
            options.config.shedding,
            samples=_few(ingested, ingested.latest("node_metrics")),
            strategy=options.strategy,
            cycles=options.cycles,
            until_balanced=options.until_balanced,
            seed=options.seed,
        )
    plans, rows = _collected(spark, plans)
    times = [F.timestamp_micros("at_us").alias("data_time")] if options.replay else []
    order = ["cluster", "cycle", "source", "bundle"]
    transfers = plans.where("kind = 'transfer'").select(*TRANSFER_COLUMNS, *times)
    out.write_small("transfers", transfers, order)
    decisions = plans.where("kind IN ('decision', 'transfer')").select(*DECISION_COLUMNS, *times)
    out.write_small("decisions", decisions, ("cluster", "cycle", "broker", "bundle"))
    loads = plans.where("kind = 'broker'").select("cluster", "broker", "load_before", "load_after")
    out.write_small("plan_loads", loads, ("cluster", "broker"))
    # Each cycle's transfers counted on the driver: a join in Spark would be a job.
    per_cycle = Counter((r["cluster"], r["cycle"]) for r in rows if r["kind"] == "transfer")
    cycles = plans.where("kind = 'cycle'").select(
        "cluster", "cycle", "label", "reason", "std_before", "std_after", "note", *times
    )
    counted = [(*r, per_cycle[r["cluster"], r["cycle"]]) for r in cycles.collect()]
    schema = T.StructType([*cycles.schema.fields, T.StructField("transfers", T.LongType())])
    out.write_small("plan_cycles", local_frame(spark, counted, schema), ("cluster", "cycle"))
    _advice(rows, summary)
    for row in (r for r in rows if r["kind"] == "summary"):
        entry = summary.clusters.setdefault(row["cluster"], {})
        if row["std_before"] is not None:  # None: nothing to do (the note says why)
            entry["std_before"] = round(row["std_before"], 6)
            entry["std_after"] = round(row["std_after"], 6)
        entry["plan"] = row["note"]
        entry["target_std"] = options.config.shedding.target_std
        if row["warning"]:
            entry["warning"] = row["warning"]
    # The exported commands carry net moves only (a round trip is no unload).
    chains: dict[str, list[tuple[int, Move, Reason]]] = {}
    moved = [r for r in rows if r["kind"] == "transfer"]
    for row in sorted(moved, key=lambda r: tuple(r[c] for c in order)):
        move = Move(
            bundle=row["bundle"],
            source=row["source"],
            destination=row["destination"],
            throughput=row["throughput"],
        )
        chains.setdefault(row["cluster"], []).append((row["cycle"], move, Reason.UNKNOWN))
    shedding = options.config.shedding
    moves = {
        cluster: unload_script(
            [(cycle, m) for cycle, m, _ in net_transfers(chain)],
            interval_s=shedding.interval_minutes * 60,
            cooldown_s=shedding.shedding_delay_seconds,
        )
        for cluster, chain in chains.items()
    }
    for cluster, entry in summary.clusters.items():
        entry["transfers"] = len(chains.get(cluster, []))  # the plan's, cycle by cycle
        lines = moves.get(cluster, [])
        if lines and entry.get("recommended", "") is None:  # offered, not recommended
            lines = []
        # the net moves exported, when recommended (the script's comments and pauses aside)
        entry["unloads"] = sum(1 for x in lines if not x.startswith(("#", "sleep ")))
        if not lines and entry.get("recommendation"):
            lines = [f"# nothing to run: {entry['recommendation']}"]
        if "warning" in entry:  # as a comment, so the script still runs
            lines = [f"# warning: {entry['warning']}", *lines]
        out.write_text(f"exports/pulsar-admin/{cluster}.sh", "".join(f"{x}\n" for x in lines))


def _advice(rows: list[Row], summary: RunSummary) -> None:
    """run.json per cluster: the recommendation (strategy and sentence), upstream's plan and
    the bundles left out as no longer reported."""
    for row in (r for r in rows if r["kind"] in ("recommendation", "upstream", "stale")):
        entry = summary.clusters.setdefault(row["cluster"], {})
        if row["kind"] == "stale":
            entry["stale_bundles"] = {"count": row["cycle"], "first": row["note"].split("\n")}
        elif row["kind"] == "recommendation":
            entry["recommended"] = None if row["label"] == "none" else row["label"]
            entry["recommendation"] = row["note"]
        else:
            entry["upstream"] = {
                "strategy": row["label"],
                "std_after": round(row["std_after"], 6),
                "transfers": row["cycle"],
            }


def _allocations(
    spark: SparkSession,
    ingested: Ingested,
    options: JobOptions,
    out: StagedOutput,
    summary: RunSummary,
) -> None:
    """Allocation plans per cluster -> allocations, Kafka reassignment JSON where ids allow."""
    plans = allocation_plans(
        _few(ingested, ingested.accepted("nodes")),
        _few(ingested, ingested.accepted("allocation_requests")),
        options.config.allocation,
        seed=options.seed,
    )
    plans, rows = _collected(spark, plans)
    placed = plans.where("error IS NULL").drop("error")
    out.write_small("allocations", placed, ("cluster", "topic", "partition", "replica"))
    for row in (r for r in rows if r["error"] is not None):
        summary.clusters.setdefault(row["cluster"], {})["allocation_error"] = row["error"]
    assignments: dict[str, dict[tuple[str, int], list[Replica]]] = {}
    order = ("cluster", "topic", "partition", "replica")
    ok = [r for r in rows if r["error"] is None]
    for row in sorted(ok, key=lambda r: tuple(r[c] for c in order)):
        partitions = assignments.setdefault(row["cluster"], {})
        replica = Replica(node=NodeId(row["node"]), core=row["core"])
        partitions.setdefault((row["topic"], row["partition"]), []).append(replica)
    for cluster, partitions in assignments.items():
        entry = summary.clusters.setdefault(cluster, {})
        entry["partitions_allocated"] = len(partitions)
        placed_partitions = [
            PartitionAssignment(topic=t, partition=p, replicas=tuple(members))
            for (t, p), members in sorted(partitions.items())
        ]
        try:
            ids = broker_ids({r.node for a in placed_partitions for r in a.replicas})
        except TrimtabError as exc:  # Kafka wants numeric broker ids; host names have none
            entry["kafka_reassignment"] = f"not written: {exc}"
            continue
        out.write_json(f"exports/kafka/{cluster}.json", reassignment(placed_partitions, ids))


def _load_summary(loads: DataFrame, summary: RunSummary) -> None:
    """Per cluster: how many nodes have a load, their mean and population std (latest).
    Computed on the driver: ``loads`` are local rows (no Spark job), one per node."""
    by_cluster: dict[str, list[float]] = {}
    counts: Counter[str] = Counter()
    for row in loads.where("latest").select("cluster", "load").collect():
        counts[row["cluster"]] += 1
        if row["load"] is not None:  # a window without a value (see node_loads)
            by_cluster.setdefault(row["cluster"], []).append(row["load"])
    for cluster in sorted(counts):
        entry = summary.clusters.setdefault(cluster, {})
        entry["nodes_with_load"] = counts[cluster]
        values = np.asarray(by_cluster.get(cluster, []), dtype=float)
        if values.size:
            entry["load_mean"] = round(float(values.mean()), 6)
            entry["load_std"] = round(float(values.std()), 6)


def _by_rule(spark: SparkSession, out: StagedOutput) -> list[tuple[str, str, int, str]]:
    """(table, rule, rows, one reason) of the staged ``quarantine``: on a local output counted
    by pyarrow on three of its columns (no Spark job), elsewhere by Spark."""
    local = out.local_path("quarantine")
    if local is None:
        counted = (
            out.read_table(spark, "quarantine")
            .groupBy("table", "rule")
            .agg(F.count("*").alias("count"), F.min("reason").alias("reason"))
        )
        return [(r["table"], r["rule"], r["count"], r["reason"]) for r in counted.collect()]
    columns = pq.read_table(local, columns=["table", "rule", "reason"])
    counts = columns.group_by(["table", "rule"]).aggregate([("rule", "count"), ("reason", "min")])
    return [(c["table"], c["rule"], c["rule_count"], c["reason_min"]) for c in counts.to_pylist()]


def _telemetry_verdict(summary: RunSummary) -> None:
    """Per cluster with nodes but no node holding a load: ``no_telemetry``, a sentence with
    the dominant reason the node_metrics rows were refused for (issue 42: a run whose
    telemetry was all in percent said "mean load 0.000")."""
    table = summary.tables.get("node_metrics", {})
    rules = summary.quarantine_by_rule.get("node_metrics", {})
    if rules:
        rule, count = max(rules.items(), key=lambda item: (item[1], item[0]))
        example = summary.examples.get(("node_metrics", rule), "")
        why = f"{count} of {table.get('read', 0)} node_metrics rows were quarantined as {rule}" + (
            f" (e.g. {example})" if example else ""
        )
    else:
        why = "no node_metrics row names its nodes"
    for entry in summary.clusters.values():
        if entry.get("nodes") and not entry.get("nodes_with_load"):
            entry["no_telemetry"] = f"no usable telemetry: {why}"


def _count(
    ingested: Ingested,
    summary: RunSummary,
    reports: StagedReports | None,
    refused: list[tuple[str, str, int, str]],
) -> None:
    """Rows read, accepted and quarantined per table, and quarantined rows per rule.

    Rows read are counted on the files themselves (no rule runs for that); the quarantined
    ones in the written quarantine (``refused``: table, rule, rows); the rest were accepted.
    """
    summary.examples = {(where, rule): reason for where, rule, _, reason in refused}
    for name, table in ingested.tables.items():
        by_rule = {rule: rows for where, rule, rows, _ in refused if where == name}
        quarantined = sum(by_rule.values())
        summary.tables[name] = {
            "read": table.rows_read,
            "accepted": table.rows_read - quarantined,
            "quarantined": quarantined,
        }
        summary.quarantine_by_rule[name] = dict(sorted(by_rule.items()))
    if reports is not None:  # documents read; their rows are counted in their tables
        bad = len(reports.refused)
        summary.tables["load_reports"] = {
            "read": reports.read,
            "accepted": reports.read - bad,
            "quarantined": bad,
        }
        summary.quarantine_by_rule["load_reports"] = {"bad_report": bad} if bad else {}
    # The inventory is local rows (see ingest): counted on the driver, no Spark job.
    members = Counter(
        row["cluster"] for row in ingested.accepted("nodes").select("cluster").collect()
    )
    for cluster in sorted(members):
        summary.clusters[cluster] = {"nodes": members[cluster]}
