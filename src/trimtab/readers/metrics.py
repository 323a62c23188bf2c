"""Read the telemetry tables ``node_metrics`` and ``bundle_metrics`` into the shedder's rows.

Reading files is here, apart from the deciders: this module turns a path into
:class:`~trimtab.shedding.telemetry.NodeRow` and :class:`~trimtab.shedding.telemetry.BundleRow`
values (and refused rows); :func:`trimtab.shedding.telemetry.build_snapshot` builds the
snapshot from them, as it does from the values the Spark pipeline hands over per cluster.

Rules
    * Columns and row rules are :data:`trimtab.contract.TABLES` (the pipeline's too): ``ts``
      is UTC, epoch seconds or ISO 8601 text; usages (``cpu``, ``memory``,
      ``direct_memory``) are fractions in 0..1; rates are finite and ≥ 0; bundle names are
      ``tenant/namespace/0xLOWER_0xUPPER`` (what pulsar-admin takes).
    * A bad row is rejected with its file, line and reason, never dropped; so is a row for a
      node the inventory does not list in that cluster, and a second row for the same bundle
      and time. Samples with the same key and ``ts`` are settled by
      :mod:`trimtab.contract.repeats`: an exact copy is a ``duplicate`` (the first is kept),
      samples that differ are all refused as ``conflict`` (never averaged).
      ``rows read = accepted + rejected`` for each table.
    * A bundle's latest row says where it lives and its short-term rates; a broker's load data
      folds all its samples in time order (the moving averages need the history).
    * ``now`` is the latest timestamp in the cluster's rows: no wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from trimtab.cluster import NodeId
from trimtab.contract import TABLES, RowError, check_row
from trimtab.readers.table_files import Parsed, TableSpec, parse_table, refuse_repeats
from trimtab.shedding.load import NodeSample
from trimtab.shedding.snapshot import Bundle
from trimtab.shedding.telemetry import BundleRow, NodeRow

__all__ = [
    "BUNDLE_METRICS",
    "NODE_METRICS",
    "parse_bundle_row",
    "parse_node_row",
    "read_bundle_metrics",
    "read_node_metrics",
]

NODE_METRICS = TableSpec.of(TABLES["node_metrics"])
BUNDLE_METRICS = TableSpec.of(TABLES["bundle_metrics"])
_USAGES = ("cpu", "memory", "direct_memory")
_RATES = (
    "net_in_bps",
    "net_out_bps",
    "msg_in_per_s",
    "msg_out_per_s",
    "throughput_in_bytes_per_s",
    "throughput_out_bytes_per_s",
)


def parse_node_row(raw: Mapping[str, Any], *, now: datetime | None = None) -> NodeRow:
    """One ``node_metrics`` row, or :class:`~trimtab.contract.RowError` with its rule."""
    row = check_row(TABLES["node_metrics"], raw, now=now)
    return NodeRow(
        cluster=row["cluster"],
        node=_member(row["node"]),
        sample=NodeSample(ts=row["ts"], **{c: row[c] for c in (*_USAGES, *_RATES)}),
    )


def parse_bundle_row(raw: Mapping[str, Any], *, now: datetime | None = None) -> BundleRow:
    """One ``bundle_metrics`` row, or :class:`~trimtab.contract.RowError` with its rule."""
    row = check_row(TABLES["bundle_metrics"], raw, now=now)
    return BundleRow(
        cluster=row["cluster"],
        ts=row["ts"],
        bundle=Bundle(
            name=row["bundle"],
            broker=str(_member(row["broker"])),
            throughput_in=row["throughput_in_bytes_per_s"],
            throughput_out=row["throughput_out_bytes_per_s"],
            msg_rate_in=row["msg_in_per_s"],
            msg_rate_out=row["msg_out_per_s"],
        ),
    )


def _member(text: str) -> NodeId:
    """A telemetry row's node: a text that is no node id names no node of the inventory."""
    try:
        return NodeId(text)
    except ValueError as exc:
        raise RowError("unknown_node", str(exc)) from None


def read_node_metrics(path: str | Path, *, now: datetime | None = None) -> Parsed[NodeRow]:
    """Every row of ``node_metrics``; with ``now``, samples from the future are refused."""
    parsed = parse_table(path, NODE_METRICS, partial(parse_node_row, now=now))
    return refuse_repeats(
        parsed,
        lambda r: (r.cluster, r.node, r.sample.ts),
        lambda key: f"node {key[1]} of cluster {key[0]!r} at ts {_iso(key[2])}",
    )


def read_bundle_metrics(path: str | Path, *, now: datetime | None = None) -> Parsed[BundleRow]:
    """Every row of ``bundle_metrics``; with ``now``, samples from the future are refused."""
    parsed = parse_table(path, BUNDLE_METRICS, partial(parse_bundle_row, now=now))
    return refuse_repeats(
        parsed,
        lambda r: (r.cluster, r.bundle.name, r.bundle.broker, r.ts),
        lambda key: f"bundle {key[1]} on {key[2]} of cluster {key[0]!r} at ts {_iso(key[3])}",
    )


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")
