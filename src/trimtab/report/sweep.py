"""``sweep.html``: the page of a simulator sweep, drawn from ``sweep.json`` alone.

Goals
    Answer the sweep's question at a glance, offline, with the numbers beside the picture:
    for shedding, how many transfers (PIP-220's *epochs*) each strategy needs per cluster size
    against the PIP's published table; for diskfill, how much of the cluster's capacity each
    setting fills before the first node turns read-only.

Layout
    Key figures; the main chart with its table; the secondary charts (cycles and traffic
    moved; hot spots); every summary column in a folded table. The page is built with the
    report's primitives (:mod:`trimtab.report.bars`, :mod:`trimtab.report.lines`,
    :mod:`trimtab.report.page`), so it has no script and its CSP forbids every fetch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trimtab._format import human_bytes, plural
from trimtab.config import CapBasis
from trimtab.report.bars import bar_chart
from trimtab.report.html_table import table
from trimtab.report.lines import Series, line_chart
from trimtab.report.markup import Html
from trimtab.report.page import details, figure, grid, key_figures, note, page, section
from trimtab.report.svg import Rule

__all__ = ["sweep_page"]

Row = Mapping[str, Any]

_FOOTER = (
    "Written by trimtab sweep; every number here is also in the runs and summary Parquet "
    "tables and sweep.json beside this file."
)


def sweep_page(doc: Mapping[str, Any]) -> str:
    """The whole page for a ``sweep.json`` document (``SweepResult.as_json()``)."""
    if doc["sweep"]["kind"] == "shedding":
        return _shedding(doc)
    return _diskfill(doc)


# -- shedding ----------------------------------------------------------------------------------


def _shedding(doc: Mapping[str, Any]) -> str:
    sweep, rows = doc["sweep"], list(doc["summary"])
    strategies = list(sweep["strategies"])
    sizes = sorted({int(r["brokers"]) for r in rows})
    by = {(int(r["brokers"]), r["strategy"]): r for r in rows}
    return page(
        "Shedding sweep: transfers to balance a cluster",
        _shedding_figures(doc, rows, sizes),
        _epochs_section(sweep, rows, by, strategies, sizes),
        _cycles_section(sweep, by, strategies, sizes),
        _every_shedding_setting(rows),
        subtitle=_shedding_subtitle(doc, strategies, sizes),
        contents=[("epochs", "Against PIP-220"), ("cycles", "Cycles, traffic"), ("all", "All")],
        footer=_FOOTER,
    )


def _shedding_subtitle(doc: Mapping[str, Any], strategies: list[str], sizes: list[int]) -> str:
    sweep = doc["sweep"]
    timers = "upstream's hit count and cooldown" if sweep["timers"] else "no timers"
    return (
        f"{plural(doc['tasks'], 'simulation')}: {plural(len(sizes), 'cluster size')} × "
        f"{', '.join(strategies)} × {plural(sweep['trials'], 'trial')}, seed {sweep['seed']}. "
        f"PIP-220's static experiment: loads uniform in [0, 1], "
        f"{sweep['bundles_per_broker']} bundles per broker, TransferShedder at "
        f"{plural(sweep['pairs_per_cycle'], 'pair')} per cycle, {timers}. Run {doc['run_id']}."
    )


def _shedding_figures(doc: Mapping[str, Any], rows: Sequence[Row], sizes: list[int]) -> Html:
    reached = min((r["reached_share"] for r in rows), default=0.0)
    return key_figures(
        [
            (f"{doc['tasks']:,}", "simulations"),
            (f"{sizes[0]:,}–{sizes[-1]:,}" if sizes else "–", "brokers"),
            (f"{reached:.0%}", "runs reaching the target (worst setting)"),
            (f"{doc['simulations_per_s']:,.1f}", "simulations per second"),
        ]
    )


def _epochs_section(
    sweep: Mapping[str, Any],
    rows: Sequence[Row],
    by: Mapping[tuple[int, str], Row],
    strategies: list[str],
    sizes: list[int],
) -> Html:
    """Mean transfers per size and strategy against PIP-220's epochs: chart and table."""
    pip = [(n, by_pip) for n in sizes if (by_pip := _pip(rows, n)) is not None]
    series = [
        Series(s, sizes, [_value(by.get((n, s)), "transfers_mean") for n in sizes])
        for s in strategies
    ]
    if pip:
        series.append(Series("PIP-220", [n for n, _ in pip], [float(e) for _, e in pip]))
    epochs = line_chart(
        series,
        title=f"Transfers to reach std ≤ {sweep['target_std']:g}, per cluster size",
        x_label="brokers",
        unit="transfers (mean over trials)",
    )
    columns = ["brokers", "PIP-220"]
    for s in strategies:
        columns += [f"{s} mean", f"{s} p10–p90", f"{s} vs PIP"]
    epochs_rows = []
    for n in sizes:
        expected = _pip(rows, n)
        line: list[object] = [n, expected]
        for s in strategies:
            r = by.get((n, s))
            mean = _value(r, "transfers_mean")
            spread = f"{_value(r, 'transfers_p10'):g}–{_value(r, 'transfers_p90'):g}"
            gap = f"{(mean - expected) / expected:+.1%}" if expected else "–"
            line += [round(mean, 2), spread if r else "–", gap if r else "–"]
        epochs_rows.append(line)
    return section(
        "Transfers against PIP-220's epochs",
        figure(
            epochs,
            "Mean transfers (source → destination pairs: the PIP's epochs) until the std of "
            "broker load is at most the target; PIP-220's published numbers beside them.",
        ),
        table(columns, epochs_rows, caption="Transfers per cluster size (means over trials)"),
        anchor="epochs",
    )


def _cycles_section(
    sweep: Mapping[str, Any],
    by: Mapping[tuple[int, str], Row],
    strategies: list[str],
    sizes: list[int],
) -> Html:
    """Shedding cycles and traffic moved per size and strategy."""

    def per_size(metric: str, scale: float = 1.0) -> list[Series]:
        return [
            Series(s, sizes, [scale * _value(by.get((n, s)), metric) for n in sizes])
            for s in strategies
        ]

    cycles = line_chart(
        per_size("cycles_mean"),
        title="Shedding cycles to reach the target",
        x_label="brokers",
        unit="cycles (mean)",
    )
    moved = line_chart(
        per_size("moved_share_mean", 100),
        title="Traffic moved to reach the target",
        x_label="brokers",
        unit="% of the cluster's traffic (mean)",
        fmt=lambda v: f"{v:.3g} %",
    )
    return section(
        "Cycles and traffic moved",
        grid(
            figure(
                cycles,
                f"Shedder runs needed: the TransferShedder moves at most "
                f"{sweep['pairs_per_cycle']} pair(s) a cycle, balanced pairs every broker above "
                "the mean with one below.",
            ),
            figure(moved, "Bytes per second moved, as a share of all the cluster's traffic."),
        ),
        anchor="cycles",
    )


def _every_shedding_setting(rows: Sequence[Row]) -> Html:
    """Every summary row, folded: transfers, cycles, bundles, traffic, final std."""
    every = [
        [
            r["brokers"],
            r["strategy"],
            r["trials"],
            _round(r["transfers_mean"]),
            _round(r["transfers_std"]),
            _round(r["transfers_p50"]),
            _round(r["cycles_mean"]),
            _round(r["bundles_moved_mean"]),
            _round(100 * r["moved_share_mean"]),
            _round(r["std_end_mean"], 4),
            f"{r['reached_share']:.0%}",
        ]
        for r in rows
    ]
    columns = [
        "brokers",
        "strategy",
        "trials",
        "transfers mean",
        "transfers std",
        "transfers p50",
        "cycles mean",
        "bundles moved",
        "traffic moved %",
        "final std",
        "reached",
    ]
    return section(
        "Every setting",
        details(
            f"{plural(len(rows), 'setting')}: transfers, cycles, bundles, traffic, final std",
            table(columns, every),
        ),
        anchor="all",
    )


def _pip(rows: Sequence[Row], brokers: int) -> int | None:
    for r in rows:
        if int(r["brokers"]) == brokers and r.get("pip_epochs") is not None:
            return int(r["pip_epochs"])
    return None


# -- diskfill ----------------------------------------------------------------------------------


def _diskfill(doc: Mapping[str, Any]) -> str:
    rows = list(doc["summary"])
    labels = [str(r["label"]) for r in rows]
    usable = [100 * _value(r, "usable_fraction_at_first_readonly_mean") for r in rows]
    return page(
        "Disk-fill sweep: usable capacity at first read-only",
        _diskfill_figures(doc, labels, usable),
        _usable_section(rows, labels, usable),
        _hot_spots_section(rows, labels),
        subtitle=_diskfill_subtitle(doc),
        contents=[("usable", "Usable capacity"), ("hot-spots", "Hot spots")],
        footer=_FOOTER,
    )


def _diskfill_subtitle(doc: Mapping[str, Any]) -> str:
    sweep = doc["sweep"]
    wl = sweep["workload"]
    initial = sweep.get("initial_bytes") or 0
    held = f" ({human_bytes(initial)} already stored, counted as stored)" if initial else ""
    return (
        f"{sweep['cluster']}: {plural(sweep['nodes'], 'writable node')}, "
        f"{human_bytes(sweep['capacity_bytes'])} raw{held}; ledgers E={wl['ensemble']} "
        f"W={wl['write_quorum']} A={wl['ack_quorum']} of {human_bytes(wl['mean_bytes'])} mean. "
        f"{plural(len(doc['summary']), 'setting')} ({sweep['combinations']} combinations of "
        f"{', '.join(sweep['grid'])}) × {plural(sweep['trials'], 'trial')}, seeds "
        f"{sweep['seed']}…{sweep['seed'] + sweep['trials'] - 1}. Run {doc['run_id']}."
    )


def _diskfill_figures(doc: Mapping[str, Any], labels: list[str], usable: list[float]) -> Html:
    ranked = sorted((u, label) for u, label in zip(usable, labels, strict=True) if u == u)
    return key_figures(
        [
            (f"{doc['tasks']:,}", "simulations"),
            (f"{ranked[-1][0]:.1f} %", f"best: {ranked[-1][1]}") if ranked else ("–", "best"),
            (f"{ranked[0][0]:.1f} %", f"worst: {ranked[0][1]}") if ranked else ("–", "worst"),
            (f"{doc['simulations_per_s']:,.2f}", "simulations per second"),
        ]
    )


def _usable_section(rows: Sequence[Row], labels: list[str], usable: list[float]) -> Html:
    """Usable capacity per setting: bars (mean and p10), the caveat, the table, the parameters."""
    bars = bar_chart(
        labels,
        {
            "mean": usable,
            "p10": [100 * _value(r, "usable_fraction_at_first_readonly_p10") for r in rows],
        },
        title="Usable capacity when the first node turns read-only",
        unit="% of capacity up to diskUsageThreshold",
        rules=[Rule(100.0, "physical limit")],
        domain=(0.0, 100.0),
        fmt=lambda v: f"{v:.1f} %",
    )
    never = [r["label"] for r in rows if r["readonly_share"] < 1]
    caveat = (
        note(
            "No node turned read-only in some runs of: "
            + "; ".join(never)
            + " (the simulator's ledger limit came first); their means cover the other runs."
        )
        if never
        else Html("")
    )
    return section(
        "Usable capacity per setting",
        figure(
            bars,
            "Bytes stored when the first node turned read-only, over what the nodes could "
            "hold up to diskUsageThreshold: 100 % means every disk filled at the same pace; "
            "p10 is the level nine runs in ten reached.",
        ),
        caveat,
        _usable_table(rows),
        details(
            "Every parameter of each setting (empty: does not apply)",
            table(
                ["setting", "policy", "weights", "sampling", "cap", "cap mode", "refresh"],
                [_parameters(r) for r in rows],
            ),
        ),
        anchor="usable",
    )


def _usable_table(rows: Sequence[Row]) -> Html:
    def percent(r: Row, key: str) -> float | None:
        return _round(100 * _value(r, key), 2)

    usable = "usable_fraction_at_first_readonly"
    usable_rows = [
        [
            r["label"],
            r["trials"],
            *(percent(r, f"{usable}_{s}") for s in ("mean", "std", "p10", "p50", "p90")),
            percent(r, "max_write_share_mean"),
            _round(_value(r, "first_readonly_time_mean") / 86_400, 1),
            _round(_value(r, "ledgers_mean"), 0),
            f"{r['readonly_share']:.0%}",
        ]
        for r in rows
    ]
    return table(
        [
            "setting",
            "trials",
            "usable % mean",
            "std",
            "p10",
            "p50",
            "p90",
            "max write share %",
            "first read-only (days)",
            "ledgers",
            "read-only reached",
        ],
        usable_rows,
        caption="Usable capacity at first read-only, per setting (% of capacity)",
    )


def _parameters(r: Row) -> list[object]:
    mode = r["cap_mode"]
    return [
        r["label"],
        r["policy"],
        r["weights"],
        r["sampling"],
        r["cap"],
        CapBasis(mode).short if mode is not None else mode,
        _refresh(r["refresh_s"]),
    ]


def _hot_spots_section(rows: Sequence[Row], labels: list[str]) -> Html:
    hot = bar_chart(
        labels,
        {"mean": [100 * _value(r, "max_write_share_mean") for r in rows]},
        title="Largest share of one window's writes on one node",
        unit="% of the window's bytes (mean over trials)",
        fmt=lambda v: f"{v:.1f} %",
    )
    return section(
        "Hot spots",
        figure(
            hot,
            "The largest share of one window's stored bytes that went to a single node: "
            "high means new ledgers pile onto few disks.",
        ),
        anchor="hot-spots",
    )


def _refresh(seconds: float) -> str:
    if not seconds:
        return "every ledger"
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


# -- numbers -----------------------------------------------------------------------------------


def _value(row: Row | None, key: str) -> float:
    """A summary number as a float; NaN when missing (charts leave a gap, tables a dash)."""
    if row is None or row.get(key) is None:
        return math.nan
    return float(row[key])


def _round(value: float | None, digits: int = 2) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits) if digits else float(round(value))
