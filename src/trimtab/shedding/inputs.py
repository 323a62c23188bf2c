"""From telemetry tables to a shedding snapshot: ``node_metrics`` and ``bundle_metrics``.

Reading files is here, apart from the deciders; the snapshot itself is built by
:mod:`trimtab.shedding.telemetry` (re-exported here), from plain values that the Spark
pipeline hands over per cluster too.

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
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trimtab.cluster import NodeId
from trimtab.shedding.load import NodeSample
from trimtab.shedding.snapshot import Bundle
from trimtab.shedding.telemetry import Built, build_snapshot
from trimtab.tables import Parsed, TableSpec, parse_table

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
