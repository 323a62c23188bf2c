"""The stream's verdicts on single rows: membership, repeats, lateness, and quarantine rows.

Why a module of its own
    The row rules ran in Spark already (:mod:`.wide`); what is left needs the cluster's
    state or inventory, so it runs in the state function, row by row: ``unknown_cluster``
    and ``unknown_node``, ``duplicate`` and ``conflict`` (with the reasons of
    :mod:`trimtab.contract.repeats`, as the batch job words them) and ``late`` (a rule the
    batch job does not need). A refused row is rendered as the batch job renders it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from trimtab.contract.repeats import conflict_reason, duplicate_reason
from trimtab.pipeline.bundle_samples import BUNDLE_VALUES
from trimtab.pipeline.inventory import Node
from trimtab.pipeline.loads import METRICS
from trimtab.pipeline.stream.rows import iso_time, out_row
from trimtab.pipeline.stream.state import ClusterStream

__all__ = ["absorb_node", "bundle_key", "first_verdict", "quarantine_row"]


def first_verdict(
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


def _sample_values(rec: Mapping[str, Any], table: str) -> dict[str, Any]:
    names = METRICS if table == "node_metrics" else BUNDLE_VALUES
    return {n: _plain(rec.get(n)) for n in names}


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def absorb_node(rec: Mapping[str, Any], state: ClusterStream) -> tuple[str | None, str | None]:
    """A checked node sample into the pending samples; its repeat, conflict or lateness."""
    ts = int(rec["ts_us"])
    node = str(rec["node"])
    what = f"ts {iso_time(ts)}, cluster {rec['cluster']}, node {node}"
    if ts < state.sealed_us:
        return "late", (
            f"ts {iso_time(ts)} is before {iso_time(state.sealed_us)}, where the stream has sealed "
            "its windows (the watermark passed): land files within --watermark"
        )
    values = _sample_values(rec, "node_metrics") | {"_source_file": rec["_source_file"]}
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
        return "duplicate", duplicate_reason(what)
    by_ts[ts] = seen | {"_conflict": True}
    return "conflict", conflict_reason(what, seen["_source_file"])


def bundle_key(rec: Mapping[str, Any]) -> str:
    """A bundle row's key in the contract's order, as ingest names it."""
    ts = iso_time(int(rec["ts_us"]))
    return f"ts {ts}, cluster {rec['cluster']}, bundle {rec['bundle']}, broker {rec['broker']}"


def quarantine_row(
    rec: Mapping[str, Any], cluster: str | None, rule: str, reason: str | None
) -> dict[str, Any]:
    raw = rec["_raw"]
    if raw is None:  # refused after parsing cleanly: the typed row, as ingest renders it
        names = (
            ("ts", "cluster", "node")
            if rec["_table"] == "node_metrics"
            else ("ts", "cluster", "bundle", "broker")
        )
        doc = {n: (iso_time(int(rec["ts_us"])) if n == "ts" else rec[n]) for n in names}
        raw = json.dumps(doc | _sample_values(rec, str(rec["_table"])))
    return out_row(
        kind="quarantine",
        cluster=cluster,
        table_name=rec["_table"],
        source_file=rec["_source_file"],
        rule=rule,
        reason=reason,
        row=raw,
    )
