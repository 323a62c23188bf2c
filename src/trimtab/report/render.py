"""The fleet report: what a run found and decided, drawn for someone who has never seen trimtab.

Order: the fleet overview (clusters ranked by imbalance), the quarantined input rows, then one
section per cluster — broker load now and after the plan against the target band, the spread
per cycle, the transfers, the bookies' disk and pick probabilities, the allocation per core,
and the cluster's quarantined rows. Every chart has a title, axis units and one line saying
how to read it; a cluster without brokers, bookies or allocations says so instead of a chart.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from trimtab._format import human_bytes, plural
from trimtab.report.charts import (
    Band,
    Html,
    Rule,
    Series,
    bar_chart,
    escape,
    line_chart,
    meter,
    table,
)
from trimtab.report.data import QUARANTINE_ROWS, ReportData, read_output
from trimtab.report.page import (
    advice,
    details,
    figure,
    grid,
    key_figures,
    note,
    page,
    paragraph,
    section,
    slug,
)
from trimtab.shedding.telemetry import left_out_sentence

__all__ = [
    "ClusterRank",
    "rank_clusters",
    "render",
    "save_report",
    "short_names",
    "write_report",
]

DEFAULT_TARGET_STD = 0.25  # loadBalancerBrokerLoadTargetStd's default, for runs that omit it
LOAD_UNIT = "load (fraction of the broker's capacity; 1 = 100 %)"
LOAD_MEANING = (
    "Load is how busy a broker is: the highest of its CPU and network usages as a fraction of "
    "its own capacity (1 = 100 %), smoothed over recent samples, as Pulsar's load balancer "
    "computes it."
)
MAX_TRANSFER_ROWS = 40
HALF = 560  # chart width when two sit side by side


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


def write_report(output_dir: Path, out: Path | None = None) -> Path:
    """Build ``report.html`` from an output (or staging) directory; returns the file written.

    ``out`` defaults to ``output_dir/report.html``. The file is written beside itself and
    renamed into place (:func:`save_report`), so a reader never sees half a report.
    """
    target = out if out is not None else output_dir / "report.html"
    save_report(render(read_output(output_dir)), target)
    return target


def save_report(text: str, target: Path) -> None:
    """Write ``text`` beside ``target`` and rename it into place."""
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)


def render(data: ReportData) -> str:
    """The whole report as one HTML document."""
    run = data.run
    ranks = rank_clusters(data)
    clusters = sorted(set(run.get("clusters", {})) | {r.cluster for r in ranks})
    order = [r.cluster for r in ranks] + [
        c for c in clusters if c not in {r.cluster for r in ranks}
    ]
    contents = [("overview", "Fleet overview"), ("quarantine", "Quarantined input rows")]
    contents += [(f"cluster-{slug(c)}", f"Cluster {c}") for c in order]
    started = str(run.get("started", "?"))[:19].replace("T", " ")
    source = run.get("inputs", {}).get("path", "?")
    subtitle = (
        f"Run {run.get('run_id', '?')}, started {started} UTC, on {source}"
        f" (trimtab {run.get('trimtab_version', '?')})."
    )
    parts = [_overview(data, ranks), _quarantine(data)]
    parts += [_cluster(data, c) for c in order]
    return page(
        "trimtab fleet report",
        *parts,
        subtitle=subtitle,
        contents=contents,
        footer=(
            "Written by trimtab from the run's output tables; every number here is also in "
            "the Parquet tables and run.json beside this file."
        ),
    )


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
        now = _stats(_floats(mine["load_before"]))  # no brokers: NaN, figures read "–"
        after = _stats(_floats(mine["load_after"]))
        roles = _roles(inventory[inventory["cluster"] == cluster])
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
    return sorted(ranks, key=lambda r: (-_nan_low(r.std_now), -_nan_low(r.spread_now), r.cluster))


def short_names(names: Sequence[str]) -> list[str]:
    """Names without the prefix and suffix they all share, cut at a separator.

    >>> short_names(["c0-broker1.east.example.net:8080", "c0-bk2.west.example.net:3181"])
    ['broker1.east', 'bk2.west']
    """
    if len(names) < 2:
        return list(names)
    hosts = [_host(n) for n in names]
    for candidates in (hosts, list(names)):  # ports dropped when the hosts alone are distinct
        prefix = _common_prefix(candidates)
        cut = max(prefix.rfind(s) for s in "-./:_") + 1 if prefix else 0
        suffix = _common_prefix([n[::-1] for n in candidates])[::-1]
        tail = min((suffix.find(s) for s in "-./:_" if s in suffix), default=len(suffix))
        trimmed = [n[cut : len(n) - (len(suffix) - tail)] for n in candidates]
        if all(trimmed) and len(set(trimmed)) == len(set(names)):
            return trimmed
    return list(names)


def _host(name: str) -> str:
    host, colon, port = name.rpartition(":")
    return host if colon and port.isdigit() else name


# --- sections ---------------------------------------------------------------------------------


def _overview(data: ReportData, ranks: list[ClusterRank]) -> Html:
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
    target = _target_std(run, ranks[0].cluster)
    chart = bar_chart(
        [r.cluster for r in ranks],
        {"now": [r.std_now for r in ranks], "after the plan": [r.std_after for r in ranks]},
        title="Clusters ranked by imbalance: spread of broker load",
        unit="standard deviation of broker load (fraction of capacity)",
        rules=[Rule(target, "target std")],
        fmt=_fmt3,
    )
    rows = [
        [
            Html(f'<a href="#cluster-{slug(r.cluster)}">{escape(r.cluster)}</a>'),
            r.nodes,
            r.brokers,
            r.bookies,
            _fmt3(r.mean),
            f"{_fmt3(r.std_now)} → {_fmt3(r.std_after)}"
            + (" (the plan raises it)" if r.worsens else ""),
            f"{_fmt3(r.spread_now)} → {_fmt3(r.spread_after)}",
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


def _quarantine(data: ReportData) -> Html:
    run = data.run
    tables: dict[str, dict[str, int]] = run.get("tables", {})
    by_rule: dict[str, dict[str, int]] = run.get("quarantine_by_rule", {})
    counts = table(
        ["input table", "rows read", "accepted", "quarantined"],
        [
            [name, t.get("read", 0), t.get("accepted", 0), t.get("quarantined", 0)]
            for name, t in tables.items()
        ],
        fmt=_count,
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
        fmt=_count,
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
            fmt=_count,
        ),
        anchor="quarantine",
        intro=intro,
    )


def _cluster(data: ReportData, cluster: str) -> Html:
    info: dict[str, Any] = data.run.get("clusters", {}).get(cluster, {})
    inventory = data.table("inventory")
    roles = _roles(inventory[inventory["cluster"] == cluster])
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
        _broker_loads(data, cluster),
        _cycles(data, cluster),
        _transfers(data, cluster),
        _bookies(data, cluster),
        _allocation(data, cluster, info),
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


def _broker_loads(data: ReportData, cluster: str) -> Html:
    loads = data.table("plan_loads")
    mine = loads[loads["cluster"] == cluster].sort_values("broker")
    heading = "Broker load now and after the plan"
    target = _target_std(data.run, cluster)
    if mine.empty:
        latest = data.table("node_load")
        nodes = latest[latest["cluster"] == cluster].sort_values("node")
        if nodes.empty:
            return _sub(heading, note("No node of this cluster has load data: nothing to draw."))
        now = _floats(nodes["load"], keep_nan=True)
        only = bar_chart(
            short_names([str(n) for n in nodes["node"]]),
            {"now": now},
            title="Load per node now",
            unit=LOAD_UNIT,
            sort="descending",
            band=_band(now, target),
            rules=[Rule(_stats(now).mean, "mean")],
            fmt=_fmt3,
        )
        return _sub(
            heading,
            note("This cluster has no brokers that can take load, so there is no shedding plan."),
            figure(only, "Every node's latest load, highest first, against the target band."),
        )
    names = short_names([str(b) for b in mine["broker"]])
    now = _floats(mine["load_before"], keep_nan=True)
    after = _floats(mine["load_after"], keep_nan=True)
    band = _band(now, target)
    both = [v for v in now + after if math.isfinite(v)] + [band.high, 0.0]
    domain = (min(both), max(both) * 1.05 or 1.0)

    def chart(title: str, name: str, values: list[float]) -> Html:
        return bar_chart(
            names,
            {name: values},
            title=title,
            unit=LOAD_UNIT,
            sort="descending",
            band=band,
            rules=[Rule(_stats(values).mean, "mean")],
            domain=domain,
            fmt=_fmt3,
            width=HALF,
        )

    left = chart("Load per broker now", "now", now)
    right = chart("Load per broker after the plan", "after the plan", after)
    return _sub(
        heading,
        grid(
            figure(left, "Each bar is one broker's load now, highest first."),
            figure(
                right,
                "The same brokers once the planned transfers have settled, on the same scale.",
            ),
        ),
        paragraph(
            f"The green band is the cluster mean ± the target standard deviation ({target:g}, "
            "loadBalancerBrokerLoadTargetStd): a cluster whose bars all sit inside it is "
            "balanced as far as the shedder is concerned. Broker names are shortened; hover "
            "a bar for its value."
        ),
    )


def _cycles(data: ReportData, cluster: str) -> Html:
    cycles = data.table("plan_cycles")
    mine = cycles[cycles["cluster"] == cluster].sort_values("cycle")
    if mine.empty:
        return Html("")
    target = _target_std(data.run, cluster)
    xs = [0.0, *(float(c) for c in mine["cycle"])]
    ys = [_first(mine["std_before"]), *_floats(mine["std_after"], keep_nan=True)]
    line = line_chart(
        [Series("std of broker load", xs, ys)],
        title="Spread of broker load per cycle",
        x_label="shedding cycle (0 = now; one cycle per loadBalancerSheddingIntervalMinutes)",
        unit="std of broker load",
        rules=[Rule(target, "target std")],
        fmt=_fmt3,
        width=HALF,
    )
    moves = bar_chart(
        [str(int(c)) for c in mine["cycle"]],
        [float(t) for t in mine["transfers"].fillna(0)],
        title="Transfers per cycle",
        unit="bundle transfers",
        axis_label="shedding cycle",
        horizontal=False,
        fmt=_count,
        width=HALF,
        value_labels=len(mine) <= 30,
    )
    idle = Counter(
        f"{r['label']}/{r['reason']}"
        for r in mine.to_dict("records")
        if not _number(r["transfers"])
    )
    reasons = ", ".join(f"{why} × {n}" for why, n in sorted(idle.items()))
    return _sub(
        "What the plan does, cycle by cycle",
        grid(
            figure(
                line,
                "The standard deviation of broker load after each cycle's transfers settle; "
                "the plan stops when the shedder has nothing left to do.",
            ),
            figure(
                moves,
                "How many bundles each cycle moves; cycles without transfers waited "
                + (f"({reasons})." if reasons else "."),
            ),
        ),
    )


def _transfers(data: ReportData, cluster: str) -> Html:
    transfers = data.table("transfers")
    mine = transfers[transfers["cluster"] == cluster].sort_values(["cycle", "source", "bundle"])
    heading = "Planned transfers"
    if mine.empty:
        return _sub(heading, note("The plan moves no bundle in this cluster."))
    brokers = sorted({str(b) for b in mine["source"]} | {str(b) for b in mine["destination"]})
    known = data.table("plan_loads")
    brokers = sorted(
        set(brokers) | {str(b) for b in known.loc[known["cluster"] == cluster, "broker"]}
    )
    short = dict(zip(brokers, short_names(brokers), strict=True))
    rows = [
        [
            int(r["cycle"]),
            str(r["bundle"]),
            short[str(r["source"])],
            short[str(r["destination"])],
            f"{human_bytes(float(r['throughput']))}/s",
            str(r["reason"]),
        ]
        for r in mine.to_dict("records")
    ]
    return _sub(
        heading,
        paragraph(
            "Each row unloads one bundle (a hash range of a namespace) from one broker to "
            "another; throughput is the bundle's bytes in + out per second. Broker names are "
            "shortened as in the charts; the same moves with full names, as pulsar-admin "
            f"commands, are in exports/pulsar-admin/{cluster}.sh."
        ),
        table(
            ["cycle", "bundle", "from", "to", "throughput", "reason"],
            rows,
            max_rows=MAX_TRANSFER_ROWS,
        ),
    )


def _bookies(data: ReportData, cluster: str) -> Html:
    weights = data.table("bookie_weights")
    mine = weights[weights["cluster"] == cluster].sort_values("node")
    heading = "Bookies: free disk, weights and pick probabilities"
    if mine.empty:
        return _sub(heading, note("No writable bookie in this cluster: no weights to show."))
    names = short_names([str(n) for n in mine["node"]])
    free = _floats(mine["disk_free_bytes"], keep_nan=True)
    total = _floats(mine["disk_total_bytes"], keep_nan=True)
    pool = sum(f for f in free if math.isfinite(f))
    share = [f / pool if pool > 0 and math.isfinite(f) else math.nan for f in free]
    probability = _floats(mine["probability"], keep_nan=True)
    chart = bar_chart(
        names,
        {"share of the pool's free disk": share, "pick probability": probability},
        title="Bookies: free-disk share and pick probability",
        unit="fraction (each series sums to 1)",
        sort="descending",
        rules=[Rule(1 / len(names), "equal share")],
        fmt=_fmt3,
    )
    rows = [
        [
            name,
            human_bytes(f) if math.isfinite(f) else "no sample",
            human_bytes(t) if math.isfinite(t) else "–",
            Html(
                meter(f / t if t and math.isfinite(f) and math.isfinite(t) else math.nan)
                + f" {_pct(f / t) if t and math.isfinite(f) and math.isfinite(t) else ''}"
            ),
            human_bytes(w) if math.isfinite(w) else "–",
            Html(meter(p, colour="#E69F00") + f" {_pct(p)}"),
        ]
        for name, f, t, w, p in zip(
            names, free, total, _floats(mine["weight"], keep_nan=True), probability, strict=True
        )
    ]
    return _sub(
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


def _allocation(data: ReportData, cluster: str, info: dict[str, Any]) -> Html:
    allocations = data.table("allocations")
    mine = allocations[allocations["cluster"] == cluster]
    heading = "Partition allocation per core"
    if mine.empty:
        why = info.get("allocation_error")
        text = f"No partition was allocated: {why}" if why else "No allocation was requested."
        return _sub(heading, note(text))
    inventory = data.table("inventory")
    nodes = inventory[inventory["cluster"] == cluster]
    cores = {  # the nodes that can take new replicas: writable ones (``is_active``)
        str(n): int(c)
        for n, c, s in zip(nodes["node"], nodes["cores"], nodes["state"], strict=True)
        if pd.notna(c) and str(s).strip().lower() == "writable"
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
    return _sub(
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


def _cluster_quarantine(data: ReportData, cluster: str) -> Html:
    sample = data.table("quarantine")
    named = sample[[_names_cluster(row, cluster) for row in sample["row"]]]
    heading = "Quarantined rows that name this cluster"
    truncated = len(sample) >= QUARANTINE_ROWS
    scope = f" (among the first {QUARANTINE_ROWS:,} quarantined rows)" if truncated else ""
    if named.empty:
        return _sub(heading, note(f"No quarantined row names this cluster{scope}."))
    counts: Counter[tuple[str, str]] = Counter()
    reasons: dict[tuple[str, str], str] = {}
    for r in named.to_dict("records"):
        key = (str(r["table"]), str(r["rule"]))
        counts[key] += 1
        reasons.setdefault(key, str(r["reason"]))
    rows = [[t, rule, n, reasons[(t, rule)]] for (t, rule), n in sorted(counts.items())]
    return _sub(
        heading,
        paragraph(
            f"{plural(len(named), 'row')} naming {cluster} were set aside{scope}; "
            "the whole rows are in the quarantine table."
        ),
        table(["input table", "rule", "rows", "example reason"], rows, fmt=_count),
    )


# --- helpers ----------------------------------------------------------------------------------


def _common_prefix(names: Sequence[str]) -> str:
    first, last = min(names), max(names)
    size = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), None)
    return first[: len(first) if size is None else size]


def _sub(title: str, *parts: Html) -> Html:
    """A cluster's sub-section: an ``<h3>`` heading over its parts."""
    return section(title, *parts, level=3)


def _names_cluster(row: object, cluster: str) -> bool:
    """Whether a quarantined raw row (JSON text) has this cluster in its ``cluster`` field."""
    if not isinstance(row, str):
        return False
    try:
        doc = json.loads(row)
    except ValueError:
        return f'"{cluster}"' in row
    return isinstance(doc, dict) and str(doc.get("cluster", "")).strip() == cluster


def _roles(nodes: pd.DataFrame) -> list[str]:
    return [
        "" if pd.isna(r) else str(r).strip().lower()
        for r, s in zip(nodes["role"], nodes["state"], strict=True)
        if str(s).strip().lower() != "down"
    ]


def _band(loads: Iterable[float], target: float) -> Band:
    mean = _stats(loads).mean
    mean = mean if math.isfinite(mean) else 0.0
    return Band(max(mean - target, 0.0), mean + target, "target band: mean ± target std")


def _target_std(run: dict[str, Any], cluster: str) -> float:
    value = run.get("clusters", {}).get(cluster, {}).get("target_std")
    return float(value) if value is not None else DEFAULT_TARGET_STD


def _number(value: object) -> float:
    """A cell as a float; None, NaN, NA and non-numbers read as NaN."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return number


def _floats(values: Iterable[object], *, keep_nan: bool = False) -> list[float]:
    out = [_number(v) for v in values]
    return out if keep_nan else [v for v in out if math.isfinite(v)]


def _first(values: pd.Series) -> float:
    finite = _floats(values)
    return finite[0] if finite else math.nan


class _Stats(NamedTuple):
    """Mean, population std and max − min of the finite values; NaN when there are none."""

    mean: float
    std: float
    spread: float


def _stats(values: Iterable[float]) -> _Stats:
    finite = np.array([v for v in values if math.isfinite(v)], dtype=float)
    if not finite.size:
        return _Stats(math.nan, math.nan, math.nan)
    return _Stats(float(finite.mean()), float(finite.std()), float(np.ptp(finite)))


def _nan_low(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def _fmt3(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "–"


def _count(value: float) -> str:
    return f"{value:,.0f}"


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %" if math.isfinite(value) else ""
