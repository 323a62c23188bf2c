"""The duplicate/conflict rule of :mod:`trimtab.contract.repeats`: decided by what rows hold,
never by the order they are read in."""

from __future__ import annotations

import math
import random

from hypothesis import given
from hypothesis import strategies as st

from trimtab.contract import settle_repeats
from trimtab.shedding import LoadStats

ROWS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=12)


def _verdicts(rows: list[tuple[int, int]]) -> dict[int, set[str]]:
    """Per key, the rules its rows got (the first of equal copies gets none)."""
    items = [(key, value, f"f:{i}") for i, (key, value) in enumerate(rows)]
    verdicts = settle_repeats(items, lambda key: f"key {key}")
    by_key: dict[int, set[str]] = {}
    for i, (key, _) in enumerate(rows):
        by_key.setdefault(key, set()).add(verdicts[i].rule if i in verdicts else "kept")
    return by_key


@given(ROWS, st.randoms(use_true_random=False))
def test_the_verdict_of_each_key_does_not_depend_on_row_order(
    rows: list[tuple[int, int]], rng: random.Random
) -> None:
    """Shuffling the rows changes which copy is kept, never what each key gets."""
    shuffled = list(rows)
    rng.shuffle(shuffled)
    assert _verdicts(rows) == _verdicts(shuffled)


@given(ROWS)
def test_a_key_keeps_exactly_one_row_when_its_rows_agree_and_none_when_they_differ(
    rows: list[tuple[int, int]],
) -> None:
    for key, rules in _verdicts(rows).items():
        values = {value for k, value in rows if k == key}
        assert rules <= ({"kept", "duplicate"} if len(values) == 1 else {"conflict"})
        kept = sum(1 for i, (k, _) in enumerate(rows) if k == key) if len(values) == 1 else 0
        assert ("kept" in rules) == (kept > 0)


def test_conflicting_rows_name_each_other() -> None:
    verdicts = settle_repeats([("n", 1, "a.csv:2"), ("n", 2, "b.csv:2")], lambda k: f"node {k}")
    assert [v.rule for v in verdicts.values()] == ["conflict", "conflict"]
    assert "b.csv:2" in str(verdicts[0]) and "a.csv:2" in str(verdicts[1])


def test_load_std_stays_finite_when_squares_overflow() -> None:
    """A load of 1e298 (a broken counter) gives its true std, not 0 or NaN."""
    stats = LoadStats.of([1e298, 0.5, 0.25])
    assert math.isfinite(stats.std) and math.isclose(stats.std, 1e298 * math.sqrt(2) / 3)
