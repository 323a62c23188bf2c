"""From telemetry tables to a shedding snapshot: ``node_metrics`` and ``bundle_metrics``.

Reading files is here, apart from the deciders; :func:`build_snapshot` itself takes plain
values, so the Spark pipeline can call it per cluster with rows it already validated.

Rules
    * Columns as in DESIGN.md. ``ts`` is UTC: epoch seconds, or ISO 8601 text. Usages
      (``cpu``, ``memory``, ``direct_memory``) are fractions in 0..1; rates are ≥ 0.
    * Bundle names are ``tenant/namespace/0xLOWER_0xUPPER`` (what pulsar-admin takes).
    * A bad row is rejected with its file, line and reason, never dropped; so is a row for a
      node the inventory does not list in that cluster, and a second row for the same bundle
      and time. ``rows read = accepted + rejected`` for each table.
    * A bundle's latest row says where it lives and its short-term rates; a broker's load data
      folds all its samples in time order (the moving averages need the history).
    * ``now`` is the latest timestamp in the cluster's rows: no wall clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trimtab.cluster import ClusterState, NodeId, NodeState
from trimtab.shedding.load import Limits, LoadModel, NodeSample
from trimtab.shedding.snapshot import Bundle, BundleLoads, LoadSnapshot
from trimtab.tables import Parsed, RejectedRow, TableSpec, parse_table

__all__ = [
    "BUNDLE_METRICS",
    "NODE_METRICS",
    "Built",
    "BundleRow",
    "NodeRow",
    "build_snapshot",
    "parse_bundle_row",
    "parse_node_row",
    "read_bundle_metrics",
    "read_node_metrics",
    "split_bundle",
]

NODE_METRICS = TableSpec(
    "node_metrics",
    (
        "ts",
        "cluster",
        "node",
        "cpu",
        "memory",
        "direct_memory",
        "net_in_bps",
        "net_out_bps",
        "msg_in_per_s",
        "msg_out_per_s",
        "throughput_in_bytes_per_s",
        "throughput_out_bytes_per_s",
    ),
    ("disk_free_bytes", "disk_total_bytes"),
)
BUNDLE_METRICS = TableSpec(
    "bundle_metrics",
    (
        "ts",
        "cluster",
        "bundle",
        "broker",
        "msg_in_per_s",
        "msg_out_per_s",
        "throughput_in_bytes_per_s",
        "throughput_out_bytes_per_s",
    ),
    ("storage_bytes",),
)

_RANGE = re.compile(r"^0x[0-9a-fA-F]{1,16}_0x[0-9a-fA-F]{1,16}$")


def split_bundle(name: str) -> tuple[str, str]:
    """``'tenant/ns/0x00000000_0x40000000'`` -> ``('tenant/ns', '0x00000000_0x40000000')``."""
    namespace, _, hash_range = name.strip().rpartition("/")
    parts = namespace.split("/")
    if len(parts) != 2 or not all(parts) or not _RANGE.match(hash_range):
        raise ValueError(
            f"bad bundle name {name!r}: expected tenant/namespace/0xLOWER_0xUPPER, "
            "e.g. 'public/default/0x00000000_0x40000000'"
        )
    return namespace, hash_range


@dataclass(frozen=True, slots=True)
class NodeRow:
    cluster: str
    node: NodeId
    sample: NodeSample


@dataclass(frozen=True, slots=True)
class BundleRow:
    cluster: str
    ts: float
    bundle: Bundle


def parse_node_row(raw: Mapping[str, Any]) -> NodeRow:
    usages = {c: _number(raw, c, high=1.0) for c in ("cpu", "memory", "direct_memory")}
    rates = {
        c: _number(raw, c)
        for c in (
            "net_in_bps",
            "net_out_bps",
            "msg_in_per_s",
            "msg_out_per_s",
            "throughput_in_bytes_per_s",
            "throughput_out_bytes_per_s",
        )
    }
    return NodeRow(
        cluster=_text(raw, "cluster"),
        node=NodeId(_text(raw, "node")),
        sample=NodeSample(ts=_timestamp(raw), **usages, **rates),
    )


def parse_bundle_row(raw: Mapping[str, Any]) -> BundleRow:
    name = _text(raw, "bundle")
    split_bundle(name)
    return BundleRow(
        cluster=_text(raw, "cluster"),
        ts=_timestamp(raw),
        bundle=Bundle(
            name=name,
            broker=str(NodeId(_text(raw, "broker"))),
            throughput_in=_number(raw, "throughput_in_bytes_per_s"),
            throughput_out=_number(raw, "throughput_out_bytes_per_s"),
            msg_rate_in=_number(raw, "msg_in_per_s"),
            msg_rate_out=_number(raw, "msg_out_per_s"),
        ),
    )


def read_node_metrics(path: str | Path) -> Parsed[NodeRow]:
    return parse_table(path, NODE_METRICS, parse_node_row)


def read_bundle_metrics(path: str | Path) -> Parsed[BundleRow]:
    return parse_table(path, BUNDLE_METRICS, parse_bundle_row)


@dataclass(frozen=True, slots=True)
class Built:
    """A cluster's snapshot, its time, and the rows refused while building it."""

    snapshot: LoadSnapshot
    now: float
    limits: Mapping[str, Limits]
    rejected: tuple[RejectedRow, ...]


def build_snapshot(
    state: ClusterState,
    nodes: Iterable[tuple[NodeRow, RejectedRow]],
    bundles: Iterable[tuple[BundleRow, RejectedRow]],
    model: LoadModel,
) -> Built:
    """The snapshot of one cluster. Each row comes with a :class:`RejectedRow` *template*
    (source, line, raw row) used if the row has to be refused here."""
    members = {n.id: n for n in state}
    rejected: list[RejectedRow] = []
    samples: dict[str, list[NodeSample]] = {}
    latest = -math.inf
    for nrow, where in nodes:
        if nrow.cluster != state.name:
            continue
        if nrow.node not in members:
            rejected.append(
                _refuse(
                    where, f"node {nrow.node} is not in cluster {state.name!r} of the inventory"
                )
            )
            continue
        samples.setdefault(nrow.node, []).append(nrow.sample)
        latest = max(latest, nrow.sample.ts)
    chosen: dict[str, tuple[float, Bundle]] = {}
    for brow, where in bundles:
        if brow.cluster != state.name:
            continue
        if NodeId(brow.bundle.broker) not in members:
            rejected.append(
                _refuse(where, f"broker {brow.bundle.broker} is not in cluster {state.name!r}")
            )
            continue
        seen = chosen.get(brow.bundle.name)
        if seen is not None and seen[0] == brow.ts:
            rejected.append(
                _refuse(where, f"a second row for bundle {brow.bundle.name} at the same ts")
            )
            continue
        if seen is None or brow.ts > seen[0]:
            chosen[brow.bundle.name] = (brow.ts, brow.bundle)
        latest = max(latest, brow.ts)
    limits = {str(n.id): Limits.of(n.capacity) for n in state}
    reference = Limits.reference(limits.values()) if limits else None
    loads = []
    for broker, items in sorted(samples.items()):
        load = model.fold(broker, items, limits[broker], reference)
        if load is not None:
            loads.append(load)
    available = [str(n.id) for n in state if n.state is not NodeState.DOWN]
    snapshot = LoadSnapshot.of(
        loads,
        BundleLoads.of(b for _, b in (chosen[k] for k in sorted(chosen))),
        available=available,
    )
    return Built(snapshot, latest if latest > -math.inf else 0.0, limits, tuple(rejected))


def _refuse(template: RejectedRow, reason: str) -> RejectedRow:
    return RejectedRow(template.source, template.line, reason, template.row)


def _text(raw: Mapping[str, Any], column: str) -> str:
    value = raw.get(column)
    text = "" if value is None else str(value).strip()
    if not text:
        raise ValueError(f"missing {column}")
    return text


def _number(raw: Mapping[str, Any], column: str, *, high: float | None = None) -> float:
    value = raw.get(column)
    if value is None or (isinstance(value, str) and not value.strip()) or isinstance(value, bool):
        raise ValueError(
            f"missing {column}" if not isinstance(value, bool) else f"{column} must be a number"
        )
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{column} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{column} must be a finite number >= 0, got {value!r}")
    if high is not None and number > high:
        raise ValueError(
            f"{column} {value!r} is above {high:g}: usages are fractions (0.85 = 85 %)"
        )
    return number


def _timestamp(raw: Mapping[str, Any]) -> float:
    value = raw.get("ts")
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.timestamp()
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError("missing ts")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"ts {value!r} is neither epoch seconds nor ISO 8601") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
