"""The fleet-wide sections of the report: clusters ranked by imbalance, quarantined rows.

:func:`rank_clusters` orders the clusters from most to least imbalanced (broker load std now,
then max − min), clusters without brokers last; :func:`overview_section` draws that ranking
against the shedder's target and tabulates it, and :func:`quarantine_section` counts the input
rows set aside, per table and rule, with one example reason each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trimtab.report.bars import bar_chart
from trimtab.report.data import ReportData
from trimtab.report.html_table import table
from trimtab.report.markup import Html, escape
from trimtab.report.page import figure, key_figures, note, paragraph, section, slug
from trimtab.report.svg import Rule
from trimtab.report.values import (
    LOAD_MEANING,
    as_floats,
    fmt3,
    fmt_count,
    live_roles,
    nan_low,
    stats,
    target_std,
)

__all__ = ["ClusterRank", "overview_section", "quarantine_section", "rank_clusters"]


@dataclass(frozen=True, slots=True)
class ClusterRank:
    """One cluster's imbalance figures, for the overview's ranking."""

    cluster: str
    nodes: int
    brokers: int
    bookies: int
    mean: float
    std_now: float
    std_after: float
    spread_now: float  # max − min of broker load now
    spread_after: float
    transfers: int
    cycles: int
    worsens: bool = False  # the plan raises the std (run.json carries the warning)


def rank_clusters(data: ReportData) -> list[ClusterRank]:
    """Clusters from most to least imbalanced (broker load std now, then max − min); clusters
    without brokers have no broker figures (NaN) and come last."""
    run_clusters: dict[str, dict[str, Any]] = data.run.get("clusters", {})
    loads = data.table("plan_loads")
    inventory = data.table("inventory")
    ranks = []
    for cluster in sorted(set(run_clusters) | set(loads["cluster"].dropna())):
        info = run_clusters.get(cluster, {})
        mine = loads[loads["cluster"] == cluster]
        now = stats(as_floats(mine["load_before"]))  # no brokers: NaN, figures read "–"
        after = stats(as_floats(mine["load_after"]))
        roles = live_roles(inventory[inventory["cluster"] == cluster])
        ranks.append(
            ClusterRank(
                cluster=cluster,
                nodes=int(info.get("nodes", len(roles))),
                brokers=sum(1 for r in roles if r in ("broker", "")),
                bookies=sum(1 for r in roles if r in ("bookie", "")),
                mean=now.mean,
                std_now=float(info.get("std_before", now.std)),
                std_after=float(info.get("std_after", after.std)),
                spread_now=now.spread,
                spread_after=after.spread,
                transfers=int(info.get("transfers", 0)),
                cycles=int((data.table("plan_cycles")["cluster"] == cluster).sum()),
                worsens=bool(info.get("warning")),
            )
        )
    return sorted(ranks, key=lambda r: (-nan_low(r.std_now), -nan_low(r.spread_now), r.cluster))


def overview_section(data: ReportData, ranks: list[ClusterRank]) -> Html:
    run = data.run
    tables: dict[str, dict[str, int]] = run.get("tables", {})
    read = sum(t.get("read", 0) for t in tables.values())
    quarantined = sum(t.get("quarantined", 0) for t in tables.values())
    figures = key_figures(
        [
            (f"{len(ranks)}", "clusters"),
            (f"{sum(r.nodes for r in ranks):,}", "nodes"),
            (f"{sum(r.transfers for r in ranks):,}", "bundle transfers planned"),
            (f"{quarantined:,} of {read:,}", "input rows quarantined"),
        ]
    )
    if not ranks:
        return section(
            "Fleet overview", figures, note("This run has no clusters."), anchor="overview"
        )
    target = target_std(run, ranks[0].cluster)
    chart = bar_chart(
        [r.cluster for r in ranks],
        {"now": [r.std_now for r in ranks], "after the plan": [r.std_after for r in ranks]},
        title="Clusters ranked by imbalance: spread of broker load",
        unit="standard deviation of broker load (fraction of capacity)",
        rules=[Rule(target, "target std")],
        fmt=fmt3,
    )
    rows = [
        [
            Html(f'<a href="#cluster-{slug(r.cluster)}">{escape(r.cluster)}</a>'),
            r.nodes,
            r.brokers,
            r.bookies,
            fmt3(r.mean),
            f"{fmt3(r.std_now)} → {fmt3(r.std_after)}"
            + (" (the plan raises it)" if r.worsens else ""),
            f"{fmt3(r.spread_now)} → {fmt3(r.spread_after)}",
            r.transfers,
            r.cycles,
        ]
        for r in ranks
    ]
    ranking = table(
        [
            "cluster (most imbalanced first)",
            "nodes",
            "brokers",
            "bookies",
            "mean load",
            "load std now → after",
            "max − min now → after",
            "transfers",
            "cycles",
        ],
        rows,
    )
    return section(
        "Fleet overview",
        figures,
        paragraph(LOAD_MEANING),
        figure(
            chart,
            "One pair of bars per cluster, most imbalanced on top: how unevenly its brokers are "
            "loaded now and once the planned transfers have settled; shorter is more even, the "
            "dashed line is the shedder's target.",
        ),
        ranking,
        anchor="overview",
        intro="Is the fleet balanced, and what will the plan change? Clusters are ranked by "
        "the spread of their broker loads now.",
    )


def quarantine_section(data: ReportData) -> Html:
    run = data.run
    tables: dict[str, dict[str, int]] = run.get("tables", {})
    by_rule: dict[str, dict[str, int]] = run.get("quarantine_by_rule", {})
    counts = table(
        ["input table", "rows read", "accepted", "quarantined"],
        [
            [name, t.get("read", 0), t.get("accepted", 0), t.get("quarantined", 0)]
            for name, t in tables.items()
        ],
        fmt=fmt_count,
    )
    pairs = [(t, rule, n) for t, rules in by_rule.items() for rule, n in rules.items() if n]
    intro = (
        "A row that breaks a rule (a missing key, a usage outside 0..1, a timestamp in the "
        "future, a duplicate…) is never used and never silently dropped: it is kept whole in "
        "the quarantine table with its source file and reason."
    )
    if not pairs:
        return section(
            "Quarantined input rows",
            counts,
            note("No input row was quarantined."),
            anchor="quarantine",
            intro=intro,
        )
    chart = bar_chart(
        [f"{t} · {rule}" for t, rule, _ in pairs],
        [float(n) for _, _, n in pairs],
        title="Quarantined rows per input table and rule",
        unit="rows quarantined",
        sort="descending",
        fmt=fmt_count,
    )
    sample = data.table("quarantine")
    examples = []
    for name, rule, n in sorted(pairs, key=lambda p: (-p[2], p[0], p[1])):
        first = sample[(sample["table"] == name) & (sample["rule"] == rule)].head(1)
        reason = str(first["reason"].iloc[0]) if len(first) else ""
        source = str(first["source_file"].iloc[0]) if len(first) else ""
        examples.append([name, rule, n, reason, source.rpartition("/")[2]])
    return section(
        "Quarantined input rows",
        counts,
        figure(chart, "Each bar counts the rows of one input table that broke one rule."),
        table(
            ["input table", "rule", "rows", "example reason", "example source file"],
            examples,
            fmt=fmt_count,
        ),
        anchor="quarantine",
        intro=intro,
    )
