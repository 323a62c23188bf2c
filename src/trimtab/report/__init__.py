"""The self-contained HTML report of a pipeline run, and the chart primitives it is drawn with.

:mod:`~trimtab.report.charts` draws bar and line charts as inline SVG and HTML tables;
:mod:`~trimtab.report.page` wraps them in one offline document.
"""

from trimtab.report.charts import Band, Html, Rule, Series, bar_chart, line_chart, meter, table
from trimtab.report.page import figure, page, section

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
]
