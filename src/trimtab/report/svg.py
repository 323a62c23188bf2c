"""The SVG pieces every chart is drawn with: frame, title, legend, axes' text, bands and rules.

Goals
    A report that opens offline and reads without trimtab's help: every chart is one ``<svg>``
    element written in Python (no library, no fetch), with a title, labelled axes with units,
    a legend when there is more than one series, and a ``<title>`` tooltip on every bar and
    point that gives the exact value.

Constraints
    * Every piece of text is escaped (:mod:`~trimtab.report.markup`).
    * Empty input gives a short "no data" note (:func:`no_data`) instead of an empty or broken
      chart.
    * Charts scale to the page width (``viewBox``) up to their natural width; coordinates are
      rounded to 0.1 px so that the file stays small.

The chart kinds build on these: :mod:`~trimtab.report.bars` and :mod:`~trimtab.report.lines`;
:func:`nice_ticks` chooses their round axis values, :class:`Band` and :class:`Rule` are the
target band and the reference lines they draw, in the colours of :data:`PALETTE`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from trimtab.report.markup import Formatter, Html, escape

__all__ = [
    "PALETTE",
    "Band",
    "Rule",
    "band_rect",
    "chart_svg",
    "clip_label",
    "legend_entries",
    "nice_ticks",
    "no_data",
    "svg_line",
    "svg_text",
    "text_width",
    "value_span",
]

# Okabe–Ito: distinguishable with the common colour-vision deficiencies, and in greyscale print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999")
_BAND_FILL = "#2ca02c"
_RULE_COLOUR = "#555555"
_FONT = 12.0  # px, in the SVG's own units
_CHAR = 0.6 * _FONT  # a rough average glyph width, enough to lay out labels without a font
_MAX_LABEL_CHARS = 40


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


def legend_entries(
    names: list[str], band: Band | None, rules: Sequence[Rule], fmt: Formatter, width: float
) -> tuple[list[str], int]:
    """Legend entries (swatch + text), wrapped onto as many lines as the width needs."""
    entries: list[tuple[str, str]] = []
    for k, name in enumerate(names):
        entries.append((f'<rect width="12" height="12" fill="{PALETTE[k % len(PALETTE)]}"/>', name))
    if band is not None:
        text = f"{band.label} ({fmt(band.low)} – {fmt(band.high)})"
        entries.append((band_rect(0, 0, 12, 12), text))
    for rule in rules:
        entries.append((svg_line(0, 6, 12, 6, "rule"), f"{rule.label} ({fmt(rule.value)})"))
    lines: list[str] = []
    x, y = 0.0, 0.0
    for swatch, text in entries:
        span = 20 + text_width(text) + 18
        if x > 0 and x + span > width:
            x, y = 0.0, y + 18
        lines.append(
            f'<g transform="translate({x:.1f},{y:.1f})">{swatch}'
            f'<text x="18" y="10.5">{escape(text)}</text></g>'
        )
        x += span
    return lines, (round(y / 18) + 1 if lines else 0)


def chart_svg(
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


def no_data(title: str) -> Html:
    return Html(f'<p class="empty"><strong>{escape(title)}</strong>: no data to draw.</p>')


def band_rect(x: float, y: float, w: float, h: float) -> str:
    return (
        f'<rect class="band" x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" '
        f'height="{max(h, 0):.1f}" fill="{_BAND_FILL}" fill-opacity="0.16" '
        f'stroke="{_BAND_FILL}" stroke-opacity="0.6" stroke-dasharray="4 3"/>'
    )


def svg_line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    style = {
        "grid": 'stroke="#e3e3e3"',
        "axis": 'stroke="#333"',
        "rule": f'stroke="{_RULE_COLOUR}" stroke-width="1.5" stroke-dasharray="6 4"',
    }[cls]
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {style}/>'


def svg_text(
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


def text_width(text: str) -> float:
    return len(text) * _CHAR


def clip_label(label: str) -> str:
    return label if len(label) <= _MAX_LABEL_CHARS else label[: _MAX_LABEL_CHARS - 1] + "…"


def value_span(values: Sequence[float]) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    if low == high:
        pad = abs(high) * 0.1 or 1.0
        return low - (pad if low < 0 else 0.0), high + pad
    return low, high
