"""Where data goes, in a cluster's section: the bookies' disks and picks, partitions per core.

:func:`bookies_section` compares each bookie's share of the pool's free disk with its pick
probability (the capped disk weight, BookKeeper's placement), with a table of disks, weights
and meters; :func:`allocation_section` shows the partition replicas per core on each node
against an even share (Redpanda's allocator).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from trimtab._format import human_bytes
from trimtab.report.bars import bar_chart
from trimtab.report.data import ReportData
from trimtab.report.html_table import meter, table
from trimtab.report.markup import Html
from trimtab.report.page import details, figure, note
from trimtab.report.svg import Rule
from trimtab.report.values import as_floats, fmt3, fmt_pct, short_names, subsection

__all__ = ["allocation_section", "bookies_section"]


def bookies_section(data: ReportData, cluster: str) -> Html:
    weights = data.table("bookie_weights")
    mine = weights[weights["cluster"] == cluster].sort_values("node")
    heading = "Bookies: free disk, weights and pick probabilities"
    if mine.empty:
        return subsection(heading, note("No writable bookie in this cluster: no weights to show."))
    names = short_names([str(n) for n in mine["node"]])
    free = as_floats(mine["disk_free_bytes"], keep_nan=True)
    total = as_floats(mine["disk_total_bytes"], keep_nan=True)
    pool = sum(f for f in free if math.isfinite(f))
    share = [f / pool if pool > 0 and math.isfinite(f) else math.nan for f in free]
    probability = as_floats(mine["probability"], keep_nan=True)
    chart = bar_chart(
        names,
        {"share of the pool's free disk": share, "pick probability": probability},
        title="Bookies: free-disk share and pick probability",
        unit="fraction (each series sums to 1)",
        sort="descending",
        rules=[Rule(1 / len(names), "equal share")],
        fmt=fmt3,
    )
    rows = [
        [
            name,
            human_bytes(f) if math.isfinite(f) else "no sample",
            human_bytes(t) if math.isfinite(t) else "–",
            Html(
                meter(f / t if t and math.isfinite(f) and math.isfinite(t) else math.nan)
                + f" {fmt_pct(f / t) if t and math.isfinite(f) and math.isfinite(t) else ''}"
            ),
            human_bytes(w) if math.isfinite(w) else "–",
            Html(meter(p, colour="#E69F00") + f" {fmt_pct(p)}"),
        ]
        for name, f, t, w, p in zip(
            names, free, total, as_floats(mine["weight"], keep_nan=True), probability, strict=True
        )
    ]
    return subsection(
        heading,
        figure(
            chart,
            "A bookie is picked for a new ledger's ensemble with a probability proportional to "
            "its weight (its free disk, capped); where the orange bar is shorter than the blue "
            "one, the cap holds a large, empty bookie back so that it is not flooded.",
        ),
        table(
            ["bookie", "free disk", "total disk", "free", "capped weight", "pick probability"],
            rows,
        ),
    )


def allocation_section(data: ReportData, cluster: str, info: dict[str, Any]) -> Html:
    allocations = data.table("allocations")
    mine = allocations[allocations["cluster"] == cluster]
    heading = "Partition allocation per core"
    if mine.empty:
        why = info.get("allocation_error")
        text = f"No partition was allocated: {why}" if why else "No allocation was requested."
        return subsection(heading, note(text))
    inventory = data.table("inventory")
    nodes = inventory[inventory["cluster"] == cluster]
    # The nodes that can take new replicas: writable brokers (``is_active``). Bookies hold
    # ledgers, not partitions: counting their cores would lower the even share and make every
    # broker look overloaded.
    cores = {
        str(n): int(c)
        for n, c, s, r in zip(
            nodes["node"], nodes["cores"], nodes["state"], nodes["role"], strict=True
        )
        if pd.notna(c)
        and str(s).strip().lower() == "writable"
        and str(r).strip().lower() in ("broker", "", "nan", "none")
    }
    replicas = mine.groupby("node").size().to_dict()
    busiest = mine.groupby(["node", "core"]).size().groupby("node").max().to_dict()
    names = sorted(set(cores) | {str(n) for n in replicas})
    per_core = [replicas.get(n, 0) / cores[n] if cores.get(n) else math.nan for n in names]
    known = [n for n in names if cores.get(n)]
    even = sum(replicas.get(n, 0) for n in known) / sum(cores[n] for n in known) if known else 0
    labels = [
        f"{s} ({cores[n]} cores)" if n in cores else s
        for n, s in zip(names, short_names(names), strict=True)
    ]
    chart = bar_chart(
        labels,
        {"replicas per core": per_core},
        title="Replicas per core on each node",
        unit="partition replicas per core",
        sort="descending",
        rules=[Rule(even, "even share")],
        fmt=lambda v: f"{v:.2f}",
    )
    rows = [
        [label, int(replicas.get(n, 0)), cores.get(n, "?"), int(busiest.get(n, 0))]
        for n, label in zip(names, labels, strict=True)
    ]
    return subsection(
        heading,
        figure(
            chart,
            "Replicas placed on each node divided by its cores: a node at the dashed line "
            "carries exactly its share for its size; nodes with more cores should hold more.",
        ),
        details(
            "Replicas, cores and the busiest core per node",
            table(["node", "replicas", "cores", "replicas on its busiest core"], rows),
        ),
    )
