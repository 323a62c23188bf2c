"""HTML tables for the report, and the small inline bar that shows a fraction in a cell.

:func:`table` formats numbers with a :data:`~trimtab.report.markup.Formatter` and right-aligns
them, escapes text, inserts :class:`~trimtab.report.markup.Html` cells as they are, and past
``max_rows`` says how many rows were left out. :func:`meter` is a tiny SVG bar for a fraction
(a disk's free share, a pick probability) beside its number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from trimtab.report.markup import Formatter, Html, escape, format_number
from trimtab.report.svg import PALETTE

__all__ = ["meter", "table"]


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
