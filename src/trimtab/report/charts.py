"""Chart primitives: bar and line charts as inline SVG, and HTML tables, with no JavaScript.

Goals
    A report that opens offline and reads without trimtab's help: every chart is one ``<svg>``
    element written in Python (no library, no fetch), with a title, labelled axes with units,
    a legend when there is more than one series, and a ``<title>`` tooltip on every bar and
    point that gives the exact value.

Constraints
    * Every piece of text is escaped; callers pass plain strings, never markup, except through
      :class:`Html`, which marks a string as already safe (for table cells with inline charts).
    * Empty input gives a short "no data" note instead of an empty or broken chart.
    * Charts scale to the page width (``viewBox``) up to their natural width; coordinates are
      rounded to 0.1 px so that the file stays small.

API
    :func:`bar_chart` (horizontal or vertical, one or more series, optional target
    :class:`Band` and reference :class:`Rule` lines, optional sorting), :func:`line_chart`
    (several :class:`Series` on a numeric x axis), :func:`table` (an HTML table; numbers
    right-aligned) and :func:`meter` (a tiny inline bar for a fraction inside a table cell).

Example::

    svg = bar_chart(["b1", "b2"], {"now": [0.7, 0.2]}, title="Load per broker", unit="load",
                    band=Band(0.3, 0.6, "target"), sort="descending")
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

__all__ = [
    "PALETTE",
    "Band",
    "Html",
    "Rule",
    "Series",
    "bar_chart",
    "escape",
    "format_number",
    "line_chart",
    "meter",
    "nice_ticks",
    "table",
]

# Okabe–Ito: distinguishable with the common colour-vision deficiencies, and in greyscale print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999")
_BAND_FILL = "#2ca02c"
_RULE_COLOUR = "#555555"
_FONT = 12.0  # px, in the SVG's own units
_CHAR = 0.6 * _FONT  # a rough average glyph width, enough to lay out labels without a font
_MAX_LABEL_CHARS = 40

Formatter = Callable[[float], str]
Sort = Literal["none", "ascending", "descending"]


class Html(str):
    """A string of markup that is already safe: :func:`escape` and :func:`table` keep it."""

    __slots__ = ()


def escape(value: object) -> Html:
    """Text as HTML (``&<>"'`` escaped); :class:`Html` passes through unchanged."""
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


@dataclass(frozen=True, slots=True)
class Band:
    """A shaded range of values (a target band): drawn across the plot, named in the legend."""

    low: float
    high: float
    label: str


@dataclass(frozen=True, slots=True)
class Rule:
    """A dashed reference line at one value (a mean, a threshold), named in the legend."""

    value: float
    label: str


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a :func:`line_chart`: y over x, same length; NaN values break the line."""

    name: str
    x: Sequence[float]
    y: Sequence[float]


def format_number(value: float) -> str:
    """Short, human numbers for ticks and tooltips: ``0.25``, ``1,250``, ``3.2e-05``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e15 or magnitude < 1e-3:
        return f"{value:.2g}"
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.3g}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values (1, 2, 2.5 or 5 × 10^k steps) covering low..high."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if max(abs(low), abs(high)) > 1e300:  # a broken counter: round steps would overflow
        return sorted({low, high, 0.0} if low < 0 < high else {low, high})
    if high < low:
        low, high = high, low
    if high == low:
        pad = abs(high) * 0.1 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9) * step
    ticks = []
    value = first
    while value < high + step * 0.999:
        ticks.append(round(value, 12))
        value += step
    return ticks


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
        return _empty(title)
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
    low, high = domain if domain is not None else _span([*every, *extra, 0.0])
    ticks = nice_ticks(low, high)
    if domain is None:
        low, high = min(ticks[0], low), max(ticks[-1], high)
    if horizontal:
        body = _horizontal(rows, columns, low, high, ticks, band, rules, fmt, width, value_labels)
    else:
        body = _vertical(rows, columns, low, high, ticks, band, rules, fmt, width, value_labels)
    plot_w, plot_h, parts = body
    legend = _legend(list(columns) if len(columns) > 1 else [], band, rules, fmt, plot_w)
    if horizontal:
        return _svg(title, unit, plot_w, plot_h, legend, parts)
    if axis_label:
        parts.append(_text(plot_w / 2, plot_h + 10, axis_label, anchor="middle", cls="label"))
        plot_h += 20
    return _svg(title, unit, plot_w, plot_h, legend, parts, unit_above=True)


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
        return _empty(title)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points] + [r.value for r in rules]
    ys += [band.low, band.high] if band else []
    y_low, y_high = _span([*ys, 0.0] if y_from_zero else ys)
    y_ticks = nice_ticks(y_low, y_high)
    y_labels = [fmt(t) for t in y_ticks]
    left = 12 + _text_width(max(y_labels, key=len))
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
        parts.append(_line(plot.left, y, plot.left + plot.width, y, "rule"))
    for k, s in enumerate(series):
        parts += _line_series(plot, s, PALETTE[k % len(PALETTE)], fmt, x_fmt)
    legend = _legend([s.name for s in series], band, rules, fmt, float(width))
    return _svg(title, unit, float(width), plot.height + 40, legend, parts, unit_above=True)


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
        parts.append(_band_rect(plot.left, top, plot.width, bottom - top))
    for tick, text in y_ticks:
        y = plot.py(tick)
        parts.append(_line(plot.left, y, plot.left + plot.width, y, "grid"))
        parts.append(_text(plot.left - 6, y + 4, text, anchor="end"))
    return parts


def _x_axis(plot: _Plot, ticks: Sequence[float], x_fmt: Formatter, x_label: str) -> list[str]:
    """Tick marks and labels inside the x range, the axis line and its label."""
    parts: list[str] = []
    x_low, x_high = plot.x
    for tick in ticks:
        if x_low - 1e-9 <= tick <= x_high + 1e-9:
            x = plot.px(tick)
            parts.append(_line(x, plot.height, x, plot.height + 4, "axis"))
            parts.append(_text(x, plot.height + 17, x_fmt(tick), anchor="middle"))
    right = plot.left + plot.width
    parts.append(_line(plot.left, plot.height, right, plot.height, "axis"))
    centre = plot.left + plot.width / 2
    parts.append(_text(centre, plot.height + 34, x_label, anchor="middle", cls="label"))
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


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    caption: str | None = None,
    fmt: Formatter = format_number,
    max_rows: int | None = None,
    empty: str = "nothing to show",
) -> Html:
    """An HTML table; numbers are formatted with ``fmt`` and right-aligned, text escaped.

    Cells that are :class:`Html` are inserted as they are. Past ``max_rows`` rows, a last
    line says how many were left out.
    """
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    shown = rows if max_rows is None else rows[:max_rows]
    body = []
    for row in shown:
        cells = []
        for value in row:
            if isinstance(value, bool) or not isinstance(value, int | float):
                cells.append(f"<td>{escape(value)}</td>")
            else:
                cells.append(f'<td class="num">{escape(fmt(value))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    if not rows:
        body.append(
            f'<tr><td colspan="{max(len(columns), 1)}" class="empty">{escape(empty)}</td></tr>'
        )
    elif max_rows is not None and len(rows) > max_rows:
        more = len(rows) - max_rows
        body.append(
            f'<tr><td colspan="{max(len(columns), 1)}" class="more">'
            f"… and {more:,} more rows (all of them are in the Parquet table)</td></tr>"
        )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return Html(
        f'<table class="data">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def meter(fraction: float, *, width: int = 80, colour: str = PALETTE[0]) -> Html:
    """A small inline bar showing ``fraction`` (0..1) of its width, for a table cell."""
    if not math.isfinite(fraction):
        return Html("")
    filled = max(0.0, min(1.0, fraction)) * width
    return Html(
        f'<svg class="meter" width="{width}" height="10" viewBox="0 0 {width} 10" '
        f'role="img" aria-label="{escape(format_number(fraction * 100))} %">'
        f'<rect width="{width}" height="10" fill="#e6e6e6"/>'
        f'<rect width="{filled:.1f}" height="10" fill="{colour}"/></svg>'
    )


# --- layout -----------------------------------------------------------------------------------


def _horizontal(
    rows: list[str],
    columns: dict[str, list[float]],
    low: float,
    high: float,
    ticks: list[float],
    band: Band | None,
    rules: Sequence[Rule],
    fmt: Formatter,
    width: int,
    value_labels: bool,
) -> tuple[float, float, list[str]]:
    count = len(columns)
    bar = 16.0 if count == 1 else 11.0
    group = bar * count + 8.0
    left = 12 + max(_text_width(_clip(r)) for r in rows)
    right = 12 + (max(_text_width(fmt(v)) for v in _finite(columns)) if value_labels else 0)
    plot_w = float(width)
    inner = plot_w - left - right
    plot_h = group * len(rows)

    def px(v: float) -> float:
        return left + (min(max(v, low), high) - low) / (high - low) * inner

    parts: list[str] = []
    if band is not None:
        parts.append(_band_rect(px(band.low), 0, px(band.high) - px(band.low), plot_h))
    for tick in ticks:
        if low - 1e-9 <= tick <= high + 1e-9:
            x = px(tick)
            parts.append(_line(x, 0, x, plot_h, "grid"))
            parts.append(_text(x, plot_h + 16, fmt(tick), anchor="middle"))
    zero = px(0.0)
    for i, row in enumerate(rows):
        top = i * group + 4
        parts.append(_text(left - 6, top + bar * count / 2 + 4, _clip(row), anchor="end", tip=row))
        for k, (name, values) in enumerate(columns.items()):
            value = values[i]
            y = top + k * bar
            tip = f"{row} · {name}: {fmt(value)}" if name else f"{row}: {fmt(value)}"
            if not math.isfinite(value):
                parts.append(_text(zero + 4, y + bar - 3, "no value", cls="muted", tip=tip))
                continue
            x0, x1 = sorted((zero, px(value)))
            colour = PALETTE[k % len(PALETTE)]
            parts.append(
                f'<rect class="bar" x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 0.5):.1f}" '
                f'height="{bar - 1:.1f}" fill="{colour}"><title>{escape(tip)}</title></rect>'
            )
            if value_labels:
                parts.append(_text(x1 + 4, y + bar - 3, fmt(value), cls="value"))
    for rule in rules:
        x = px(rule.value)
        parts.append(_line(x, 0, x, plot_h, "rule"))
    parts.append(_line(zero, 0, zero, plot_h, "axis"))
    parts.append(_line(left, plot_h, left + inner, plot_h, "axis"))
    return plot_w, plot_h + 22, parts


def _vertical(
    rows: list[str],
    columns: dict[str, list[float]],
    low: float,
    high: float,
    ticks: list[float],
    band: Band | None,
    rules: Sequence[Rule],
    fmt: Formatter,
    width: int,
    value_labels: bool,
) -> tuple[float, float, list[str]]:
    count = len(columns)
    tick_labels = [fmt(t) for t in ticks]
    left = 12 + max(_text_width(t) for t in tick_labels)
    plot_w = float(width)
    group = (plot_w - left - 12) / len(rows)
    longest = max(_text_width(_clip(r)) for r in rows)
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
        parts.append(_band_rect(left, py(band.high), inner, py(band.low) - py(band.high)))
    for tick, text in zip(ticks, tick_labels, strict=True):
        if low - 1e-9 <= tick <= high + 1e-9:
            y = py(tick)
            parts.append(_line(left, y, left + inner, y, "grid"))
            parts.append(_text(left - 6, y + 4, text, anchor="end"))
    zero = py(0.0)
    show_values = value_labels and bar >= _text_width("0.00") * 0.8
    for i, row in enumerate(rows):
        centre = left + (i + 0.5) * group
        start = centre - bar * count / 2
        if rotate:
            parts.append(
                f'<text x="{centre:.1f}" y="{plot_h + 12:.1f}" text-anchor="end" '
                f'transform="rotate(-45 {centre:.1f} {plot_h + 12:.1f})">'
                f"<title>{escape(row)}</title>{escape(_clip(row))}</text>"
            )
        else:
            parts.append(_text(centre, plot_h + 16, _clip(row), anchor="middle", tip=row))
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
                parts.append(_text(x + bar / 2, y0 - 3, fmt(value), anchor="middle", cls="value"))
    for rule in rules:
        y = py(rule.value)
        parts.append(_line(left, y, left + inner, y, "rule"))
    parts.append(_line(left, zero, left + inner, zero, "axis"))
    return plot_w, plot_h + below, parts


def _legend(
    names: list[str], band: Band | None, rules: Sequence[Rule], fmt: Formatter, width: float
) -> tuple[list[str], int]:
    """Legend entries (swatch + text), wrapped onto as many lines as the width needs."""
    entries: list[tuple[str, str]] = []
    for k, name in enumerate(names):
        entries.append((f'<rect width="12" height="12" fill="{PALETTE[k % len(PALETTE)]}"/>', name))
    if band is not None:
        text = f"{band.label} ({fmt(band.low)} – {fmt(band.high)})"
        entries.append((_band_rect(0, 0, 12, 12), text))
    for rule in rules:
        entries.append((_line(0, 6, 12, 6, "rule"), f"{rule.label} ({fmt(rule.value)})"))
    lines: list[str] = []
    x, y = 0.0, 0.0
    for swatch, text in entries:
        span = 20 + _text_width(text) + 18
        if x > 0 and x + span > width:
            x, y = 0.0, y + 18
        lines.append(
            f'<g transform="translate({x:.1f},{y:.1f})">{swatch}'
            f'<text x="18" y="10.5">{escape(text)}</text></g>'
        )
        x += span
    return lines, (round(y / 18) + 1 if lines else 0)


def _svg(
    title: str,
    unit: str,
    width: float,
    plot_h: float,
    legend: tuple[list[str], int],
    parts: list[str],
    *,
    unit_above: bool = False,
) -> Html:
    """Title on top, then the legend, then the plot; the unit under the plot, or above it
    for a vertical value axis (``unit_above``)."""
    entries, legend_lines = legend
    legend_h = 18.0 * legend_lines + (6 if legend_lines else 0)
    top = 26.0 + legend_h
    unit_h = 20.0 if unit_above else 18.0
    height = top + plot_h + unit_h + 8
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width:.0f} '
        f'{height:.0f}" width="{width:.0f}" height="{height:.0f}" role="img" '
        f'aria-label="{escape(title)}" style="max-width:100%;height:auto">',
        f"<title>{escape(title)}</title>",
        f'<text x="0" y="16" class="title">{escape(title)}</text>',
    ]
    if entries:
        out.append(f'<g class="legend" transform="translate(0,28)">{"".join(entries)}</g>')
    if unit_above:  # the y unit on its own line above the plot
        out.append(f'<text x="0" y="{top + 4:.1f}" class="label">{escape(unit)}</text>')
        top += 20
    out.append(f'<g transform="translate(0,{top:.1f})">{"".join(parts)}</g>')
    if not unit_above:
        out.append(
            f'<text x="{width / 2:.1f}" y="{top + plot_h + 14:.1f}" text-anchor="middle" '
            f'class="label">{escape(unit)}</text>'
        )
    out.append("</svg>")
    return Html("".join(out))


def _empty(title: str) -> Html:
    return Html(f'<p class="empty"><strong>{escape(title)}</strong>: no data to draw.</p>')


def _band_rect(x: float, y: float, w: float, h: float) -> str:
    return (
        f'<rect class="band" x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" '
        f'height="{max(h, 0):.1f}" fill="{_BAND_FILL}" fill-opacity="0.16" '
        f'stroke="{_BAND_FILL}" stroke-opacity="0.6" stroke-dasharray="4 3"/>'
    )


def _line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    style = {
        "grid": 'stroke="#e3e3e3"',
        "axis": 'stroke="#333"',
        "rule": f'stroke="{_RULE_COLOUR}" stroke-width="1.5" stroke-dasharray="6 4"',
    }[cls]
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {style}/>'


def _text(
    x: float,
    y: float,
    text: str,
    *,
    anchor: str = "start",
    cls: str | None = None,
    tip: str | None = None,
) -> str:
    klass = f' class="{cls}"' if cls else ""
    title = f"<title>{escape(tip)}</title>" if tip and tip != text else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}>{title}{escape(text)}</text>'
    )


def _text_width(text: str) -> float:
    return len(text) * _CHAR


def _clip(label: str) -> str:
    return label if len(label) <= _MAX_LABEL_CHARS else label[: _MAX_LABEL_CHARS - 1] + "…"


def _span(values: Sequence[float]) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    if low == high:
        pad = abs(high) * 0.1 or 1.0
        return low - (pad if low < 0 else 0.0), high + pad
    return low, high


def _finite(columns: dict[str, list[float]]) -> list[float]:
    return [v for values in columns.values() for v in values if math.isfinite(v)] or [0.0]


def _sort_key(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def _as_series(series: Mapping[str, Sequence[float]] | Sequence[float]) -> dict[str, list[float]]:
    if isinstance(series, Mapping):
        return {str(k): [float(v) for v in vs] for k, vs in series.items()}
    return {"": [float(v) for v in series]} if len(series) else {}
