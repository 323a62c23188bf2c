"""Node loads: per-window means in Spark, then the engine's load formula and moving averages.

Goals
    ``node_load`` holds, per node and window, the mean of each metric, and the weighted max
    and its moving averages exactly as the shedding engine computes them over every sample
    (:func:`trimtab.shedding.telemetry.fold`, what ``trimtab shed`` does): the values after the
    window's last sample. The newest window of a broker is therefore its load data in the
    engine's snapshot, however many samples each window holds.

Algorithm
    1. Spark swaps each accepted ``node_metrics`` sample's cluster and node names for
       integers from the inventory (a broadcast join, no shuffle); times travel as
       microseconds. Only numbers cross to Python, as Arrow; the inventory's limits (cores,
       memory, NIC) go with the function, not with each row.
    2. The samples are partitioned by cluster and ``mapInArrow`` gets each partition whole,
       in any order: NumPy sorts it by node and time (node numbers follow the names, so each
       cluster is one run), which Spark's ``groupBy().applyInPandas`` paid for with a sort of
       its own and a pandas copy of every column. Per cluster, the engine folds the samples
       column-wise (:func:`~trimtab.shedding.telemetry.fold_columns`: the weighted max of each
       sample, then per node the moving averages, first sample setting them, then
       ``h·ema + (1 − h)·x``); its reference limits for ``absolute`` load are the largest of
       the cluster's brokers, as the shedding plans use, or of all its nodes when it has no
       broker.
    3. In the same call NumPy averages every metric per (node, window; windows aligned to
       the epoch, as Spark's ``window()`` aligns them) and keeps the sample count, and of the
       window's last sample its time, its disk view (what ``bookie_weights`` draws from, so
       it needs no pass of its own), its weighted max and the moving averages through it.
       With samples about as frequent as windows, a Spark aggregation would shuffle and hash
       as many groups as rows for no reduction; sorted, each window is a run of rows that
       ``reduceat`` sums in one vectorised pass (means are summed in row order, so they may
       differ from pandas' compensated sums in the last bits when a window holds many
       samples).
    4. On a local output the Python side writes its rows to Parquet itself, names taken
       from the inventory by number (:func:`write_node_loads`); elsewhere the names come back
       by a broadcast join and Spark writes them (:func:`node_loads`). Either way each file
       is already in (cluster, node, window_start) order: writing needs no sort of its own.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from trimtab.cluster import Role
from trimtab.config import SheddingConfig
from trimtab.pipeline.local import local_frame
from trimtab.pipeline.schemas import serves
from trimtab.shedding.load import Limits, LoadModel, NodeSample
from trimtab.shedding.telemetry import ema_by_group, fold_columns

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
# Node and cluster numbers and names (see _Inventory.ids).
_IDS = T.StructType(
    [
        T.StructField("_node", T.IntegerType()),
        T.StructField("_cluster", T.IntegerType()),
        T.StructField("cluster", T.StringType()),
        T.StructField("node", T.StringType()),
    ]
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


def window_seconds(text: str) -> int:
    """``"1m"`` or ``"1 minutes"`` -> 60."""
    amount, unit = parse_window(text).split()
    return int(amount) * {"second": 1, "minute": 60, "hour": 3600, "day": 86400}[unit.rstrip("s")]


def node_loads(
    metrics: DataFrame, nodes: DataFrame, config: SheddingConfig, *, window: str = "1m"
) -> DataFrame:
    """Per node and window: metric means, weighted max, load (its moving average)."""
    samples, side = _Loads.of(metrics, nodes, config, window)
    numeric = samples.mapInArrow(side.batches, _NUMERIC_SCHEMA)
    ids = side.inventory.ids(metrics.sparkSession).drop("_cluster")
    return numeric.join(F.broadcast(ids), "_node").select(
        "cluster",
        "node",
        F.timestamp_micros("_window").alias("window_start"),
        "samples",
        F.timestamp_micros("_last").alias("last_sample_ts"),
        *METRICS,
        *_FOLDED,
        "latest",
        "last_disk_free_bytes",
        "last_disk_total_bytes",
        "folded_samples",
    )


def write_node_loads(
    metrics: DataFrame,
    nodes: DataFrame,
    config: SheddingConfig,
    directory: str,
    *,
    window: str = "1m",
) -> DataFrame:
    """:func:`node_loads`' rows written as Parquet by the Python side itself into a local
    ``directory`` (one ``part-NNNNN.parquet`` per partition); returns each node's latest
    window (the rows with ``latest``) as local rows, which is all the later stages read.

    The rows leave Python as Arrow already: handing them to Spark only to write them costs a
    conversion to Spark's rows, a join for the names and Spark's own Parquet writer, which is
    a third of the stage at 8 M rows; reading them back for their latest windows cost three
    more scans. A file is written hidden and renamed into place under its partition's
    number, so a task run twice leaves one copy.
    """
    samples, side = _Loads.of(metrics, nodes, config, window)
    names = side.inventory.names
    clusters, members = pa.array([c for c, _ in names]), pa.array([n for _, n in names])
    Path(directory).mkdir(parents=True, exist_ok=True)

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts = [_named(table, clusters, members) for table in side.numeric(batches)]
        if not parts:
            return
        rows = pa.concat_tables(parts)
        number = TaskContext.get().partitionId()  # type: ignore[union-attr]
        name = f"part-{number:05d}.parquet"
        hidden = Path(directory, f".{name}.{uuid.uuid4().hex}")
        pq.write_table(rows, hidden, use_dictionary=["cluster", "node"])
        hidden.replace(Path(directory, name))
        yield from rows.filter(rows.column("latest")).to_batches()

    latest = samples.mapInArrow(write, NODE_LOAD_SCHEMA)
    return local_frame(latest.sparkSession, latest.collect(), latest.schema)


#: ``node_load``'s columns after its key and times, in both schemas below.
_VALUES = (
    ", ".join(f"{m} double" for m in METRICS)
    + ", weighted_max double, load double, msg_throughput_ema double, latest boolean"
    + ", last_disk_free_bytes long, last_disk_total_bytes long, folded_samples long"
)
#: The Spark schema of ``node_load`` (what :func:`node_loads` gives and the files hold).
NODE_LOAD_SCHEMA = (
    "cluster string, node string, window_start timestamp, samples long, "
    "last_sample_ts timestamp, " + _VALUES
)


def _named(table: pa.Table, clusters: pa.Array, members: pa.Array) -> pa.Table:
    """The Python side's rows as ``node_load``'s columns: names for numbers, times."""
    node = table.column("_node")
    stamp = pa.timestamp("us", tz="UTC")
    named = {
        "cluster": clusters.take(node),
        "node": members.take(node),
        "window_start": table.column("_window").cast(stamp),
        "samples": table.column("samples"),
        "last_sample_ts": table.column("_last").cast(stamp),
    }
    rest = [c for c in table.column_names if c not in ("_node", "_window", "samples", "_last")]
    return pa.table({**named, **{c: table.column(c) for c in rest}})


@dataclass(frozen=True, slots=True)
class _Loads:
    """The Python side, shipped to the workers: one partition of samples (as
    :meth:`of` gives them) in, ``node_load``'s rows out, per cluster."""

    inventory: _Inventory
    model: LoadModel
    step_us: int

    @classmethod
    def of(
        cls, metrics: DataFrame, nodes: DataFrame, config: SheddingConfig, window: str
    ) -> tuple[DataFrame, _Loads]:
        """The accepted samples as numbers, partitioned by cluster, and the side for them."""
        inventory = _Inventory.of(nodes)
        ids = inventory.ids(metrics.sparkSession)
        micros = F.unix_micros("ts")
        samples = metrics.join(F.broadcast(ids), ["cluster", "node"], "inner").select(
            "_cluster",
            "_node",
            micros.alias("_ts"),
            *(F.col(m).cast("double") for m in METRICS),
        )
        side = cls(inventory, LoadModel.of(config), window_seconds(window) * 1_000_000)
        return samples.repartition("_cluster"), side

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """:meth:`numeric` as the record batches ``mapInArrow`` hands back to Spark."""
        for table in self.numeric(batches):
            yield from table.to_batches()

    def numeric(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
        """One partition's samples (any clusters, any order) -> per cluster, its rows."""
        rows = pa.Table.from_batches(list(batches), schema=_SAMPLES)
        node, ts = rows.column("_node").to_numpy(), rows.column("_ts").to_numpy()
        order = np.lexsort((ts, node))  # by node, then time; stable
        node, ts = node[order], ts[order]
        values = {m: rows.column(m).to_numpy()[order] for m in METRICS}  # nulls as NaN
        # Node numbers follow (cluster, node) order, so each cluster is one run of rows.
        starts = np.flatnonzero(np.diff(self.inventory.cluster[node])) + 1
        for lo, hi in zip([0, *starts], [*starts, len(node)], strict=True):
            if hi > lo:
                part = {m: v[lo:hi] for m, v in values.items()}
                yield _arrow(self._cluster(node[lo:hi], ts[lo:hi], part))

    def _cluster(
        self, node: np.ndarray, ts: np.ndarray, values: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """One cluster's samples, sorted by node and time -> its per-window rows."""
        limits = self.inventory.limits(node)
        absolute = self.model.normalisation == "absolute"
        reference = self.inventory.reference(node) if absolute else None
        columns = {m: values[m] for m in SAMPLE_FIELDS}
        folded = fold_columns(self.model, columns, node, **limits, reference=reference)
        window = ts - np.mod(ts, self.step_us)
        return _per_window(node, ts, window, values, folded)


_SAMPLES = pa.schema(
    [("_cluster", pa.int32()), ("_node", pa.int32()), ("_ts", pa.int64())]
    + [(m, pa.float64()) for m in METRICS]
)


#: What the engine's fold gives per sample; a window keeps its last sample's.
_FOLDED = ("weighted_max", "load", "msg_throughput_ema")
_LAST = {"disk_free_bytes": "last_disk_free_bytes", "disk_total_bytes": "last_disk_total_bytes"}


def _per_window(
    node: np.ndarray,
    ts: np.ndarray,
    window: np.ndarray,
    values: dict[str, np.ndarray],
    folded: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """One row per (node, window) of samples (at least one) sorted by node and time: metric
    means (of the values present, NaN where none is), sample count, and the last sample's
    time, disk view (its last present value) and folded values.

    Sorted, each (node, window) is a run of rows, so NumPy reduces the runs directly: a
    pandas group-by over as many groups as rows cost seconds per cluster in copies alone.
    Where every window holds one sample, as when samples come once a window, or a column has
    no missing value, the runs need no reduction or no count of their own.
    """
    count = len(node)
    change = np.ones(count, dtype=bool)
    change[1:] = (node[1:] != node[:-1]) | (window[1:] != window[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], count) - 1
    samples = (ends - starts + 1).astype(np.int64)
    out: dict[str, np.ndarray] = {
        "_node": node[starts],
        "_window": window[starts],
        "samples": samples,
        "_last": ts[ends],
    }
    single = len(starts) == count
    rows = np.arange(count)
    for metric in METRICS:
        column = values[metric]
        present = ~np.isnan(column)
        if single:
            out[metric] = column
        elif present.all():
            out[metric] = np.add.reduceat(column, starts) / samples
        else:
            sums = np.add.reduceat(np.where(present, column, 0.0), starts)
            seen = np.add.reduceat(present.astype(np.int64), starts)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[metric] = np.where(seen > 0, sums / seen, np.nan)
        if metric in _LAST:
            if single or present.all():
                out[_LAST[metric]] = column[ends]
            else:
                last = np.maximum.reduceat(np.where(present, rows, -1), starts)
                out[_LAST[metric]] = np.where(last >= starts, column[last], np.nan)
    for name in _FOLDED:
        out[name] = folded[name][ends]
    owner = node[ends]
    out["latest"] = np.append(owner[1:] != owner[:-1], True)
    # The node's samples through each window: what the moving averages have folded.
    first = np.ones(count, dtype=bool)
    first[1:] = node[1:] != node[:-1]
    since = np.maximum.accumulate(np.where(first, rows, 0))
    out["folded_samples"] = (ends - since[ends] + 1).astype(np.int64)
    return out


def _arrow(columns: dict[str, np.ndarray]) -> pa.Table:
    """The Python side's result as Arrow, NaN as null (what Spark made of pandas' NaN)."""
    arrays = []
    for field in _NUMERIC_ARROW:
        values = columns[field.name]
        if values.dtype.kind == "f":
            missing = np.isnan(values)
            if pa.types.is_integer(field.type):  # the disk view: byte counts, whole
                values = np.where(missing, 0.0, values).astype(np.int64)
            mask = missing if missing.any() else None
            arrays.append(pa.array(values, type=field.type, mask=mask))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=_NUMERIC_ARROW)


@dataclass(frozen=True, slots=True)
class _Inventory:
    """The inventory's nodes in (cluster, node) order: by row number, their names, limits and
    cluster's number (small: collected once)."""

    names: list[tuple[str, str]]
    cores: np.ndarray
    memory: np.ndarray
    nic: np.ndarray
    broker: np.ndarray
    cluster: np.ndarray

    @classmethod
    def of(cls, nodes: DataFrame) -> _Inventory:
        rows = nodes.select(
            "cluster",
            "node",
            "cores",
            "memory_bytes",
            "nic_bps",
            serves(Role.BROKER).alias("broker"),
        ).collect()
        # Sorted here, not by Spark: the job's inventory is local rows, read without a job.
        rows.sort(key=lambda r: (r["cluster"], r["node"]))
        # Nodes and clusters travel to Python as small integers: every sample would carry
        # their strings, and each would cost the hand-over to Python and back.
        clusters = {name: i for i, name in enumerate(sorted({r["cluster"] for r in rows}))}
        return cls(
            names=[(r["cluster"], r["node"]) for r in rows],
            cores=np.array([float(r["cores"]) for r in rows]),
            memory=np.array([float(r["memory_bytes"]) for r in rows]),
            nic=np.array([float(r["nic_bps"]) for r in rows]),
            broker=np.array([bool(r["broker"]) for r in rows]),
            cluster=np.array([clusters[r["cluster"]] for r in rows], dtype=np.int64),
        )

    def ids(self, spark: SparkSession) -> DataFrame:
        """Names to numbers, node and cluster (local rows: no Spark job to read them)."""
        return local_frame(
            spark,
            [(i, int(self.cluster[i]), c, n) for i, (c, n) in enumerate(self.names)],
            _IDS,
        )

    def limits(self, node: np.ndarray) -> dict[str, np.ndarray]:
        """The limits lined up with samples of these node numbers."""
        return {
            "cores": self.cores[node],
            "memory_bytes": self.memory[node],
            "nic_bps": self.nic[node],
        }

    def reference(self, node: np.ndarray) -> Limits:
        """The cluster's reference limits: the largest of its brokers that have samples, or
        of all its nodes when none is a broker."""
        members = np.unique(node)
        pool = members[self.broker[members]] if self.broker[members].any() else members
        return Limits(
            cores=self.cores[pool].max(),
            memory_bytes=self.memory[pool].max(),
            nic_bps=self.nic[pool].max(),
        )


#: What the Python side returns (names and node as integers, times in microseconds).
_NUMERIC_SCHEMA = "_node int, _window long, samples long, _last long, " + _VALUES
_ARROW_TYPES = {
    "int": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
}
_NUMERIC_ARROW = pa.schema(
    [(name, _ARROW_TYPES[kind]) for name, kind in (c.split() for c in _NUMERIC_SCHEMA.split(", "))]
)
