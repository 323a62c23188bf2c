"""The page shell: one self-contained HTML document with inline styles and no fetches.

Goals
    A file an operator can mail, attach to a ticket or open from a laptop with no network,
    and read without knowing trimtab: a title, a contents list, sections with one line of
    explanation per chart.

Constraints
    * Self-contained: styles are inline, charts are inline SVG, there are no scripts; the
      ``Content-Security-Policy`` meta tag forbids every fetch (``default-src 'none'``), so a
      stray reference fails loudly in a browser instead of leaking a request.
    * Every caller string is escaped (:func:`~trimtab.report.markup.escape`); only
      :class:`~trimtab.report.markup.Html` values (charts, tables, the helpers below) are
      inserted as markup.

Example::

    doc = page("Fleet report", section("Overview", figure(svg, "Bars are brokers."),
                                       anchor="overview"), contents=[("overview", "Overview")])
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from trimtab.report.markup import Html, escape

__all__ = [
    "CSP",
    "STYLE",
    "advice",
    "details",
    "figure",
    "grid",
    "key_figures",
    "note",
    "page",
    "paragraph",
    "section",
    "slug",
]

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d8dee4; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
       sans-serif; color: var(--ink); background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 64px; }
header.page { border-bottom: 1px solid var(--line); margin-bottom: 20px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 21px; margin: 36px 0 6px; padding-top: 10px; border-top: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; }
p { margin: 4px 0 10px; }
.subtitle, .muted { color: var(--muted); }
.intro { max-width: 90ch; }
nav.contents { background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
               padding: 8px 14px; margin: 12px 0 20px; }
nav.contents ol { margin: 4px 0; padding-left: 22px; columns: 3 220px; }
figure { margin: 12px 0 20px; }
figcaption { color: var(--muted); font-size: 13.5px; max-width: 90ch; margin-top: 2px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr));
        gap: 8px 28px; align-items: start; }
svg.chart { display: block; font-family: inherit; font-size: 12px; fill: var(--ink); }
svg.chart .title { font-size: 14px; font-weight: 600; }
svg.chart .label { fill: var(--muted); font-size: 12px; }
svg.chart .value, svg.chart .muted { fill: var(--muted); font-size: 11px; }
svg.meter { vertical-align: middle; }
table.data { border-collapse: collapse; margin: 8px 0 18px; font-size: 13.5px; }
table.data caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.data th, table.data td { border-bottom: 1px solid var(--line); padding: 4px 10px;
                               text-align: left; vertical-align: top; }
table.data th { background: var(--bg); font-weight: 600; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.data td.empty, table.data td.more { color: var(--muted); font-style: italic; }
.figures { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0 16px; }
.figures div { background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
               padding: 6px 14px; min-width: 140px; }
.figures b { display: block; font-size: 20px; }
.figures span { color: var(--muted); font-size: 13px; }
p.empty, p.note { background: var(--bg); border-left: 3px solid var(--line); padding: 6px 10px; }
p.advice { border-left: 3px solid #1a7f37; padding: 6px 10px; font-weight: 600; }
details { margin: 8px 0 16px; }
summary { cursor: pointer; color: var(--muted); }
footer { margin-top: 40px; color: var(--muted); font-size: 13px; }
@media print { nav.contents { display: none; } h2 { break-before: page; } }
"""


def page(
    title: str,
    *parts: Html,
    subtitle: str | None = None,
    contents: Sequence[tuple[str, str]] = (),
    footer: str | None = None,
) -> str:
    """The whole document: ``<head>`` with the CSP and styles, the title, contents, parts.

    ``contents`` is a list of (anchor, text) pairs, linked in a numbered list under the title.
    """
    toc = ""
    if contents:
        items = "".join(f'<li><a href="#{escape(a)}">{escape(t)}</a></li>' for a, t in contents)
        toc = f'<nav class="contents"><strong>Contents</strong><ol>{items}</ol></nav>'
    sub = f'<p class="subtitle">{escape(subtitle)}</p>' if subtitle else ""
    foot = f"<footer>{escape(footer)}</footer>" if footer else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f'<body><main><header class="page"><h1>{escape(title)}</h1>{sub}</header>'
        f"{toc}{''.join(parts)}{foot}</main></body></html>\n"
    )


def section(
    title: str, *parts: Html, anchor: str | None = None, intro: str | None = None, level: int = 2
) -> Html:
    """A heading (``<h2>`` by default) with an optional anchor and intro line, then parts."""
    ident = f' id="{escape(anchor)}"' if anchor else ""
    lead = f'<p class="intro">{escape(intro)}</p>' if intro else ""
    return Html(
        f"<section{ident}><h{level}>{escape(title)}</h{level}>{lead}{''.join(parts)}</section>"
    )


def figure(chart: Html, explanation: str) -> Html:
    """A chart with its one line of explanation under it."""
    return Html(f"<figure>{chart}<figcaption>{escape(explanation)}</figcaption></figure>")


def grid(*parts: Html) -> Html:
    """Parts side by side on a wide screen, stacked on a narrow one."""
    return Html(f'<div class="grid">{"".join(f"<div>{p}</div>" for p in parts)}</div>')


def key_figures(items: Sequence[tuple[str, str]]) -> Html:
    """A row of (value, what it is) boxes: the few numbers to read first."""
    boxes = "".join(f"<div><b>{escape(v)}</b><span>{escape(k)}</span></div>" for v, k in items)
    return Html(f'<div class="figures">{boxes}</div>')


def paragraph(text: str) -> Html:
    return Html(f"<p>{escape(text)}</p>")


def advice(text: str) -> Html:
    """The one sentence saying what to do (which plan to run, and why)."""
    return Html(f'<p class="advice">{escape(text)}</p>')


def note(text: str) -> Html:
    """A highlighted remark: why a chart is missing, what a number means."""
    return Html(f'<p class="note">{escape(text)}</p>')


def details(summary: str, *parts: Html) -> Html:
    """Parts folded away under a one-line summary (long tables)."""
    return Html(f"<details><summary>{escape(summary)}</summary>{''.join(parts)}</details>")


def slug(text: str) -> str:
    """An anchor name from any text: ``"Cluster a/1"`` -> ``"cluster-a-1"``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
