"""The self-contained HTML report of a pipeline run, and the chart primitives it is drawn with.

:func:`write_report` builds ``report.html`` from an output directory
(:mod:`~trimtab.report.data` reads it, :mod:`~trimtab.report.render` draws it, section by
section: :mod:`~trimtab.report.fleet`, :mod:`~trimtab.report.cluster`,
:mod:`~trimtab.report.brokers`, :mod:`~trimtab.report.storage`, on the shared
:mod:`~trimtab.report.values`); :mod:`~trimtab.report.bars` and :mod:`~trimtab.report.lines`
draw bar and line charts as inline SVG (on :mod:`~trimtab.report.svg`),
:mod:`~trimtab.report.html_table` HTML tables, and :mod:`~trimtab.report.page` wraps them in one
offline document (:mod:`~trimtab.report.markup`: safe HTML strings). :mod:`~trimtab.report.sweep`
draws a sweep's page.
"""

from trimtab.report.bars import bar_chart
from trimtab.report.html_table import meter, table
from trimtab.report.lines import Series, line_chart
from trimtab.report.markup import Html
from trimtab.report.page import figure, page, section
from trimtab.report.render import write_report
from trimtab.report.svg import Band, Rule

__all__ = [
    "Band",
    "Html",
    "Rule",
    "Series",
    "bar_chart",
    "figure",
    "line_chart",
    "meter",
    "page",
    "section",
    "table",
    "write_report",
]
