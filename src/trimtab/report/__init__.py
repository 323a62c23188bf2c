"""The self-contained HTML report of a pipeline run, and the chart primitives it is drawn with.

:func:`write_report` builds ``report.html`` from an output directory
(:mod:`~trimtab.report.data` reads it, :mod:`~trimtab.report.render` draws it);
:mod:`~trimtab.report.charts` draws bar and line charts as inline SVG and HTML tables;
:mod:`~trimtab.report.page` wraps them in one offline document.
"""

from trimtab.report.charts import Band, Html, Rule, Series, bar_chart, line_chart, meter, table
from trimtab.report.page import figure, page, section
from trimtab.report.render import write_report

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
