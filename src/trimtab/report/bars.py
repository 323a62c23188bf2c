"""Bar charts: horizontal or vertical, one or more series, against a target band and rules.

:func:`bar_chart` draws one bar per series for each label, sorted if asked by the first
series' values, on a value axis that spans 0, the values, the band and the rules (or a fixed
``domain``, so that several charts share a scale). Horizontal charts suit many long labels
(brokers, clusters); vertical ones suit a short ordered axis (cycles), with labels turned 45°
when they do not fit under their bars.

Example::

    svg = bar_chart(["b1", "b2"], {"now": [0.7, 0.2]}, title="Load per broker", unit="load",
                    band=Band(0.3, 0.6, "target"), sort="descending")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal, NamedTuple

from trimtab.report.markup import Formatter, Html, escape, format_number
from trimtab.report.svg import (
    PALETTE,
    Band,
    Rule,
    band_rect,
    chart_svg,
    clip_label,
    legend_entries,
    nice_ticks,
    no_data,
    svg_line,
    svg_text,
    text_width,
    value_span,
)

__all__ = ["Sort", "bar_chart"]

Sort = Literal["none", "ascending", "descending"]


def bar_chart(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]] | Sequence[float],
    *,
    title: str,
    unit: str,
    horizontal: bool = True,
    sort: Sort = "none",
    band: Band | None = None,
    rules: Sequence[Rule] = (),
    domain: tuple[float, float] | None = None,
    fmt: Formatter = format_number,
    width: int = 720,
    value_labels: bool = True,
    axis_label: str | None = None,
) -> Html:
    """Bars per label, one bar per series in each group, against an optional band and rules.

    ``series`` maps a series name to one value per label (a bare sequence is one unnamed
    series). ``sort`` orders the labels by the first series' values. ``domain`` fixes the
    value axis (so that several charts share a scale); by default it spans 0, the values, the
    band and the rules. ``unit`` names the value axis ("load, fraction of capacity"),
    ``axis_label`` the label axis of a vertical chart (under the labels).
    """
    named = _as_series(series)
    if not labels or not named:
        return no_data(title)
    for name, values in named.items():
        if len(values) != len(labels):
            raise ValueError(f"series {name!r} has {len(values)} values for {len(labels)} labels")
    order = list(range(len(labels)))
    if sort != "none":
        first = next(iter(named.values()))
        order.sort(key=lambda i: _sort_key(first[i]), reverse=sort == "descending")
    rows = [str(labels[i]) for i in order]
    columns = {name: [float(values[i]) for i in order] for name, values in named.items()}
    every = [v for values in columns.values() for v in values if math.isfinite(v)]
    extra = [r.value for r in rules] + ([band.low, band.high] if band else [])
    low, high = domain if domain is not None else value_span([*every, *extra, 0.0])
    ticks = nice_ticks(low, high)
    if domain is None:
        low, high = min(ticks[0], low), max(ticks[-1], high)
    bars = _Bars(rows, columns, low, high, ticks, band, rules, fmt, width, value_labels)
    plot_w, plot_h, parts = _horizontal(bars) if horizontal else _vertical(bars)
    legend = legend_entries(list(columns) if len(columns) > 1 else [], band, rules, fmt, plot_w)
    if horizontal:
        return chart_svg(title, unit, plot_w, plot_h, legend, parts)
    if axis_label:
        parts.append(svg_text(plot_w / 2, plot_h + 10, axis_label, anchor="middle", cls="label"))
        plot_h += 20
    return chart_svg(title, unit, plot_w, plot_h, legend, parts, unit_above=True)


class _Bars(NamedTuple):
    """What either layout draws: the labels in order, the series' values in that order, the
    value axis (its range and ticks), the band and rules, the number format, the width, and
    whether each bar carries its value as text."""

    rows: list[str]
    columns: dict[str, list[float]]
    low: float
    high: float
    ticks: list[float]
    band: Band | None
    rules: Sequence[Rule]
    fmt: Formatter
    width: int
    value_labels: bool


def _horizontal(bars: _Bars) -> tuple[float, float, list[str]]:
    rows, columns, low, high, ticks, band, rules, fmt, width, value_labels = bars
    count = len(columns)
    bar = 16.0 if count == 1 else 11.0
    group = bar * count + 8.0
    left = 12 + max(text_width(clip_label(r)) for r in rows)
    right = 12 + (max(text_width(fmt(v)) for v in _finite(columns)) if value_labels else 0)
    plot_w = float(width)
    inner = plot_w - left - right
    plot_h = group * len(rows)

    def px(v: float) -> float:
        return left + (min(max(v, low), high) - low) / (high - low) * inner

    parts: list[str] = []
    if band is not None:
        parts.append(band_rect(px(band.low), 0, px(band.high) - px(band.low), plot_h))
    for tick in ticks:
        if low - 1e-9 <= tick <= high + 1e-9:
            x = px(tick)
            parts.append(svg_line(x, 0, x, plot_h, "grid"))
            parts.append(svg_text(x, plot_h + 16, fmt(tick), anchor="middle"))
    zero = px(0.0)
    for i, row in enumerate(rows):
        top = i * group + 4
        parts.append(
            svg_text(left - 6, top + bar * count / 2 + 4, clip_label(row), anchor="end", tip=row)
        )
        for k, (name, values) in enumerate(columns.items()):
            value = values[i]
            y = top + k * bar
            tip = f"{row} · {name}: {fmt(value)}" if name else f"{row}: {fmt(value)}"
            if not math.isfinite(value):
                parts.append(svg_text(zero + 4, y + bar - 3, "no value", cls="muted", tip=tip))
                continue
            x0, x1 = sorted((zero, px(value)))
            colour = PALETTE[k % len(PALETTE)]
            parts.append(
                f'<rect class="bar" x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 0.5):.1f}" '
                f'height="{bar - 1:.1f}" fill="{colour}"><title>{escape(tip)}</title></rect>'
            )
            if value_labels:
                parts.append(svg_text(x1 + 4, y + bar - 3, fmt(value), cls="value"))
    for rule in rules:
        x = px(rule.value)
        parts.append(svg_line(x, 0, x, plot_h, "rule"))
    parts.append(svg_line(zero, 0, zero, plot_h, "axis"))
    parts.append(svg_line(left, plot_h, left + inner, plot_h, "axis"))
    return plot_w, plot_h + 22, parts


def _vertical(bars: _Bars) -> tuple[float, float, list[str]]:
    rows, columns, low, high, ticks, band, rules, fmt, width, value_labels = bars
    count = len(columns)
    tick_labels = [fmt(t) for t in ticks]
    left = 12 + max(text_width(t) for t in tick_labels)
    plot_w = float(width)
    group = (plot_w - left - 12) / len(rows)
    longest = max(text_width(clip_label(r)) for r in rows)
    rotate = longest > group - 4
    if rotate:  # the first label, turned 45°, reaches left of its bar by about 0.72 × its length
        left = max(left, longest * 0.72 + 4 - group / 2)
    inner = plot_w - left - 12
    group = inner / len(rows)
    bar = max(min((group - 6) / count, 40.0), 1.0)
    below = (longest * 0.72 + 12) if rotate else 20.0
    plot_h = 240.0

    def py(v: float) -> float:
        return plot_h - (min(max(v, low), high) - low) / (high - low) * plot_h

    parts: list[str] = []
    if band is not None:
        parts.append(band_rect(left, py(band.high), inner, py(band.low) - py(band.high)))
    for tick, text in zip(ticks, tick_labels, strict=True):
        if low - 1e-9 <= tick <= high + 1e-9:
            y = py(tick)
            parts.append(svg_line(left, y, left + inner, y, "grid"))
            parts.append(svg_text(left - 6, y + 4, text, anchor="end"))
    zero = py(0.0)
    show_values = value_labels and bar >= text_width("0.00") * 0.8
    for i, row in enumerate(rows):
        centre = left + (i + 0.5) * group
        start = centre - bar * count / 2
        if rotate:
            parts.append(
                f'<text x="{centre:.1f}" y="{plot_h + 12:.1f}" text-anchor="end" '
                f'transform="rotate(-45 {centre:.1f} {plot_h + 12:.1f})">'
                f"<title>{escape(row)}</title>{escape(clip_label(row))}</text>"
            )
        else:
            parts.append(svg_text(centre, plot_h + 16, clip_label(row), anchor="middle", tip=row))
        for k, (name, values) in enumerate(columns.items()):
            value = values[i]
            if not math.isfinite(value):
                continue
            x = start + k * bar
            y0, y1 = sorted((zero, py(value)))
            tip = f"{row} · {name}: {fmt(value)}" if name else f"{row}: {fmt(value)}"
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{y0:.1f}" width="{max(bar - 1, 0.5):.1f}" '
                f'height="{max(y1 - y0, 0.5):.1f}" fill="{PALETTE[k % len(PALETTE)]}">'
                f"<title>{escape(tip)}</title></rect>"
            )
            if show_values:
                parts.append(
                    svg_text(x + bar / 2, y0 - 3, fmt(value), anchor="middle", cls="value")
                )
    for rule in rules:
        y = py(rule.value)
        parts.append(svg_line(left, y, left + inner, y, "rule"))
    parts.append(svg_line(left, zero, left + inner, zero, "axis"))
    return plot_w, plot_h + below, parts


def _finite(columns: dict[str, list[float]]) -> list[float]:
    return [v for values in columns.values() for v in values if math.isfinite(v)] or [0.0]


def _sort_key(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def _as_series(series: Mapping[str, Sequence[float]] | Sequence[float]) -> dict[str, list[float]]:
    if isinstance(series, Mapping):
        return {str(k): [float(v) for v in vs] for k, vs in series.items()}
    return {"": [float(v) for v in series]} if len(series) else {}
