"""The immutable input of a shedding cycle: broker load data, bundles, and the registry.

Bundles are stored by column (NumPy arrays) because a cluster can hold 100,000 of them; the
owner column is categorical (an index into ``owners``), so grouping bundles by broker costs
one radix sort per cycle. Arrays are made read-only on construction.

:class:`BundleIndex` is the per-cycle view the shedders share: a broker's bundles, and its
*top-K* report the way Pulsar's ``TopKBundles`` builds it (the K largest, compared by
throughput in, then out, then message rate, and listed smallest first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from trimtab.shedding.load import BrokerLoad

if TYPE_CHECKING:
    from trimtab.shedding.filters import Policies, PolicyView

__all__ = ["Bundle", "BundleIndex", "BundleLoads", "LoadSnapshot", "namespace_of"]

#: ``NamespaceBundleStats``: throughputs within 100 KB/s and rates within 100 msg/s compare equal.
THROUGHPUT_STEP = 1e5
RATE_STEP = 100.0

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


def namespace_of(bundle: str) -> str:
    """``'tenant/ns/0x00000000_0x40000000'`` -> ``'tenant/ns'``."""
    return bundle.rsplit("/", 1)[0] if "/" in bundle else bundle


@dataclass(frozen=True, slots=True, kw_only=True)
class Bundle:
    """One bundle, row-wise: for small inputs and tests (see :meth:`BundleLoads.of`)."""

    name: str
    broker: str
    throughput_in: float = 0.0
    throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    pinned: bool = False  # under an isolation or anti-affinity policy


A = TypeVar("A", bound=np.ndarray[Any, Any])


def _readonly(array: A, n: int, name: str) -> A:
    if array.shape != (n,):
        raise ValueError(f"{name} has shape {array.shape}, expected ({n},)")
    array.flags.writeable = False
    return array


def _joined_codes(codes: Sequence[IntArray]) -> IntArray:
    return np.concatenate(codes) if codes else np.zeros(0, np.intp)


def _floats(values: ArrayLike, n: int, name: str) -> FloatArray:
    return _readonly(np.array(values, dtype=np.float64, copy=True), n, name)


@dataclass(frozen=True, slots=True, eq=False)
class BundleLoads:
    """Every bundle of one cluster: name, owning broker and short-term rates, by column."""

    names: tuple[str, ...]
    owners: tuple[str, ...]
    owner: IntArray
    throughput_in: FloatArray
    throughput_out: FloatArray
    msg_rate_in: FloatArray
    msg_rate_out: FloatArray
    pinned: NDArray[np.bool_]

    @classmethod
    def from_arrays(
        cls,
        names: Sequence[str],
        brokers: Sequence[str],
        *,
        throughput_in: ArrayLike,
        throughput_out: ArrayLike,
        msg_rate_in: ArrayLike | None = None,
        msg_rate_out: ArrayLike | None = None,
        pinned: ArrayLike | None = None,
    ) -> BundleLoads:
        """Build from plain columns (lists or arrays, e.g. pandas ``.to_numpy()``)."""
        n = len(names)
        if len(brokers) != n:
            raise ValueError(f"{len(brokers)} owners for {n} bundles")
        vocab: dict[str, int] = {}
        codes = np.fromiter((vocab.setdefault(str(b), len(vocab)) for b in brokers), np.intp, n)
        zeros = np.zeros(n)
        return cls(
            names=tuple(str(x) for x in names),
            owners=tuple(vocab),
            owner=_readonly(codes, n, "owner"),
            throughput_in=_floats(throughput_in, n, "throughput_in"),
            throughput_out=_floats(throughput_out, n, "throughput_out"),
            msg_rate_in=_floats(zeros if msg_rate_in is None else msg_rate_in, n, "msg_rate_in"),
            msg_rate_out=_floats(
                zeros if msg_rate_out is None else msg_rate_out, n, "msg_rate_out"
            ),
            pinned=_readonly(
                np.array(zeros if pinned is None else pinned, dtype=np.bool_), n, "pinned"
            ),
        )

    @classmethod
    def of(cls, bundles: Iterable[Bundle]) -> BundleLoads:
        rows = list(bundles)
        return cls.from_arrays(
            [b.name for b in rows],
            [b.broker for b in rows],
            throughput_in=[b.throughput_in for b in rows],
            throughput_out=[b.throughput_out for b in rows],
            msg_rate_in=[b.msg_rate_in for b in rows],
            msg_rate_out=[b.msg_rate_out for b in rows],
            pinned=[b.pinned for b in rows],
        )

    @classmethod
    def concat(cls, tables: Sequence[BundleLoads]) -> BundleLoads:
        """The tables one after the other (a live loop keeps one small table per broker and
        joins them each cycle: no per-bundle Python work)."""
        vocab: dict[str, int] = {}

        def recoded(t: BundleLoads) -> IntArray:
            if len(t.owners) == 1:  # a broker's own table: one owner, no lookup per bundle
                return np.full(len(t), vocab.setdefault(t.owners[0], len(vocab)), np.intp)
            return np.array([vocab.setdefault(o, len(vocab)) for o in t.owners], np.intp)[t.owner]

        codes = [recoded(t) for t in tables if len(t)]
        n = sum(len(t) for t in tables)

        def joined(column: str, dtype: Any) -> Any:
            parts = [getattr(t, column) for t in tables if len(t)]
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        return cls(
            names=tuple(chain.from_iterable(t.names for t in tables)),
            owners=tuple(vocab),
            owner=_readonly(_joined_codes(codes), n, "owner"),
            throughput_in=_readonly(joined("throughput_in", np.float64), n, "throughput_in"),
            throughput_out=_readonly(joined("throughput_out", np.float64), n, "throughput_out"),
            msg_rate_in=_readonly(joined("msg_rate_in", np.float64), n, "msg_rate_in"),
            msg_rate_out=_readonly(joined("msg_rate_out", np.float64), n, "msg_rate_out"),
            pinned=_readonly(joined("pinned", np.bool_), n, "pinned"),
        )

    def __len__(self) -> int:
        return len(self.names)

    @property
    def throughput(self) -> FloatArray:
        return self.throughput_in + self.throughput_out

    @property
    def msg_rate(self) -> FloatArray:
        return self.msg_rate_in + self.msg_rate_out

    def broker_of(self, i: int) -> str:
        return self.owners[int(self.owner[i])]

    def take(self, rows: IntArray) -> BundleLoads:
        """The bundles at ``rows`` (positions, in that order), owners recoded to those left."""
        used, codes = np.unique(self.owner[rows], return_inverse=True)
        n = len(rows)
        return BundleLoads(
            names=tuple(self.names[i] for i in rows.tolist()),
            owners=tuple(self.owners[i] for i in used.tolist()),
            owner=_readonly(codes.astype(np.intp).reshape(n), n, "owner"),
            throughput_in=_readonly(self.throughput_in[rows], n, "throughput_in"),
            throughput_out=_readonly(self.throughput_out[rows], n, "throughput_out"),
            msg_rate_in=_readonly(self.msg_rate_in[rows], n, "msg_rate_in"),
            msg_rate_out=_readonly(self.msg_rate_out[rows], n, "msg_rate_out"),
            pinned=_readonly(self.pinned[rows], n, "pinned"),
        )

    def moved(self, destinations: Mapping[int, str]) -> BundleLoads:
        """A copy in which bundle ``i`` belongs to ``destinations[i]``."""
        if not destinations:
            return self
        owners = list(self.owners)
        vocab = {b: k for k, b in enumerate(owners)}
        codes = np.array(self.owner, copy=True)
        for i, broker in destinations.items():
            if broker not in vocab:
                vocab[broker] = len(owners)
                owners.append(broker)
            codes[i] = vocab[broker]
        codes.flags.writeable = False
        return BundleLoads(
            names=self.names,
            owners=tuple(owners),
            owner=codes,
            throughput_in=self.throughput_in,
            throughput_out=self.throughput_out,
            msg_rate_in=self.msg_rate_in,
            msg_rate_out=self.msg_rate_out,
            pinned=self.pinned,
        )


def _no_loads() -> Mapping[str, BrokerLoad]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, eq=False)
class LoadSnapshot:
    """What a cycle sees: the brokers the registry lists, their load data, their bundles.

    ``available`` is None when the registry could not be read (upstream: Failure/Unknown).
    A broker in ``available`` without an entry in ``loads`` has not reported yet.
    ``policies`` (isolation, anti-affinity: :mod:`~trimtab.shedding.filters`) limit where a
    bundle may go; None means no namespace has a policy.
    """

    bundles: BundleLoads
    loads: Mapping[str, BrokerLoad] = field(default_factory=_no_loads)
    available: frozenset[str] | None = frozenset()
    policies: Policies | None = None

    @classmethod
    def of(
        cls,
        loads: Iterable[BrokerLoad],
        bundles: BundleLoads | Iterable[Bundle],
        *,
        available: Iterable[str] | None = (),
        policies: Policies | None = None,
    ) -> LoadSnapshot:
        """``available=()`` (the default) means every broker that has load data."""
        by_broker = {load.broker: load for load in loads}
        table = bundles if isinstance(bundles, BundleLoads) else BundleLoads.of(bundles)
        listed = frozenset(by_broker) if available == () else available
        return cls(
            bundles=table,
            loads=MappingProxyType(by_broker),
            available=None if listed is None else frozenset(listed),
            policies=policies,
        )


@dataclass(frozen=True, slots=True, eq=False)
class BundleIndex:
    """Bundles grouped by broker for one cycle (brokers are positions in ``brokers``)."""

    bundles: BundleLoads
    brokers: tuple[str, ...]
    order: IntArray
    bounds: IntArray
    position: IntArray  # per bundle: its owner's position in ``brokers``, or -1
    throughput: FloatArray  # per bundle, in + out (computed once per cycle)
    rate: FloatArray  # per bundle, messages in + out
    policies: PolicyView | None = None

    @classmethod
    def build(
        cls, bundles: BundleLoads, brokers: Sequence[str], policies: Policies | None = None
    ) -> BundleIndex:
        where = {b: i for i, b in enumerate(brokers)}
        code_to_pos = np.array([where.get(o, -1) for o in bundles.owners], dtype=np.intp)
        position = code_to_pos[bundles.owner] if len(bundles) else np.zeros(0, np.intp)
        # Radix sort on a narrow key: shift by one so -1 (unknown owner) sorts first.
        key = (position + 1).astype(np.uint16 if len(brokers) < 65535 else np.int64)
        order = np.argsort(key, kind="stable")
        bounds = np.searchsorted(key[order], np.arange(len(brokers) + 2)).astype(np.intp)
        view = None
        if policies is not None:
            view = policies.bind(bundles.names, [bundles.owners[o] for o in bundles.owner.tolist()])
        return cls(
            bundles,
            tuple(brokers),
            order,
            bounds,
            position,
            bundles.throughput,
            bundles.msg_rate,
            view,
        )

    def of(self, broker: int) -> IntArray:
        """Indices of the bundles broker ``broker`` (a position) owns, in input order."""
        return self.order[self.bounds[broker + 1] : self.bounds[broker + 2]]

    def count(self, broker: int) -> int:
        return int(self.bounds[broker + 2] - self.bounds[broker + 1])

    def top_k(
        self, broker: int, k: int, reportable: Callable[[int], bool] | None = None
    ) -> IntArray:
        """The broker's top-K report: its K largest ``reportable`` bundles, smallest first.

        Upstream's ``TopKBundles`` leaves system, excluded and (unless allowed) policy bundles
        out *before* taking the K largest, and ``NamespaceBundleStats.compareTo`` calls rates
        within 100 KB/s (throughput) or 100 msg/s equal: the keys are floored to those steps,
        compared throughput in, then out, then message rate; exact values break the ties.
        """
        mine = self.of(broker)
        if len(mine) == 0 or k <= 0:
            return mine[:0]
        b = self.bundles
        t_in, t_out, rate = b.throughput_in[mine], b.throughput_out[mine], self.rate[mine]
        rounded = (np.floor(t_out / THROUGHPUT_STEP), np.floor(t_in / THROUGHPUT_STEP))
        ranked: IntArray = mine[
            np.lexsort((rate, t_out, t_in, np.floor(rate / RATE_STEP), *rounded))
        ]
        if reportable is None:
            return ranked[-k:]
        # largest first until K pass the filters: the predicate sees few bundles per broker
        kept: list[int] = []
        for i in reversed(ranked.tolist()):
            if reportable(i):
                kept.append(i)
                if len(kept) == k:
                    break
        return np.array(kept[::-1], dtype=np.intp)

    def largest_first(self, broker: int, by: FloatArray) -> IntArray:
        """All of the broker's bundles, largest ``by`` first (ties by input order)."""
        mine = self.of(broker)
        return mine[np.argsort(-by[mine], kind="stable")]
