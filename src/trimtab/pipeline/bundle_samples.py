"""The stream's newest sample per (bundle, broker), kept as columns.

Why columns: a 1,000-broker cluster has about 100,000 bundles, and the stream takes a sample
of each, keeps the table in Spark's state store and decides on it every trigger. As NumPy
arrays with a key index, a trigger's rows go in with a few vector steps, per row only where a
key repeats within the trigger; the state store keeps the table as one compressed Arrow IPC
stream (a tenth of its size as JSON, read back in milliseconds).

The rules are the batch job's for repeated rows of one (bundle, broker) (see
:meth:`BundleSamples.absorb`): a newer sample replaces the kept one, an older one is accepted
and changes nothing, and a second row at the kept sample's time is a ``duplicate`` when equal
and a ``conflict`` when not, which also marks the kept one so that no later decision uses it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from trimtab.shedding import BundleLoads

__all__ = ["BUNDLE_VALUES", "RATES", "BundleSamples", "Outcome"]

#: A bundle sample's rates, in the state's column order (the names of ``bundle_metrics``).
RATES = (
    "throughput_in_bytes_per_s",
    "throughput_out_bytes_per_s",
    "msg_in_per_s",
    "msg_out_per_s",
)
#: The values a bundle sample is compared by (a repeat is a duplicate when they are equal).
BUNDLE_VALUES = (*RATES, "storage_bytes")


class Outcome(IntEnum):
    """What became of one row given to :meth:`BundleSamples.absorb`."""

    NEWEST = 0  # kept: the newest sample of its (bundle, broker)
    OLDER = 1  # accepted, changes nothing: older than the kept sample
    DUPLICATE = 2  # refused: equal to the kept sample at the same time
    CONFLICT = 3  # refused, and the kept sample at the same time with it


_ARROW = pa.schema(
    [
        ("bundle", pa.string()),
        ("broker", pa.dictionary(pa.int32(), pa.string())),
        ("ts_us", pa.int64()),
        *((name, pa.float64()) for name in RATES),
        ("storage_bytes", pa.float64()),
        ("source", pa.dictionary(pa.int32(), pa.string())),
        ("conflict", pa.bool_()),
    ]
)


class BundleSamples:
    """Per (bundle, broker) its newest sample: time, rates, stored bytes, source file and
    whether a conflicting row refused it. Rows are kept in arrival order; ``_at`` finds them."""

    __slots__ = ("_at", "broker", "bundle", "conflict", "rates", "source", "storage", "ts_us")

    def __init__(
        self,
        bundle: Sequence[str] | np.ndarray = (),
        broker: Sequence[str] | np.ndarray = (),
        ts_us: Sequence[int] | np.ndarray = (),
        rates: Sequence[Sequence[float]] | np.ndarray = (),
        storage: Sequence[float | None] | np.ndarray = (),
        source: Sequence[str | None] | np.ndarray = (),
        conflict: Sequence[bool] | np.ndarray = (),
    ) -> None:
        # copies: arrays read from Arrow are read-only, and absorb writes in place
        self.bundle = np.array(bundle, dtype=object)
        self.broker = np.array(broker, dtype=object)
        self.ts_us = np.array(ts_us, dtype=np.int64)
        self.rates = np.array(rates, dtype=np.float64).reshape(len(self.bundle), len(RATES))
        listed = not isinstance(storage, np.ndarray)  # a list may say None for missing
        self.storage = np.array(
            [np.nan if s is None else s for s in storage] if listed else storage,
            dtype=np.float64,
        )
        self.source = np.array(source, dtype=object)
        self.conflict = np.array(conflict, dtype=np.bool_)
        n = len(self.bundle)
        columns = (self.broker, self.ts_us, self.storage, self.source, self.conflict)
        if any(len(c) != n for c in columns):
            raise ValueError(f"bundle samples: columns of unequal length (bundle has {n})")
        self._at = _index(self.bundle, self.broker)
        if len(self._at) != n:
            raise ValueError("bundle samples: a (bundle, broker) appears twice")

    def __len__(self) -> int:
        return len(self.bundle)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BundleSamples):
            return NotImplemented
        return (
            self.bundle.tolist() == other.bundle.tolist()
            and self.broker.tolist() == other.broker.tolist()
            and np.array_equal(self.ts_us, other.ts_us)
            and np.array_equal(self.rates, other.rates, equal_nan=True)
            and np.array_equal(self.storage, other.storage, equal_nan=True)
            and self.source.tolist() == other.source.tolist()
            and np.array_equal(self.conflict, other.conflict)
        )

    def __repr__(self) -> str:
        return f"BundleSamples({len(self)} samples, {int(self.conflict.sum())} refused)"

    # -- rows in ------------------------------------------------------------------------------
    def absorb(self, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Take checked ``bundle_metrics`` rows in their order (columns ``bundle``,
        ``broker``, ``ts_us``, the rates, ``storage_bytes``, ``_source_file``): each row's
        :class:`Outcome`, and for a refused one the source file of the sample it repeats.

        Rows are taken in rounds, the k-th row of each key in round k, so each round is one
        vector step over distinct keys and a key's rows still go in their order."""
        n = len(rows)
        outcome = np.zeros(n, dtype=np.int8)
        seen_source = np.full(n, None, dtype=object)
        if n == 0:
            return outcome, seen_source
        bundle = rows["bundle"].to_numpy(dtype=object)
        broker = rows["broker"].to_numpy(dtype=object)
        ts = rows["ts_us"].to_numpy(dtype=np.int64)
        rates = np.column_stack([rows[r].to_numpy(dtype=np.float64) for r in RATES])
        storage = rows["storage_bytes"].to_numpy(dtype=np.float64, na_value=np.nan)
        source = rows["_source_file"].to_numpy(dtype=object)
        keys = pd.DataFrame({"bundle": bundle, "broker": broker})
        rounds = keys.groupby(["bundle", "broker"], sort=False).cumcount().to_numpy()
        for k in range(int(rounds.max()) + 1):
            part = np.flatnonzero(rounds == k)
            at = np.fromiter(
                (self._at.get(key, -1) for key in zip(bundle[part], broker[part], strict=True)),
                np.intp,
                len(part),
            )
            known = at >= 0
            kept_ts = np.full(len(part), np.iinfo(np.int64).min)
            kept_ts[known] = self.ts_us[at[known]]
            newer = ~known | (ts[part] > kept_ts)
            same_time = known & (ts[part] == kept_ts)
            outcome[part[known & (ts[part] < kept_ts)]] = Outcome.OLDER
            if same_time.any():
                rows_, kept = part[same_time], at[same_time]
                equal = (
                    np.all(rates[rows_] == self.rates[kept], axis=1)
                    & _same(storage[rows_], self.storage[kept])
                    & ~self.conflict[kept]
                )
                outcome[rows_] = np.where(equal, Outcome.DUPLICATE, Outcome.CONFLICT)
                seen_source[rows_] = self.source[kept]
                self.conflict[kept[~equal]] = True
            take = part[newer]
            self._put(
                at[newer],
                bundle[take],
                broker[take],
                ts[take],
                rates[take],
                storage[take],
                source[take],
            )
        return outcome, seen_source

    def _put(
        self,
        at: np.ndarray,
        bundle: np.ndarray,
        broker: np.ndarray,
        ts: np.ndarray,
        rates: np.ndarray,
        storage: np.ndarray,
        source: np.ndarray,
    ) -> None:
        """Samples that become their key's newest: kept keys in place, new keys appended."""
        old = at >= 0
        slots = at[old]
        self.ts_us[slots] = ts[old]
        self.rates[slots] = rates[old]
        self.storage[slots] = storage[old]
        self.source[slots] = source[old]
        self.conflict[slots] = False
        new = ~old
        if not new.any():
            return
        start = len(self.bundle)
        added = zip(bundle[new], broker[new], strict=True)
        self._at.update(zip(added, range(start, start + int(new.sum())), strict=True))
        self.bundle = np.concatenate([self.bundle, bundle[new]])
        self.broker = np.concatenate([self.broker, broker[new]])
        self.ts_us = np.concatenate([self.ts_us, ts[new]])
        self.rates = np.concatenate([self.rates, rates[new]])
        self.storage = np.concatenate([self.storage, storage[new]])
        self.source = np.concatenate([self.source, source[new]])
        self.conflict = np.concatenate([self.conflict, np.zeros(int(new.sum()), dtype=np.bool_)])

    # -- the shedder's view -------------------------------------------------------------------
    def newest(self) -> tuple[BundleLoads, np.ndarray]:
        """Per bundle its newest sample not refused (ties: the first broker by name), bundles
        by name, as the batch job plans; and each one's time in seconds."""
        kept = np.flatnonzero(~self.conflict)
        frame = pd.DataFrame(
            {"bundle": self.bundle[kept], "ts": self.ts_us[kept], "broker": self.broker[kept]}
        )
        frame["at"] = kept
        frame = frame.sort_values(
            ["bundle", "ts", "broker"], ascending=[True, False, True], kind="stable"
        ).drop_duplicates("bundle")
        picked = frame["at"].to_numpy()
        table = BundleLoads.from_arrays(
            frame["bundle"].tolist(),
            frame["broker"].tolist(),
            throughput_in=self.rates[picked, 0],
            throughput_out=self.rates[picked, 1],
            msg_rate_in=self.rates[picked, 2],
            msg_rate_out=self.rates[picked, 3],
        )
        return table, self.ts_us[picked] / 1e6

    def forget(self, before_us: int) -> int:
        """Drop the samples older than ``before_us``; how many. The stream calls it with the
        load data TTL behind the cluster's newest sample: the shedder no longer sees such a
        sample (:func:`~trimtab.shedding.telemetry.snapshot_of`), so a bundle that moved,
        split or was deleted does not stay in the state for the stream's whole life."""
        old = self.ts_us < before_us
        if not old.any():
            return 0
        kept = np.flatnonzero(~old)
        self.bundle, self.broker = self.bundle[kept], self.broker[kept]
        self.ts_us, self.rates = self.ts_us[kept], self.rates[kept]
        self.storage, self.source = self.storage[kept], self.source[kept]
        self.conflict = self.conflict[kept]
        self._at = _index(self.bundle, self.broker)
        return int(old.sum())

    # -- the state store's form ---------------------------------------------------------------
    def encode(self) -> str:
        """The table as text: a zstd-compressed Arrow IPC stream in base64."""
        table = pa.table(
            [
                pa.array(self.bundle, pa.string()),
                pa.array(self.broker, pa.string()).dictionary_encode(),
                pa.array(self.ts_us),
                *(pa.array(self.rates[:, i]) for i in range(len(RATES))),
                pa.array(self.storage),
                pa.array(self.source, pa.string()).dictionary_encode(),
                pa.array(self.conflict),
            ],
            schema=_ARROW,
        )
        sink = pa.BufferOutputStream()
        options = pa.ipc.IpcWriteOptions(compression="zstd")
        with pa.ipc.new_stream(sink, _ARROW, options=options) as writer:
            writer.write_table(table)
        return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")

    @classmethod
    def decode(cls, text: str) -> BundleSamples:
        table = pa.ipc.open_stream(base64.b64decode(text)).read_all()

        def column(name: str) -> np.ndarray:
            data = table.column(name)
            if pa.types.is_dictionary(data.type):  # decoded first: nulls stay nulls
                data = data.cast(data.type.value_type)
            values: np.ndarray = data.to_numpy(zero_copy_only=False)
            return values

        return cls(
            bundle=column("bundle"),
            broker=column("broker"),
            ts_us=column("ts_us"),
            rates=np.column_stack([column(r) for r in RATES]),
            storage=column("storage_bytes"),
            source=column("source"),
            conflict=column("conflict"),
        )

    @classmethod
    def of_slots(cls, slots: Mapping[str, Sequence[Any]]) -> BundleSamples:
        """The earlier state form (a checkpoint written before this table): per
        ``"bundle|broker"`` the list ``[ts_us, *RATES, storage_bytes, source, conflict]``."""
        keys = [key.partition("|") for key in slots]
        values = list(slots.values())
        return cls(
            bundle=[k[0] for k in keys],
            broker=[k[2] for k in keys],
            ts_us=[int(v[0]) for v in values],
            rates=[[float(x) for x in v[1 : 1 + len(RATES)]] for v in values],
            storage=[v[1 + len(RATES)] for v in values],
            source=[v[2 + len(RATES)] for v in values],
            conflict=[bool(v[3 + len(RATES)]) for v in values],
        )


def _index(bundle: np.ndarray, broker: np.ndarray) -> dict[tuple[str, str], int]:
    """Each (bundle, broker)'s row (a key twice keeps its last: the caller checks the size)."""
    return dict(zip(zip(bundle, broker, strict=True), range(len(bundle)), strict=True))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal values, a missing one equal only to a missing one."""
    same: np.ndarray = (a == b) | (np.isnan(a) & np.isnan(b))
    return same
