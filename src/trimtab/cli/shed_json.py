"""``trimtab shed --json``: the plan as one JSON document (decisions, transfers, net
transfers, per-broker loads before and after), and the time format every shed output uses."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from trimtab.cluster import ClusterState
from trimtab.shedding import Plan, breakdown
from trimtab.shedding.plain import plain_reasons
from trimtab.shedding.telemetry import Built

__all__ = ["broker_rows", "iso_time", "plan_json"]


def iso_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def plan_json(result: Plan, state: ClusterState, built: Built, now: float) -> dict[str, Any]:
    """The ``--json`` document (without ``rejected``/``warnings``)."""
    decisions = [
        {
            "cycle": k,
            "label": str(d.label),
            "reason": str(d.reason),
            "broker": d.broker,
            "bundle": d.move.bundle if d.move else None,
            "note": d.note,
        }
        for k, r in enumerate(result.results, start=1)
        for d in r.decisions
    ]
    transfers = [
        {
            "cycle": k,
            "bundle": m.bundle,
            "source": m.source,
            "destination": m.destination,
            "throughput": m.throughput,
            "reason": str(reason),
            "why": why,
        }
        for (k, m, reason), why in zip(result.transfers, plain_reasons(result), strict=True)
    ]
    net = [
        {"cycle": k, "bundle": m.bundle, "source": m.source, "destination": m.destination}
        for k, m, _ in result.net_transfers
    ]
    return {
        "cluster": state.name,
        "strategy": result.strategy,
        "now": iso_time(now),
        "cycles": len(result.results),
        "target_std": result.target_std,
        "std_before": result.std_before,
        "std_after": result.std_after,
        "reached": result.reached,
        "warning": result.warning,
        "decisions": decisions,
        "transfers": transfers,
        "net_transfers": net,
        "brokers": broker_rows(result, state),
        "counts": {
            f"{label}/{reason}": n
            for (label, reason), n in sorted(breakdown(result.results).items())
        },
    }


def broker_rows(result: Plan, state: ClusterState) -> list[dict[str, Any]]:
    start, end = result.start, result.end
    count_before = Counter(start.bundles.broker_of(i) for i in range(len(start.bundles)))
    count_after = Counter(end.bundles.broker_of(i) for i in range(len(end.bundles)))
    rows = []
    for node in state:
        broker = str(node.id)
        load = start.loads.get(broker)
        after = end.loads.get(broker)
        rows.append(
            {
                "broker": broker,
                "state": node.state.value,
                "cores": node.capacity.cores,
                "nic_bps": node.capacity.nic_bps,
                "bundles_before": count_before.get(broker, 0),
                "bundles_after": count_after.get(broker, 0),
                "load_before": result.loads_before.get(broker),
                "load_after": result.loads_after.get(broker),
                "throughput_before": load.throughput if load else None,
                "throughput_after": after.throughput if after else None,
                "updated_at": iso_time(load.updated_at) if load else None,
            }
        )
    return rows
