"""The stream's bundle samples as columns: the same outcomes as the row-by-row rules."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trimtab.pipeline.bundle_samples import RATES, BundleSamples, Outcome


@dataclass(frozen=True)
class Kept:
    ts: int
    values: tuple[Any, ...]  # the rates, then storage (None when missing)
    source: str | None
    conflict: bool = False


def by_rows(kept: dict[tuple[str, str], Kept], rows: list[dict[str, Any]]) -> list[Any]:
    """The rules one row at a time, as the batch job states them: newer replaces, older
    changes nothing, the same time is a duplicate when equal (and the kept one not refused)
    and a conflict otherwise, which refuses the kept one too."""
    out: list[Any] = []
    for row in rows:
        key = (row["bundle"], row["broker"])
        values = (*(row[r] for r in RATES), row["storage_bytes"])
        seen = kept.get(key)
        if seen is None or row["ts_us"] > seen.ts:
            kept[key] = Kept(row["ts_us"], values, row["_source_file"])
            out.append((Outcome.NEWEST, None))
        elif row["ts_us"] < seen.ts:
            out.append((Outcome.OLDER, None))
        elif values == seen.values and not seen.conflict:
            out.append((Outcome.DUPLICATE, seen.source))
        else:
            kept[key] = replace(seen, conflict=True)
            out.append((Outcome.CONFLICT, seen.source))
    return out


def as_kept(samples: BundleSamples) -> dict[tuple[str, str], Kept]:
    return {
        (b, k): Kept(
            int(samples.ts_us[i]),
            (*samples.rates[i].tolist(), None if math.isnan(s) else s),
            samples.source[i],
            bool(samples.conflict[i]),
        )
        for i, (b, k, s) in enumerate(
            zip(samples.bundle, samples.broker, samples.storage, strict=True)
        )
    }


rows_ = st.lists(
    st.fixed_dictionaries(
        {
            "bundle": st.sampled_from(["t/n/0x0_0x8", "t/n/0x8_0xf", "t/m/0x0_0xf"]),
            "broker": st.sampled_from(["b1:8080", "b2:8080"]),
            "ts_us": st.sampled_from([0, 60_000_000, 120_000_000]),
            **{r: st.sampled_from([0.0, 1.5]) for r in RATES},
            "storage_bytes": st.sampled_from([None, 4096.0]),
            "_source_file": st.sampled_from(["m1.parquet", "m2.parquet"]),
        }
    ),
    max_size=24,
)


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(rows_, min_size=1, max_size=3))
def test_absorb_gives_the_row_by_row_outcomes_and_state(
    batches: list[list[dict[str, Any]]],
) -> None:
    """Over several triggers, each with keys repeated within it: every row's outcome, the
    source a refused row names, and the kept samples are those of the rules taken row by row;
    the state's encoded form reads back equal."""
    samples = BundleSamples()
    kept: dict[tuple[str, str], Kept] = {}
    for rows in batches:
        frame = pd.DataFrame(rows, columns=["bundle", "broker", "ts_us", *RATES])
        frame["storage_bytes"] = pd.array([r["storage_bytes"] for r in rows], dtype="Float64")
        frame["_source_file"] = [r["_source_file"] for r in rows]
        outcome, seen = samples.absorb(frame)
        assert list(zip(outcome.tolist(), seen.tolist(), strict=True)) == by_rows(kept, rows)
        assert as_kept(samples) == kept
        samples = BundleSamples.decode(samples.encode())
        assert as_kept(samples) == kept


@settings(max_examples=200, deadline=None)
@given(rows=rows_)
def test_newest_is_each_bundles_newest_kept_sample_first_broker_on_ties(
    rows: list[dict[str, Any]],
) -> None:
    samples = BundleSamples()
    frame = pd.DataFrame(rows, columns=["bundle", "broker", "ts_us", *RATES, "_source_file"])
    frame["storage_bytes"] = np.nan
    samples.absorb(frame)
    best: dict[str, tuple[int, str, Kept]] = {}
    for (bundle, broker), k in sorted(as_kept(samples).items()):
        if k.conflict:
            continue
        if bundle not in best or k.ts > best[bundle][0]:
            best[bundle] = (k.ts, broker, k)
    table, times = samples.newest()
    assert list(table.names) == sorted(best)
    assert [table.owners[i] for i in table.owner] == [best[b][1] for b in sorted(best)]
    assert table.throughput_in.tolist() == [best[b][2].values[0] for b in sorted(best)]
    assert table.msg_rate_out.tolist() == [best[b][2].values[3] for b in sorted(best)]
    assert times.tolist() == [best[b][0] / 1e6 for b in sorted(best)]


@settings(max_examples=200, deadline=None)
@given(
    batches=st.lists(
        st.tuples(rows_, st.sampled_from([0, 60_000_001, 120_000_000, 120_000_001])),
        min_size=1,
        max_size=4,
    )
)
def test_forgotten_samples_are_gone_and_the_rest_keep_their_rules(
    batches: list[tuple[list[dict[str, Any]], int]],
) -> None:
    """After each trigger, the samples older than a cutoff are forgotten (the stream's load
    data TTL): the rules then apply to what is left, a forgotten key being new again."""
    samples = BundleSamples()
    kept: dict[tuple[str, str], Kept] = {}
    for rows, cutoff in batches:
        frame = pd.DataFrame(rows, columns=["bundle", "broker", "ts_us", *RATES])
        frame["storage_bytes"] = pd.array([r["storage_bytes"] for r in rows], dtype="Float64")
        frame["_source_file"] = [r["_source_file"] for r in rows]
        outcome, seen = samples.absorb(frame)
        assert list(zip(outcome.tolist(), seen.tolist(), strict=True)) == by_rows(kept, rows)
        old = {key for key, k in kept.items() if k.ts < cutoff}
        assert samples.forget(cutoff) == len(old)
        kept = {key: k for key, k in kept.items() if key not in old}
        assert as_kept(samples) == kept
        assert BundleSamples.decode(samples.encode()) == samples


def test_a_key_twice_in_the_table_is_refused() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        BundleSamples(
            bundle=["a", "a"],
            broker=["x", "x"],
            ts_us=[0, 1],
            rates=[[0.0] * 4] * 2,
            storage=[None, None],
            source=[None, None],
            conflict=[False, False],
        )
