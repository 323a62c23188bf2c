"""Line charts: several series over a shared numeric x axis (cycles, a swept setting).

:func:`line_chart` draws each :class:`Series` as a polyline with a marker per point (a NaN
breaks the line; a series of one point shows as a marker), over y grid lines and x ticks that
are whole numbers when every x is, against an optional target band and reference rules.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from trimtab.report.markup import Formatter, Html, escape, format_number
from trimtab.report.svg import (
    PALETTE,
    Band,
    Rule,
    band_rect,
    chart_svg,
    legend_entries,
    nice_ticks,
    no_data,
    svg_line,
    svg_text,
    text_width,
    value_span,
)

__all__ = ["Series", "line_chart"]


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a :func:`line_chart`: y over x, same length; NaN values break the line."""

    name: str
    x: Sequence[float]
    y: Sequence[float]


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    unit: str,
    band: Band | None = None,
    rules: Sequence[Rule] = (),
    fmt: Formatter = format_number,
    x_fmt: Formatter = format_number,
    width: int = 720,
    height: int = 260,
    y_from_zero: bool = True,
) -> Html:
    """Several series over a shared numeric x axis (cycles, a swept setting), with markers.

    ``unit`` names the y axis, ``x_label`` the x axis. The y axis starts at 0 unless
    ``y_from_zero`` is false; a series of one point shows as a marker.
    """
    points = [
        (x, y)
        for s in series
        for x, y in zip(s.x, s.y, strict=True)
        if math.isfinite(x) and math.isfinite(y)
    ]
    if not points:
        return no_data(title)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points] + [r.value for r in rules]
    ys += [band.low, band.high] if band else []
    y_low, y_high = value_span([*ys, 0.0] if y_from_zero else ys)
    y_ticks = nice_ticks(y_low, y_high)
    y_labels = [fmt(t) for t in y_ticks]
    left = 12 + text_width(max(y_labels, key=len))
    x_low, x_high = (min(xs), max(xs)) if min(xs) != max(xs) else (min(xs) - 1, max(xs) + 1)
    plot = _Plot(
        left=left,
        width=float(width) - left - 24,
        height=float(height),
        x=(x_low, x_high),
        y=(min(y_ticks[0], y_low), max(y_ticks[-1], y_high)),
    )
    parts = _line_frame(plot, band, rules, zip(y_ticks, y_labels, strict=True))
    parts += _x_axis(plot, _x_ticks(xs), x_fmt, x_label)
    for rule in rules:
        y = plot.py(rule.value)
        parts.append(svg_line(plot.left, y, plot.left + plot.width, y, "rule"))
    for k, s in enumerate(series):
        parts += _line_series(plot, s, PALETTE[k % len(PALETTE)], fmt, x_fmt)
    legend = legend_entries([s.name for s in series], band, rules, fmt, float(width))
    return chart_svg(title, unit, float(width), plot.height + 40, legend, parts, unit_above=True)


class _Plot(NamedTuple):
    """A line chart's plot area: where it starts, its size, and the value ranges it shows."""

    left: float
    width: float
    height: float
    x: tuple[float, float]
    y: tuple[float, float]

    def px(self, x: float) -> float:
        low, high = self.x
        return self.left + (x - low) / (high - low) * self.width

    def py(self, y: float) -> float:
        low, high = self.y
        return self.height - (y - low) / (high - low) * self.height


def _x_ticks(xs: Sequence[float]) -> list[float]:
    """About six round ticks; whole numbers only when every x is whole (cycles, brokers)."""
    ticks = nice_ticks(min(xs), max(xs), 6)
    if all(float(x).is_integer() for x in xs):
        ticks = [t for t in ticks if float(t).is_integer()] or ticks
    return ticks


def _line_frame(
    plot: _Plot, band: Band | None, rules: Sequence[Rule], y_ticks: Iterable[tuple[float, str]]
) -> list[str]:
    """The band behind everything, then the y grid lines with their labels."""
    parts: list[str] = []
    y_low, y_high = plot.y
    if band is not None:
        top = plot.py(min(max(band.high, y_low), y_high))
        bottom = plot.py(max(min(band.low, y_high), y_low))
        parts.append(band_rect(plot.left, top, plot.width, bottom - top))
    for tick, text in y_ticks:
        y = plot.py(tick)
        parts.append(svg_line(plot.left, y, plot.left + plot.width, y, "grid"))
        parts.append(svg_text(plot.left - 6, y + 4, text, anchor="end"))
    return parts


def _x_axis(plot: _Plot, ticks: Sequence[float], x_fmt: Formatter, x_label: str) -> list[str]:
    """Tick marks and labels inside the x range, the axis line and its label."""
    parts: list[str] = []
    x_low, x_high = plot.x
    for tick in ticks:
        if x_low - 1e-9 <= tick <= x_high + 1e-9:
            x = plot.px(tick)
            parts.append(svg_line(x, plot.height, x, plot.height + 4, "axis"))
            parts.append(svg_text(x, plot.height + 17, x_fmt(tick), anchor="middle"))
    right = plot.left + plot.width
    parts.append(svg_line(plot.left, plot.height, right, plot.height, "axis"))
    centre = plot.left + plot.width / 2
    parts.append(svg_text(centre, plot.height + 34, x_label, anchor="middle", cls="label"))
    return parts


def _line_series(
    plot: _Plot, s: Series, colour: str, fmt: Formatter, x_fmt: Formatter
) -> list[str]:
    """One series: a polyline per run of finite points (NaN breaks it), a marker per point."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in zip(s.x, s.y, strict=True):
        if math.isfinite(x) and math.isfinite(y):
            runs[-1].append((x, y))
        elif runs[-1]:
            runs.append([])
    parts: list[str] = []
    for run in runs:
        if len(run) > 1:
            path = " ".join(f"{plot.px(x):.1f},{plot.py(y):.1f}" for x, y in run)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
    radius = 3.5 if sum(len(r) for r in runs) <= 80 else 2.0
    for run in runs:
        for x, y in run:
            tip = f"{s.name}: {x_fmt(x)} → {fmt(y)}"
            parts.append(
                f'<circle cx="{plot.px(x):.1f}" cy="{plot.py(y):.1f}" r="{radius}" '
                f'fill="{colour}"><title>{escape(tip)}</title></circle>'
            )
    return parts
