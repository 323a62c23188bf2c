"""The report's markup basics: safe HTML strings and short, human numbers.

Every piece of text in the report is escaped; callers pass plain strings, never markup, except
through :class:`Html`, which marks a string as already safe (a table cell with an inline chart,
a section built from other parts). :func:`format_number` is the default for ticks, tooltips and
table cells: ``0.25``, ``1,250``, ``3.2e-05``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable

__all__ = ["Formatter", "Html", "escape", "format_number"]

Formatter = Callable[[float], str]


class Html(str):
    """A string of markup that is already safe: :func:`escape` and :func:`table` keep it."""

    __slots__ = ()


def escape(value: object) -> Html:
    """Text as HTML (``&<>"'`` escaped); :class:`Html` passes through unchanged."""
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


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
