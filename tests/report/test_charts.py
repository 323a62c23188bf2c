"""Chart primitives and the page shell: escaping, empty data, the numbers that reach the SVG."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest

from trimtab.report.bars import bar_chart
from trimtab.report.html_table import meter, table
from trimtab.report.lines import Series, line_chart
from trimtab.report.markup import Html, escape, format_number
from trimtab.report.page import CSP, details, figure, grid, key_figures, note, page, section, slug
from trimtab.report.svg import Band, Rule, nice_ticks

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    """Charts are well-formed XML as well as HTML: parse them strictly."""
    return ET.fromstring(svg)


def bars(svg: str) -> list[ET.Element]:
    return [e for e in parse(svg).iter(f"{SVG}rect") if e.get("class") == "bar"]


def tooltip(element: ET.Element) -> str:
    title = element.find(f"{SVG}title")
    assert title is not None and title.text is not None
    return title.text


class TestBarChart:
    def test_descending_sort_orders_bars_by_value(self) -> None:
        """Sorted bars go from the largest value down, each tooltip naming its label."""
        svg = bar_chart(["a", "b", "c"], [0.2, 0.9, 0.5], title="t", unit="u", sort="descending")
        tips = [tooltip(b) for b in bars(svg)]
        assert tips == ["b: 0.9", "c: 0.5", "a: 0.2"]
        widths = [float(b.get("width", "0")) for b in bars(svg)]
        assert widths == sorted(widths, reverse=True)

    def test_bar_lengths_are_proportional_to_values(self) -> None:
        """On a zero-based axis a value twice as large draws a bar twice as long."""
        svg = bar_chart(["a", "b"], [0.25, 0.5], title="t", unit="u", domain=(0.0, 1.0))
        a, b = (float(x.get("width", "0")) for x in bars(svg))
        assert b == pytest.approx(2 * a, rel=0.01)

    def test_grouped_series_draw_one_bar_each_and_a_legend(self) -> None:
        """Two series over three labels draw six bars and name both series in the legend."""
        svg = bar_chart(
            ["x", "y", "z"], {"now": [1, 2, 3], "after": [2, 2, 2]}, title="t", unit="u"
        )
        assert len(bars(svg)) == 6
        legend = " ".join(t.text or "" for t in parse(svg).iter(f"{SVG}text"))
        assert "now" in legend and "after" in legend

    def test_band_and_rule_are_drawn_and_named(self) -> None:
        """The target band is a shaded rect; it and the rule appear in the legend with values."""
        svg = bar_chart(
            ["a", "b"],
            [0.1, 0.8],
            title="t",
            unit="u",
            band=Band(0.3, 0.6, "target band"),
            rules=[Rule(0.45, "mean")],
        )
        root = parse(svg)
        assert any(r.get("class") == "band" for r in root.iter(f"{SVG}rect"))
        texts = [t.text or "" for t in root.iter(f"{SVG}text")]
        assert "target band (0.3 – 0.6)" in texts
        assert "mean (0.45)" in texts

    def test_vertical_bars_grow_upwards(self) -> None:
        """In a vertical chart the larger value's bar is taller and starts higher."""
        svg = bar_chart(["a", "b"], [1.0, 3.0], title="t", unit="u", horizontal=False)
        a, b = bars(svg)
        assert float(b.get("height", "0")) > float(a.get("height", "0"))
        assert float(b.get("y", "0")) < float(a.get("y", "0"))

    def test_text_is_escaped(self) -> None:
        """Labels, titles and units with markup characters stay text."""
        svg = bar_chart(["<script>x</script>"], [1.0], title="a & b", unit='"u"')
        assert "<script>" not in svg
        root = parse(svg)
        assert root.find(f"{SVG}title") is not None
        assert "&lt;script&gt;" in svg and "a &amp; b" in svg

    def test_empty_data_gives_a_note(self) -> None:
        """No labels: a 'no data' note with the title instead of an empty chart."""
        out = bar_chart([], [], title="Load per broker", unit="u")
        assert "no data" in out and "Load per broker" in out and "<svg" not in out

    def test_missing_values_are_marked_not_drawn(self) -> None:
        """A NaN value draws no bar and says so."""
        svg = bar_chart(["a", "b"], [math.nan, 1.0], title="t", unit="u")
        assert len(bars(svg)) == 1
        assert "no value" in svg

    def test_series_length_must_match_labels(self) -> None:
        """A series shorter than the labels is a caller error, said plainly."""
        with pytest.raises(ValueError, match="2 values for 3 labels"):
            bar_chart(["a", "b", "c"], {"s": [1, 2]}, title="t", unit="u")

    def test_numbers_reach_the_svg(self) -> None:
        """Value labels and axis ticks carry the formatted numbers."""
        svg = bar_chart(["a"], [1234.5], title="t", unit="bytes/s")
        texts = [t.text or "" for t in parse(svg).iter(f"{SVG}text")]
        assert "1,234" in texts or "1,235" in texts
        assert "bytes/s" in texts


class TestLineChart:
    def test_points_and_lines_per_series(self) -> None:
        """Each series draws a polyline and one marker per point, with exact tooltips."""
        svg = line_chart(
            [Series("std", [0, 1, 2], [0.3, 0.2, 0.1]), Series("other", [0, 1], [0.5, 0.4])],
            title="t",
            x_label="cycle",
            unit="std",
        )
        root = parse(svg)
        assert len(list(root.iter(f"{SVG}polyline"))) == 2
        circles = list(root.iter(f"{SVG}circle"))
        assert len(circles) == 5
        assert tooltip(circles[0]) == "std: 0 → 0.3"

    def test_lower_values_are_drawn_lower(self) -> None:
        """A falling series has rising y coordinates (SVG's y grows downwards)."""
        svg = line_chart([Series("s", [0, 1, 2], [3, 2, 1])], title="t", x_label="x", unit="u")
        ys = [float(c.get("cy", "0")) for c in parse(svg).iter(f"{SVG}circle")]
        assert ys == sorted(ys)

    def test_nan_breaks_the_line(self) -> None:
        """A NaN in the middle splits the series into two drawn runs."""
        svg = line_chart(
            [Series("s", [0, 1, 2, 3, 4], [1, 2, math.nan, 2, 1])], title="t", x_label="x", unit="u"
        )
        assert len(list(parse(svg).iter(f"{SVG}polyline"))) == 2

    def test_single_point_shows_a_marker(self) -> None:
        """One point: no line, one marker, and a valid axis around it."""
        svg = line_chart([Series("s", [1], [0.5])], title="t", x_label="x", unit="u")
        root = parse(svg)
        assert len(list(root.iter(f"{SVG}circle"))) == 1
        assert not list(root.iter(f"{SVG}polyline"))

    def test_empty_series_give_a_note(self) -> None:
        """No finite point at all: the 'no data' note."""
        out = line_chart([Series("s", [], [])], title="t", x_label="x", unit="u")
        assert "no data" in out


class TestTable:
    def test_numbers_right_aligned_text_escaped(self) -> None:
        """Numbers get the num class and thousands separators; text is escaped."""
        out = table(["name", "bytes"], [["<b>", 1234567]])
        assert '<td class="num">1,234,567</td>' in out
        assert "&lt;b&gt;" in out

    def test_html_cells_pass_through(self) -> None:
        """An Html cell (a meter) is inserted as markup."""
        out = table(["free"], [[meter(0.5)]])
        assert "<svg" in out

    def test_empty_and_truncated(self) -> None:
        """No rows says so; past max_rows, a last row counts what was left out."""
        assert "nothing planned" in table(["a"], [], empty="nothing planned")
        out = table(["a"], [[i] for i in range(10)], max_rows=3)
        assert out.count("<tr>") == 1 + 3 + 1
        assert "7 more rows" in out


class TestHelpers:
    @pytest.mark.parametrize(
        ("low", "high"), [(0, 1), (0, 0.037), (-5, 12), (3, 3), (0, 2.4e12), (0.2, 0.21)]
    )
    def test_ticks_cover_the_range_with_even_steps(self, low: float, high: float) -> None:
        """Ticks start at or below low, end at or above high, and are evenly spaced."""
        ticks = nice_ticks(low, high)
        assert ticks[0] <= low and ticks[-1] >= high
        steps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
        assert len(steps) == 1

    @pytest.mark.parametrize(("low", "high"), [(-1e308, 1e308), (-1.7e308, 5.0)])
    def test_ticks_of_a_range_wider_than_a_float_cover_it_without_overflow(
        self, low: float, high: float
    ) -> None:
        """A range near the float limit of both signs (a broken counter) still gets ticks."""
        ticks = nice_ticks(low, high)
        assert ticks[0] <= low and ticks[-1] >= high and ticks == sorted(ticks)

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (0, "0"),
            (0.25, "0.25"),
            (1250, "1,250"),
            (3, "3"),
            (0.0000321, "3.2e-05"),
            (math.nan, "–"),
        ],
    )
    def test_format_number(self, value: float, text: str) -> None:
        """Short human numbers."""
        assert format_number(value) == text

    def test_escape_keeps_html(self) -> None:
        """Html passes through escape unchanged, plain text does not."""
        assert escape(Html("<b>")) == "<b>"
        assert escape("<b>") == "&lt;b&gt;"


class TestPage:
    def test_document_is_self_contained(self) -> None:
        """One document with a CSP that forbids fetches, inline styles and no script or link."""
        doc = page("Fleet <report>", section("A", note("n"), anchor="a"), contents=[("a", "A")])
        assert doc.startswith("<!DOCTYPE html>")
        assert CSP in doc and "default-src 'none'" in CSP
        assert "<style>" in doc
        assert not re.search(r"<script|<link|src=|@import|url\(", doc)
        assert "<title>Fleet &lt;report&gt;</title>" in doc
        assert '<a href="#a">A</a>' in doc

    def test_parts_are_escaped_unless_html(self) -> None:
        """Captions, intros and figure texts are text; charts are markup."""
        chart = bar_chart(["a"], [1.0], title="t", unit="u")
        out = section(
            "S & T",
            figure(chart, "why <this>"),
            grid(key_figures([("3", "clusters")])),
            details("more <rows>", Html("<p>x</p>")),
            intro="i < j",
        )
        assert "S &amp; T" in out and "why &lt;this&gt;" in out and "i &lt; j" in out
        assert "more &lt;rows&gt;" in out and "<p>x</p>" in out and "<svg" in out

    def test_slug(self) -> None:
        """Anchors are lowercase words joined by dashes."""
        assert slug("Cluster a/1") == "cluster-a-1"
        assert slug("///") == "section"
