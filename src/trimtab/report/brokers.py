"""The shedding parts of a cluster's section: broker load, the plan per cycle, the transfers.

:func:`broker_load_section` draws each broker's load now and after the plan side by side on
one scale, against the target band (or, for a cluster without brokers, each node's latest
load); :func:`cycles_section` shows the spread of broker load and the transfers per cycle;
:func:`transfers_section` lists the planned bundle moves.
"""

from __future__ import annotations

import math
from collections import Counter

from trimtab._format import human_bytes
from trimtab.report.bars import bar_chart
from trimtab.report.data import ReportData
from trimtab.report.html_table import table
from trimtab.report.lines import Series, line_chart
from trimtab.report.markup import Html
from trimtab.report.page import figure, grid, note, paragraph
from trimtab.report.svg import Rule
from trimtab.report.values import (
    HALF,
    LOAD_UNIT,
    as_floats,
    as_number,
    first_finite,
    fmt3,
    fmt_count,
    short_names,
    stats,
    subsection,
    target_band,
    target_std,
)

__all__ = ["broker_load_section", "cycles_section", "transfers_section"]

MAX_TRANSFER_ROWS = 40


def broker_load_section(data: ReportData, cluster: str) -> Html:
    loads = data.table("plan_loads")
    mine = loads[loads["cluster"] == cluster].sort_values("broker")
    heading = "Broker load now and after the plan"
    target = target_std(data.run, cluster)
    if mine.empty:
        latest = data.table("node_load")
        nodes = latest[latest["cluster"] == cluster].sort_values("node")
        if nodes.empty:
            return subsection(
                heading, note("No node of this cluster has load data: nothing to draw.")
            )
        now = as_floats(nodes["load"], keep_nan=True)
        only = bar_chart(
            short_names([str(n) for n in nodes["node"]]),
            {"now": now},
            title="Load per node now",
            unit=LOAD_UNIT,
            sort="descending",
            band=target_band(now, target),
            rules=[Rule(stats(now).mean, "mean")],
            fmt=fmt3,
        )
        return subsection(
            heading,
            note("This cluster has no brokers that can take load, so there is no shedding plan."),
            figure(only, "Every node's latest load, highest first, against the target band."),
        )
    names = short_names([str(b) for b in mine["broker"]])
    now = as_floats(mine["load_before"], keep_nan=True)
    after = as_floats(mine["load_after"], keep_nan=True)
    band = target_band(now, target)
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
            rules=[Rule(stats(values).mean, "mean")],
            domain=domain,
            fmt=fmt3,
            width=HALF,
        )

    left = chart("Load per broker now", "now", now)
    right = chart("Load per broker after the plan", "after the plan", after)
    return subsection(
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


def cycles_section(data: ReportData, cluster: str) -> Html:
    cycles = data.table("plan_cycles")
    mine = cycles[cycles["cluster"] == cluster].sort_values("cycle")
    if mine.empty:
        return Html("")
    target = target_std(data.run, cluster)
    xs = [0.0, *(float(c) for c in mine["cycle"])]
    ys = [first_finite(mine["std_before"]), *as_floats(mine["std_after"], keep_nan=True)]
    line = line_chart(
        [Series("std of broker load", xs, ys)],
        title="Spread of broker load per cycle",
        x_label="shedding cycle (0 = now; one cycle per loadBalancerSheddingIntervalMinutes)",
        unit="std of broker load",
        rules=[Rule(target, "target std")],
        fmt=fmt3,
        width=HALF,
    )
    moves = bar_chart(
        [str(int(c)) for c in mine["cycle"]],
        [float(t) for t in mine["transfers"].fillna(0)],
        title="Transfers per cycle",
        unit="bundle transfers",
        axis_label="shedding cycle",
        horizontal=False,
        fmt=fmt_count,
        width=HALF,
        value_labels=len(mine) <= 30,
    )
    idle = Counter(
        f"{r['label']}/{r['reason']}"
        for r in mine.to_dict("records")
        if not as_number(r["transfers"])
    )
    reasons = ", ".join(f"{why} × {n}" for why, n in sorted(idle.items()))
    return subsection(
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


def transfers_section(data: ReportData, cluster: str) -> Html:
    transfers = data.table("transfers")
    mine = transfers[transfers["cluster"] == cluster].sort_values(["cycle", "source", "bundle"])
    heading = "Planned transfers"
    if mine.empty:
        return subsection(heading, note("The plan moves no bundle in this cluster."))
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
    return subsection(
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
