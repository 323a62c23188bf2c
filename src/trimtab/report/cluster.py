"""One cluster's section of the report: its key figures, advice and warnings, then its parts.

The parts, in order: broker load now and after the plan, the plan cycle by cycle and its
transfers (:mod:`~trimtab.report.brokers`), the bookies and the partition allocation
(:mod:`~trimtab.report.storage`), and the quarantined input rows that name the cluster.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from trimtab._format import plural
from trimtab.report.brokers import broker_load_section, cycles_section, transfers_section
from trimtab.report.data import QUARANTINE_ROWS, ReportData
from trimtab.report.html_table import table
from trimtab.report.markup import Html
from trimtab.report.page import advice, key_figures, note, paragraph, section, slug
from trimtab.report.storage import allocation_section, bookies_section
from trimtab.report.values import fmt_count, live_roles, subsection
from trimtab.shedding.telemetry import left_out_sentence

__all__ = ["cluster_section"]


def cluster_section(data: ReportData, cluster: str) -> Html:
    info: dict[str, Any] = data.run.get("clusters", {}).get(cluster, {})
    inventory = data.table("inventory")
    roles = live_roles(inventory[inventory["cluster"] == cluster])
    brokers = sum(1 for r in roles if r in ("broker", ""))
    bookies = sum(1 for r in roles if r in ("bookie", ""))
    plan = info.get("plan")
    intro = (
        f"{plural(int(info.get('nodes', len(roles))), 'node')} in the inventory "
        f"({plural(brokers, 'broker')}, {plural(bookies, 'bookie')})"
        + (f"; shedding plan: {plan}." if plan else "; no shedding plan.")
    )
    figures = []
    if "std_before" in info:
        figures.append((f"{info['std_before']:.3f} → {info['std_after']:.3f}", "broker load std"))
    figures.append((f"{info.get('transfers', 0)}", "bundle transfers planned"))
    if "partitions_allocated" in info:
        figures.append((f"{info['partitions_allocated']}", "partitions allocated"))
    if isinstance(up := info.get("upstream"), dict):
        figures.append((f"{up['std_after']:.3f}", f"std with upstream's {up['strategy']} plan"))
    warning = [note(f"Warning: {info['warning']}.")] if info.get("warning") else []
    sentence = info.get("recommendation")
    parts = [
        key_figures(figures),
        *([advice(str(sentence))] if sentence else []),
        *warning,
        *_stale_bundles(info),
        broker_load_section(data, cluster),
        cycles_section(data, cluster),
        transfers_section(data, cluster),
        bookies_section(data, cluster),
        allocation_section(data, cluster, info),
        _cluster_quarantine(data, cluster),
    ]
    return section(f"Cluster {cluster}", *parts, anchor=f"cluster-{slug(cluster)}", intro=intro)


def _stale_bundles(info: dict[str, Any]) -> list[Html]:
    """The bundles the plan left out as no longer reported (``stale_bundles`` in run.json)."""
    stale = info.get("stale_bundles")
    if not isinstance(stale, dict) or not stale.get("count"):
        return []
    names = [str(n) for n in stale.get("first", [])]
    return [note(f"{left_out_sentence(int(stale['count']), names)}.")]


def _cluster_quarantine(data: ReportData, cluster: str) -> Html:
    sample = data.table("quarantine")
    named = sample[[_names_cluster(row, cluster) for row in sample["row"]]]
    heading = "Quarantined rows that name this cluster"
    truncated = len(sample) >= QUARANTINE_ROWS
    scope = f" (among the first {QUARANTINE_ROWS:,} quarantined rows)" if truncated else ""
    if named.empty:
        return subsection(heading, note(f"No quarantined row names this cluster{scope}."))
    counts: Counter[tuple[str, str]] = Counter()
    reasons: dict[tuple[str, str], str] = {}
    for r in named.to_dict("records"):
        key = (str(r["table"]), str(r["rule"]))
        counts[key] += 1
        reasons.setdefault(key, str(r["reason"]))
    rows = [[t, rule, n, reasons[(t, rule)]] for (t, rule), n in sorted(counts.items())]
    return subsection(
        heading,
        paragraph(
            f"{plural(len(named), 'row')} naming {cluster} were set aside{scope}; "
            "the whole rows are in the quarantine table."
        ),
        table(["input table", "rule", "rows", "example reason"], rows, fmt=fmt_count),
    )


def _names_cluster(row: object, cluster: str) -> bool:
    """Whether a quarantined raw row (JSON text) has this cluster in its ``cluster`` field."""
    if not isinstance(row, str):
        return False
    try:
        doc = json.loads(row)
    except ValueError:
        return f'"{cluster}"' in row
    return isinstance(doc, dict) and str(doc.get("cluster", "")).strip() == cluster
