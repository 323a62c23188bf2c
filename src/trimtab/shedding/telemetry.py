"""From validated telemetry to a shedding snapshot: one path for ``trimtab shed`` and the pipeline.

Goals
    A cluster's :class:`LoadSnapshot` is built in one place, :func:`snapshot_of`, from plain
    values that the caller has already validated: per broker its limits, whether it is down and
    its samples *folded*; per bundle its newest sample. ``trimtab shed`` folds each broker's
    rows one by one (:func:`fold`, :meth:`LoadModel.fold`); the Spark pipeline folds every
    sample column-wise (:func:`fold_columns`, tested equal) and hands over each broker's newest
    sample with the moving averages through it, never a loop of its own.

Constraints
    * Spark-free and pure: no clock, no I/O.
    * A broker's load data is the engine's after its last sample: usages, rates and
      ``updated_at`` from that sample, the moving averages and sample count through it.
    * The reference limits for ``absolute`` load are the largest of the brokers given (the fold
      must have used the same ones).
    * ``now`` is the newest sample time given: no wall clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from trimtab._format import plural
from trimtab.cluster import ClusterState, NodeId, NodeState
from trimtab.contract import RejectedRow
from trimtab.shedding.load import BrokerLoad, Limits, LoadModel, NodeSample
from trimtab.shedding.snapshot import Bundle, BundleLoads, LoadSnapshot

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "BrokerTelemetry",
    "Built",
    "BundleRow",
    "Folded",
    "NodeRow",
    "broker_telemetry",
    "build_snapshot",
    "ema_by_group",
    "fold",
    "fold_columns",
    "left_out_sentence",
    "snapshot_of",
]


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One accepted ``node_metrics`` row: a broker's sample, and its cluster."""

    cluster: str
    node: NodeId
    sample: NodeSample


@dataclass(frozen=True, slots=True)
class BundleRow:
    """One accepted ``bundle_metrics`` row: a bundle's sample at ``ts``, and its cluster."""

    cluster: str
    ts: float
    bundle: Bundle


@dataclass(frozen=True, slots=True, kw_only=True)
class Folded:
    """A broker's samples after the engine's fold: the newest one, and the moving averages
    and sample count through it. That is all a snapshot needs of the history."""

    last: NodeSample
    weighted_max_ema: float
    msg_throughput_ema: float
    samples: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerTelemetry:
    """One broker of a cluster, validated: limits, state, and its samples folded (None: it has
    not reported)."""

    node: str
    limits: Limits
    writable: bool = True  # only writable brokers take bundles; down or read-only ones shed
    folded: Folded | None = None


@dataclass(frozen=True, slots=True)
class Built:
    """A cluster's snapshot, its time, the rows refused while building it, and each broker's
    fold (what a live loop hands the next build as ``previous``)."""

    snapshot: LoadSnapshot
    now: float
    limits: Mapping[str, Limits]
    rejected: tuple[RejectedRow, ...] = ()
    folded: Mapping[str, Folded] = field(default_factory=dict)
    left_out: tuple[str, ...] = ()  # bundles whose newest sample is stale (see snapshot_of)


def fold(
    model: LoadModel,
    samples: Iterable[NodeSample],
    limits: Limits,
    reference: Limits | None,
    previous: Folded | None = None,
) -> Folded | None:
    """:meth:`LoadModel.fold` over ``samples`` (any order), kept as :class:`Folded`. With
    ``previous`` (a live loop's last fold of this broker) the history goes on from it: only
    samples newer than its last one are folded in, so a report read twice counts once."""
    ordered = sorted(samples, key=lambda s: s.ts)
    start = None
    if previous is not None:
        ordered = [s for s in ordered if s.ts > previous.last.ts]
        if not ordered:
            return previous
        start = _load(model, "", previous, limits, reference)
    load = start
    for sample in ordered:
        load = model.update(load, "", sample, limits, reference)
    if load is None:
        return None
    return Folded(
        last=ordered[-1],
        weighted_max_ema=load.weighted_max_ema,
        msg_throughput_ema=load.msg_throughput_ema,
        samples=load.samples,
    )


def ema_by_group(values: np.ndarray, groups: np.ndarray, history: float) -> np.ndarray:
    """The moving average of ``values`` restarted at each new group (rows sorted by group).

    ``y0 = x0``; ``y_t = h·y_(t−1) + (1 − h)·x_t``: pandas' ``ewm(alpha=1 − h, adjust=False)``.
    """
    import pandas as pd  # only column-wise callers (the pipeline) pay for the import

    series = pd.Series(values)
    if history >= 1.0:  # all history: the first value stays
        return series.groupby(groups).transform("first").to_numpy()
    smoothed = series.groupby(groups).transform(
        lambda s: s.ewm(alpha=1.0 - history, adjust=False).mean()
    )
    return smoothed.to_numpy()


def fold_columns(
    model: LoadModel,
    columns: Mapping[str, np.ndarray],
    groups: np.ndarray,
    *,
    cores: np.ndarray,
    memory_bytes: np.ndarray,
    nic_bps: np.ndarray,
    reference: Limits | None = None,
) -> dict[str, np.ndarray]:
    """:meth:`LoadModel.update` for every sample at once: rows sorted by broker (``groups``)
    and then time, the limits lined up with them. Returns per sample ``weighted_max`` and the
    moving averages through it, ``load`` and ``msg_throughput_ema``: the last row of a group
    holds what :func:`fold` gives for it."""
    weighted = model.weighted_max_array(
        columns, cores=cores, memory_bytes=memory_bytes, nic_bps=nic_bps, reference=reference
    )
    with np.errstate(over="ignore"):  # two rates near the float limit: kept at the limit
        total = columns["throughput_in_bytes_per_s"] + columns["throughput_out_bytes_per_s"]
    throughput = np.minimum(total, np.finfo(float).max)
    return {
        "weighted_max": weighted,
        "load": ema_by_group(weighted, groups, model.history),
        "msg_throughput_ema": ema_by_group(throughput, groups, model.history),
    }


def snapshot_of(
    brokers: Sequence[BrokerTelemetry],
    bundles: BundleLoads,
    model: LoadModel,
    *,
    bundle_times: ArrayLike | None = None,
    stale_after_s: float | None = None,
) -> Built:
    """The snapshot of one cluster from its brokers and its bundles' newest samples
    (``bundle_times``: each one's time, seconds). ``now`` is the newest sample time.

    With ``stale_after_s`` (``loadBalancerBrokerLoadDataTTLInSeconds``), a bundle whose
    newest sample is older than ``now`` by more than that is left out (listed in
    :attr:`Built.left_out`): a bundle that moved, split or was deleted is no longer reported,
    and upstream's shedder sees only what each broker's latest report lists, so it must not
    pick a bundle that is gone. Load reports list a broker's bundles as of now, and pass none.
    """
    limits = {b.node: b.limits for b in brokers}
    reference = Limits.reference(limits.values()) if limits else None
    loads = [
        _load(model, b.node, b.folded, b.limits, reference)
        for b in sorted(brokers, key=lambda b: b.node)
        if b.folded is not None
    ]
    available = [b.node for b in brokers if b.writable]
    stamps = [load.updated_at for load in loads]
    times = np.asarray([] if bundle_times is None else bundle_times, dtype=np.float64)
    if bundle_times is not None and len(times) != len(bundles):
        raise ValueError(f"{len(times)} bundle times for {len(bundles)} bundles")
    if len(times):
        stamps.append(float(times.max()))
    now = max(stamps, default=0.0)
    left_out: tuple[str, ...] = ()
    if stale_after_s is not None and len(times):
        stale = now - times > stale_after_s  # upstream's comparison for broker load data
        if stale.any():
            left_out = tuple(bundles.names[i] for i in np.flatnonzero(stale).tolist())
            bundles = bundles.take(np.flatnonzero(~stale))
    snapshot = LoadSnapshot.of(loads, bundles, available=available)
    folded = {b.node: b.folded for b in brokers if b.folded is not None}
    return Built(snapshot, now, limits, folded=folded, left_out=left_out)


@lru_cache(maxsize=65_536)  # a live loop asks again for every broker that did not report
def _load(
    model: LoadModel, node: str, folded: Folded, limits: Limits, reference: Limits | None
) -> BrokerLoad:
    """What ``model.fold`` leaves: the last sample's values, the history's averages."""
    latest = model.update(None, node, folded.last, limits, reference)
    return replace(
        latest,
        weighted_max_ema=folded.weighted_max_ema,
        msg_throughput_ema=folded.msg_throughput_ema,
        samples=folded.samples,
    )


def build_snapshot(
    state: ClusterState,
    nodes: Iterable[tuple[NodeRow, RejectedRow]],
    bundles: Iterable[tuple[BundleRow, RejectedRow]],
    model: LoadModel,
    *,
    previous: Mapping[str, Folded] | None = None,
    stale_after_s: float | None = None,
) -> Built:
    """The snapshot of one cluster from file rows (``trimtab shed``). Each row comes with a
    :class:`RejectedRow` *template* (source, line, raw row) used if the row has to be refused
    here: a row for a node outside the cluster, a second row for a bundle at the same time.
    ``previous``: the last build's :attr:`Built.folded`, whose history the samples extend
    (``shed --follow``); ``stale_after_s``: see :func:`snapshot_of`."""
    rejected: list[RejectedRow] = []
    samples = _samples(state, nodes, rejected)
    chosen = _newest_bundles(state, bundles, rejected)
    brokers = broker_telemetry(state, samples, model, previous=previous)
    names = sorted(chosen)
    table = BundleLoads.of(chosen[k][1] for k in names)
    times = [chosen[k][0] for k in names]
    built = snapshot_of(brokers, table, model, bundle_times=times, stale_after_s=stale_after_s)
    return replace(built, rejected=tuple(rejected))


def broker_telemetry(
    state: ClusterState,
    samples: Mapping[str, Sequence[NodeSample]],
    model: LoadModel,
    *,
    previous: Mapping[str, Folded] | None = None,
) -> list[BrokerTelemetry]:
    """Every member of ``state`` with its limits (the inventory's), state, and its samples
    folded on top of ``previous`` (see :func:`fold`)."""
    before = previous or {}
    limits = {str(n.id): Limits.of(n.capacity) for n in state}
    reference = Limits.reference(limits.values()) if limits else None
    return [
        BrokerTelemetry(
            node=str(n.id),
            limits=limits[str(n.id)],
            writable=n.state is NodeState.WRITABLE,
            folded=fold(
                model,
                samples.get(str(n.id), ()),
                limits[str(n.id)],
                reference,
                before.get(str(n.id)),
            ),
        )
        for n in state
    ]


def _samples(
    state: ClusterState, nodes: Iterable[tuple[NodeRow, RejectedRow]], rejected: list[RejectedRow]
) -> dict[str, list[NodeSample]]:
    """The cluster's samples per member; rows for a node outside it are refused."""
    members = {n.id for n in state}
    samples: dict[str, list[NodeSample]] = {}
    for row, where in nodes:
        if row.cluster != state.name:
            continue
        if row.node not in members:
            reason = f"node {row.node} is not in cluster {state.name!r} of the inventory"
            rejected.append(_refuse(where, reason))
            continue
        samples.setdefault(row.node, []).append(row.sample)
    return samples


def _newest_bundles(
    state: ClusterState,
    bundles: Iterable[tuple[BundleRow, RejectedRow]],
    rejected: list[RejectedRow],
) -> dict[str, tuple[float, Bundle]]:
    """Each bundle's newest row; a row for a broker outside the cluster is refused. Two
    brokers reporting one bundle at the same time are decided by a stated rule, not by file
    order: the broker whose name sorts first keeps it (as the pipeline does), and the other
    row is refused with both brokers named."""
    members = {str(n.id) for n in state}  # a row's broker is a node id's text already
    chosen: dict[str, tuple[float, Bundle, RejectedRow]] = {}
    for row, where in bundles:
        if row.cluster != state.name:
            continue
        if row.bundle.broker not in members:
            reason = f"broker {row.bundle.broker} is not in cluster {state.name!r}"
            rejected.append(_refuse(where, reason))
            continue
        seen = chosen.get(row.bundle.name)
        if seen is not None and seen[0] == row.ts and seen[1].broker == row.bundle.broker:
            reason = f"a second row for bundle {row.bundle.name} at the same ts"
            rejected.append(_refuse(where, reason))
            continue
        if seen is not None and seen[0] == row.ts:
            (_, kept, kept_at), (_, lost, lost_at) = sorted(
                [seen, (row.ts, row.bundle, where)], key=lambda c: c[1].broker
            )
            reason = (
                f"bundle {row.bundle.name} is reported by brokers {kept.broker} and "
                f"{lost.broker} at the same ts; the first by name ({kept.broker}) keeps it"
            )
            rejected.append(_refuse(lost_at, reason))
            chosen[row.bundle.name] = (row.ts, kept, kept_at)
            continue
        if seen is None or row.ts > seen[0]:
            chosen[row.bundle.name] = (row.ts, row.bundle, where)
    return {name: (ts, bundle) for name, (ts, bundle, _) in chosen.items()}


def _refuse(template: RejectedRow, reason: str) -> RejectedRow:
    return RejectedRow(template.source, template.line, reason, template.row)


def left_out_sentence(count: int, names: Sequence[str], ttl_s: int | None = None) -> str:
    """What ``trimtab shed``, ``pipeline run`` and the report say of the bundles a snapshot
    left out as stale (:attr:`Built.left_out`): how many, and ``names``, the first of them."""
    ttl = f" ({ttl_s} s)" if ttl_s is not None else ""
    more = ", ..." if count > len(names) else ""
    return (
        f"{plural(count, 'bundle')} left out, not reported within "
        f"loadBalancerBrokerLoadDataTTLInSeconds{ttl} of the newest sample "
        f"(moved, split or deleted): {', '.join(names)}{more}"
    )
