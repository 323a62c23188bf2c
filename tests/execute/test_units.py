"""Rates, windows, batches and the estimate: the numbers a run is cut and timed by."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.execute.fake import reassign_plan
from trimtab.errors import TrimtabError
from trimtab.execute.batches import Limits, batches, next_batch
from trimtab.execute.estimate import estimate
from trimtab.execute.rates import format_rate, parse_rate, parse_window


@pytest.mark.parametrize(
    ("text", "rate"),
    [("50000000", 50_000_000), ("50MB/s", 50_000_000), ("64MiB/s", 64 * 1024**2),
     ("1.5GB", 1_500_000_000), ("800 KB/s", 800_000)],
)  # fmt: skip
def test_rates_take_bytes_or_units(text: str, rate: int) -> None:
    assert parse_rate("--throttle", text) == rate


@pytest.mark.parametrize("text", ["fast", "0", "-5MB/s", "2TB/s", "5 MB/h"])
def test_bad_rates_are_refused_naming_the_option(text: str) -> None:
    with pytest.raises(TrimtabError, match="--throttle"):
        parse_rate("--throttle", text)


def test_format_rate() -> None:
    assert format_rate(50_000_000) == "50.0 MB/s" and format_rate(None) == "unthrottled"


def test_a_window_over_midnight() -> None:
    window = parse_window("--window", "22:00-06:00")
    assert window.contains(datetime(2026, 1, 1, 23, 0)) and window.contains(
        datetime(2026, 1, 1, 5, 59)
    )
    assert not window.contains(datetime(2026, 1, 1, 6, 0))
    assert window.seconds_until_open(datetime(2026, 1, 1, 21, 0)) == 3600
    assert window.seconds_until_open(datetime(2026, 1, 1, 23, 0)) == 0


@pytest.mark.parametrize("text", ["22:00", "10:00-10:00", "24:00-01:00", "1:60-2:00"])
def test_bad_windows_are_refused(text: str) -> None:
    with pytest.raises(TrimtabError, match="--window"):
        parse_window("--window", text)


def test_the_worked_example_of_the_batches_module() -> None:
    """Limits 3 and 1 per node: a (1→4), b (2→5), c (3→4), d (2→6) give [a, b], [c, d]."""
    plan = reassign_plan([("a/0", [1], [4], 1), ("b/0", [2], [5], 1), ("c/0", [3], [4], 1),
                          ("d/0", [2], [6], 1)])  # fmt: skip
    cut = batches(plan.actions, Limits(3, 1))
    assert [[a.item for a in b] for b in cut] == [["a/0", "b/0"], ["c/0", "d/0"]]


@given(
    moves=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=30),
    cap=st.integers(1, 5),
    per=st.none() | st.integers(1, 3),
)
def test_batches_keep_order_and_limits(
    moves: list[tuple[int, int]], cap: int, per: int | None
) -> None:
    """Batches concatenate to the plan in order; each keeps the limits (or is one action)."""
    plan = reassign_plan([(f"t/{i}", [a], [b], 1) for i, (a, b) in enumerate(moves)])
    cut = batches(plan.actions, Limits(cap, per))
    assert [a for b in cut for a in b] == list(plan.actions)
    for batch in cut:
        assert batch and (len(batch) == 1 or len(batch) <= cap)
        if per is not None and len(batch) > 1:
            nodes = [n for a in batch for n in a.nodes]
            assert max((nodes.count(n) for n in nodes), default=0) <= per
    assert next_batch(plan.actions, Limits(cap, per)) == cut[0]


def test_the_estimate_is_the_busiest_node_per_batch_over_the_rate() -> None:
    plan = reassign_plan([("a/0", [1], [4], 100), ("b/0", [2], [4], 50)])
    assert estimate(plan.actions, Limits(2), 10).seconds == 15.0
    assert estimate(plan.actions, Limits(1), 10).seconds == 15.0
    assert estimate(plan.actions, Limits(2), None).seconds is None


def test_a_reassignment_of_unknown_size_leaves_the_estimate_unknown() -> None:
    """A plan made without partition sizes (no --log-dirs) has bytes 0: 0 s would lie."""
    plan = reassign_plan([("a/0", [1], [4], 100), ("b/0", [2], [4], 0)])
    assert estimate(plan.actions, Limits(2), 10).seconds is None
