"""Generate a realistic sample fleet: inventory and telemetry tables a pipeline run can read.

Goals
    Give ``make demo``, the tests and the benchmark a fleet that looks like the clusters trimtab
    is for: mixed SKUs (cores, disks, NICs), regions and racks, bundle throughputs with heavy
    tails and a daily rhythm, brokers loaded unevenly, one newly added empty broker and one
    read-only bookie per cluster, and, on request, malformed rows of every kind the ingest step
    must quarantine. The same seed gives byte-identical tables.

Layout written under ``out``::

    nodes/nodes.parquet                 one row per machine
    node_metrics/part-00000.parquet     one row per machine per minute
    bundle_metrics/part-00000.parquet   one row per bundle per minute
    allocation_requests/requests.parquet
    */bad-rows.csv                      (with bad_rows > 0) rows that break one rule each
                                        (the inventory: one per rule; telemetry: the fraction),
                                        rules named as in trimtab.contract
    expected_bad.json                   how many bad rows of each rule were written, per table

Telemetry is written in chunks of clusters so a fleet of tens of millions of rows never has to
fit in memory at once.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from trimtab.pipeline.schemas import INPUT_TABLES

__all__ = ["BAD_RULES", "FleetSpec", "GeneratedFleet", "generate_fleet"]

GIB = 2**30
TB = 10**12

#: (cores, memory bytes, disk bytes, NIC bits/s) per SKU; brokers and bookies draw from these.
BROKER_SKUS = (
    (8, 32 * GIB, TB // 2, 10 * 10**9),
    (16, 64 * GIB, TB, 25 * 10**9),
    (32, 128 * GIB, 2 * TB, 25 * 10**9),
)
BOOKIE_SKUS = (
    (8, 32 * GIB, 4 * TB, 10 * 10**9),
    (16, 64 * GIB, 8 * TB, 25 * 10**9),
    (32, 128 * GIB, 16 * TB, 25 * 10**9),
)

#: The ingest rules a generated bad row breaks, one rule per row, per table.
BAD_RULES = {
    "nodes": (
        "missing_key",
        "wrong_type",
        "negative",
        "not_positive",
        "free_above_total",
        "bad_state",
        "bad_role",
        "bad_node_id",
        "bad_location",
        "duplicate",
    ),
    "node_metrics": (
        "missing_key",
        "wrong_type",
        "not_finite",
        "out_of_range",
        "negative",
        "free_above_total",
        "unknown_node",
        "unknown_cluster",
        "bad_timestamp",
        "future_timestamp",
        "duplicate",
    ),
    "bundle_metrics": (
        "missing_key",
        "wrong_type",
        "not_finite",
        "negative",
        "bad_bundle",
        "unknown_node",
        "unknown_cluster",
        "bad_timestamp",
        "future_timestamp",
        "duplicate",
    ),
}

NODE_METRIC_COLUMNS = tuple(c.name for c in INPUT_TABLES["node_metrics"].columns)
BUNDLE_METRIC_COLUMNS = tuple(c.name for c in INPUT_TABLES["bundle_metrics"].columns)


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetSpec:
    """How big a fleet to make. Per-cluster counts; ``minutes`` of telemetry at 1 sample/min."""

    clusters: int = 3
    brokers: int = 8
    bookies: int = 9
    bundles: int = 64
    minutes: int = 30
    seed: int = 7
    bad_rows: float = 0.0
    start: datetime = datetime(2026, 11, 1, tzinfo=UTC)

    def __post_init__(self) -> None:
        for name in ("clusters", "brokers", "bookies", "bundles", "minutes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.brokers < 2:
            raise ValueError("brokers must be at least 2: one of them joins empty")
        if not 0.0 <= self.bad_rows < 0.5:
            raise ValueError(f"bad_rows must be a fraction in 0..0.5, got {self.bad_rows}")


@dataclass(frozen=True, slots=True)
class GeneratedFleet:
    """What was written: row counts per table and bad rows per table and rule."""

    out: Path
    rows: dict[str, int]
    bad: dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class _Cluster:
    name: str
    nodes: list[dict[str, Any]]
    brokers: list[str]
    bookies: list[str]
    bundle_names: list[str]
    bundle_owner: np.ndarray  # index into brokers
    bundle_base: np.ndarray  # bytes/s in, at the daily mean


def generate_fleet(
    spec: FleetSpec, out: str | Path, *, progress: Callable[[int, int], None] | None = None
) -> GeneratedFleet:
    """Write the fleet under ``out`` (created; existing tables there are replaced)."""
    root = Path(out)
    rng = np.random.default_rng(spec.seed)
    clusters = [_make_cluster(spec, i, rng) for i in range(spec.clusters)]
    for table in ("nodes", "node_metrics", "bundle_metrics", "allocation_requests"):
        directory = root / table
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.iterdir():
            old.unlink()
    rows = {"nodes": sum(len(c.nodes) for c in clusters)}
    pq.write_table(
        pa.Table.from_pylist([n for c in clusters for n in c.nodes]),
        root / "nodes" / "nodes.parquet",
    )
    requests = _requests(clusters, rng)
    pq.write_table(
        pa.Table.from_pylist(requests), root / "allocation_requests" / "requests.parquet"
    )
    rows["allocation_requests"] = len(requests)
    rows["node_metrics"] = rows["bundle_metrics"] = 0
    samples: dict[str, list[dict[str, Any]]] = {"node_metrics": [], "bundle_metrics": []}
    for index, cluster in enumerate(clusters):
        node_table, bundle_table = _telemetry(spec, cluster, rng)
        for name, table in (("node_metrics", node_table), ("bundle_metrics", bundle_table)):
            pq.write_table(table, root / name / f"part-{index:05d}.parquet")
            rows[name] += table.num_rows
            if not samples[name]:
                samples[name] = table.slice(0, 4).to_pylist()
        if progress is not None:
            progress(index + 1, len(clusters))
    bad: dict[str, dict[str, int]] = {}
    if spec.bad_rows > 0:
        # The inventory is small: one bad row per rule, on node ids no telemetry uses (the
        # duplicate repeats a real node's row, so either copy leaves the same inventory).
        bad["nodes"] = _write_bad_nodes(root / "nodes" / "bad-rows.csv", clusters[0].nodes[0])
        rows["nodes"] += sum(bad["nodes"].values())
        for name in ("node_metrics", "bundle_metrics"):
            count = max(len(BAD_RULES[name]), math.ceil(rows[name] * spec.bad_rows))
            bad[name] = _write_bad_rows(
                root / name / "bad-rows.csv", name, samples[name], count, spec
            )
            rows[name] += count
    (root / "expected_bad.json").write_text(json.dumps({"rows": rows, "bad": bad}, indent=2))
    return GeneratedFleet(root, rows, bad)


def _make_cluster(spec: FleetSpec, index: int, rng: np.random.Generator) -> _Cluster:
    name = f"cluster-{index:02d}"
    regions = ["us-east", "us-west"] if index % 2 == 0 else ["eu-central"]
    nodes: list[dict[str, Any]] = []
    brokers: list[str] = []
    bookies: list[str] = []
    for kind, count, skus, port in (
        ("broker", spec.brokers, BROKER_SKUS, 8080),
        ("bk", spec.bookies, BOOKIE_SKUS, 3181),
    ):
        for j in range(count):
            region = regions[j % len(regions)]
            rack = f"rack{(j // len(regions)) % 3 + 1}"
            cores, memory, disk, nic = skus[int(rng.integers(len(skus)))]
            node = f"{name}-{kind}{j:03d}.{region}.example.net:{port}"
            state = "writable"
            free = int(disk * rng.uniform(0.3, 0.9))
            if kind == "bk" and j == count - 1 and count > 1:
                state, free = "readonly", int(disk * 0.02)  # a bookie that filled up
            nodes.append(
                {
                    "cluster": name,
                    "node": node,
                    "region": region,
                    "rack": rack,
                    "cores": cores,
                    "memory_bytes": memory,
                    "disk_total_bytes": disk,
                    "disk_free_bytes": free,
                    "nic_bps": nic,
                    "state": state,
                    "role": "broker" if kind == "broker" else "bookie",
                }
            )
            (brokers if kind == "broker" else bookies).append(node)
    # Bundles: heavy-tailed sizes, owned unevenly; the last broker joined and owns nothing.
    base = rng.lognormal(mean=math.log(12e6), sigma=1.0, size=spec.bundles)
    owner_weights = rng.dirichlet(np.full(spec.brokers - 1, 0.8))
    owner = rng.choice(spec.brokers - 1, size=spec.bundles, p=owner_weights)
    # Every established broker owns at least one bundle (when there are enough bundles).
    seeded = min(spec.brokers - 1, spec.bundles)
    owner[rng.permutation(spec.bundles)[:seeded]] = np.arange(seeded)
    bundle_names = [_bundle_name(name, b, spec.bundles) for b in range(spec.bundles)]
    return _Cluster(name, nodes, brokers, bookies, bundle_names, owner, base)


def _bundle_name(cluster: str, index: int, count: int) -> str:
    """``tenant/namespace/0xLOWER_0xUPPER``, four bundles per namespace as Pulsar splits them."""
    per_ns = 4
    ns, part = divmod(index, per_ns)
    step = 2**32 // per_ns
    lower, upper = part * step, min((part + 1) * step, 2**32 - 1)
    return f"{cluster}-tenant/ns{ns:03d}/0x{lower:08x}_0x{upper:08x}"


def _telemetry(
    spec: FleetSpec, cluster: _Cluster, rng: np.random.Generator
) -> tuple[pa.Table, pa.Table]:
    minutes = spec.minutes
    start = np.datetime64(spec.start.astimezone(UTC).replace(tzinfo=None), "us")
    # UTC-adjusted timestamps, so Spark reads them as TIMESTAMP, not TIMESTAMP_NTZ.
    ts = pa.array(start + np.arange(minutes) * np.timedelta64(60, "s"), pa.timestamp("us", "UTC"))
    # Daily rhythm (peak mid-day UTC) plus per-sample noise; a flaky bundle spikes at random.
    hour = (np.arange(minutes) / 60.0 + spec.start.hour) % 24
    diurnal = 1.0 + 0.35 * np.sin((hour - 6.0) / 24.0 * 2 * math.pi)
    noise = rng.lognormal(0.0, 0.1, size=(minutes, len(cluster.bundle_base)))
    tput_in = cluster.bundle_base[None, :] * diurnal[:, None] * noise
    flaky = int(rng.integers(len(cluster.bundle_base)))
    tput_in[:, flaky] *= np.where(rng.random(minutes) < 0.1, 8.0, 1.0)
    tput_out = tput_in * rng.uniform(1.0, 3.0, size=len(cluster.bundle_base))[None, :]
    msg_in = tput_in / 1024.0
    n_bundles = len(cluster.bundle_base)
    bundle_table = pa.table(
        {
            "ts": ts.take(np.repeat(np.arange(minutes), n_bundles)),
            "cluster": pa.array([cluster.name] * (minutes * n_bundles)),
            "bundle": pa.array(cluster.bundle_names * minutes),
            "broker": pa.array([cluster.brokers[o] for o in cluster.bundle_owner] * minutes),
            "msg_in_per_s": msg_in.ravel(),
            "msg_out_per_s": (msg_in * 2).ravel(),
            "throughput_in_bytes_per_s": tput_in.ravel(),
            "throughput_out_bytes_per_s": tput_out.ravel(),
            "storage_bytes": np.repeat(
                (cluster.bundle_base[None, :] * 3600.0).astype(np.int64), minutes, 0
            ).ravel(),
        }
    )
    # Broker usage follows its bundles against its own NIC and cores; bookies follow writes.
    by_node = {n["node"]: n for n in cluster.nodes}
    names = cluster.brokers + cluster.bookies
    n_nodes = len(names)
    per_broker_in = np.zeros((minutes, len(cluster.brokers)))
    per_broker_out = np.zeros((minutes, len(cluster.brokers)))
    np.add.at(per_broker_in.T, cluster.bundle_owner, tput_in.T)
    np.add.at(per_broker_out.T, cluster.bundle_owner, tput_out.T)
    per_bookie_in = per_broker_in.sum(1, keepdims=True) / max(len(cluster.bookies), 1)
    total_in = np.concatenate([per_broker_in, np.repeat(per_bookie_in, len(cluster.bookies), 1)], 1)
    total_out = np.concatenate([per_broker_out, total_in[:, len(cluster.brokers) :] * 0.2], 1)
    nic = np.array([by_node[n]["nic_bps"] for n in names], dtype=float)
    cores = np.array([by_node[n]["cores"] for n in names], dtype=float)
    net_in, net_out = total_in * 8, total_out * 8
    cpu = np.clip(
        0.05
        + (net_in + net_out) / nic / 2
        + 2e-9 * total_in / cores
        + rng.normal(0, 0.01, (minutes, n_nodes)),
        0.0,
        1.0,
    )
    memory = np.clip(0.3 + 0.4 * cpu + rng.normal(0, 0.01, cpu.shape), 0.0, 1.0)
    disk_total = np.array([by_node[n]["disk_total_bytes"] for n in names], dtype=np.int64)
    disk_free0 = np.array([by_node[n]["disk_free_bytes"] for n in names], dtype=np.int64)
    written = np.cumsum(total_in * 60.0, axis=0).astype(np.int64)
    written[:, : len(cluster.brokers)] //= 100  # brokers keep little on disk
    disk_free = np.clip(disk_free0[None, :] - written, 0, None)
    node_table = pa.table(
        {
            "ts": ts.take(np.repeat(np.arange(minutes), n_nodes)),
            "cluster": pa.array([cluster.name] * (minutes * n_nodes)),
            "node": pa.array(names * minutes),
            "cpu": cpu.ravel(),
            "memory": memory.ravel(),
            "direct_memory": (memory * 0.5).ravel(),
            "net_in_bps": net_in.ravel(),
            "net_out_bps": net_out.ravel(),
            "msg_in_per_s": (total_in / 1024).ravel(),
            "msg_out_per_s": (total_out / 1024).ravel(),
            "throughput_in_bytes_per_s": total_in.ravel(),
            "throughput_out_bytes_per_s": total_out.ravel(),
            "disk_free_bytes": disk_free.ravel(),
            "disk_total_bytes": np.repeat(disk_total[None, :], minutes, 0).ravel(),
        }
    )
    return node_table, bundle_table


def _requests(clusters: list[_Cluster], rng: np.random.Generator) -> list[dict[str, Any]]:
    return [
        {
            "cluster": c.name,
            "topic": f"orders-{t}",
            "partitions": int(rng.integers(4, 33)),
            "replication_factor": 3,
        }
        for c in clusters
        for t in range(3)
    ]


def _write_bad_rows(
    path: Path,
    table: str,
    samples: list[dict[str, Any]],
    count: int,
    spec: FleetSpec,
) -> dict[str, int]:
    """Write ``count`` rows, each breaking exactly one rule, cycling through the rules."""
    columns = NODE_METRIC_COLUMNS if table == "node_metrics" else BUNDLE_METRIC_COLUMNS
    rules = BAD_RULES[table]
    counts = dict.fromkeys(rules, 0)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for i, rule in zip(range(count), _cycle(rules), strict=False):
            sample = samples[i % len(samples)]
            row = {k: _csv_value(v) for k, v in sample.items()}
            if rule != "duplicate":
                # Move the row to a minute no good row has, so it is no accidental duplicate.
                late = spec.start + timedelta(minutes=spec.minutes + 1 + i)
                row["ts"] = _csv_value(late)
            _break(row, rule, table, i)
            writer.writerow(row)
            counts[rule] += 1
    return {rule: n for rule, n in counts.items() if n}


def _write_bad_nodes(path: Path, node: dict[str, Any]) -> dict[str, int]:
    """One inventory row per rule of :data:`BAD_RULES` ``["nodes"]``, built from ``node``."""
    columns = [c.name for c in INPUT_TABLES["nodes"].columns]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for i, rule in enumerate(BAD_RULES["nodes"]):
            row = {k: _csv_value(node.get(k, "")) for k in columns}
            if rule != "duplicate":
                row["node"] = f"{node['cluster']}-bad{i:02d}.example.net:3181"
            row |= {
                "missing_key": {"node": ""},
                "wrong_type": {"cores": "eight"},
                "negative": {"memory_bytes": "-1"},
                "not_positive": {"cores": "0"},
                "free_above_total": {"disk_free_bytes": str(int(node["disk_total_bytes"]) + 1)},
                "bad_state": {"state": "broken"},
                "bad_role": {"role": "zookeeper"},
                "bad_node_id": {"node": "not a node id!"},
                "bad_location": {"rack": "rack1/extra"},
            }.get(rule, {})
            writer.writerow(row)
    return dict.fromkeys(BAD_RULES["nodes"], 1)


def _cycle(items: tuple[str, ...]) -> Iterator[str]:
    while True:
        yield from items


def _break(row: dict[str, Any], rule: str, table: str, i: int) -> None:
    key = "node" if table == "node_metrics" else "bundle"
    if rule == "missing_key":
        row[key] = ""
    elif rule == "wrong_type":
        row["msg_in_per_s"] = "lots"
    elif rule == "not_finite":
        row["msg_out_per_s"] = "NaN"
    elif rule == "bad_bundle":
        row["bundle"] = row["bundle"].rsplit("/", 1)[0] + f"/notarange{i}"
    elif rule == "out_of_range":
        row["cpu"] = "1.5"
    elif rule == "negative":
        row["throughput_in_bytes_per_s"] = str(-1000 - i)
    elif rule == "free_above_total":
        row["disk_free_bytes"] = str(int(row["disk_total_bytes"]) + 1)
    elif rule == "unknown_node":
        row[key if table == "node_metrics" else "broker"] = f"ghost-{i}.example.net:3181"
    elif rule == "unknown_cluster":
        row["cluster"] = f"nowhere-{i}"
    elif rule == "bad_timestamp":
        row["ts"] = "yesterday-ish"
    elif rule == "future_timestamp":
        row["ts"] = _csv_value(datetime(2100, 1, 1, tzinfo=UTC) + timedelta(minutes=i))
    # "duplicate" leaves the copied sample as it is.


def _csv_value(value: Any) -> str:
    if isinstance(value, datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=UTC)
        return stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, float):
        return repr(value)
    return str(value)
