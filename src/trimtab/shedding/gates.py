"""The gates every shedder passes before it moves anything, stated once.

A gate either lets the cycle go on (it returns None) or is the cycle's result (a Skip with the
reason), so each shedder reads as its own steps between the shared gates:

* :func:`usable_brokers`: available brokers with load data that is not stale, and why the
  others were left out; :func:`no_broker_gate` stops a cycle that has none of them (run by
  :meth:`~trimtab.shedding.base.Shedder.cycle` before every shedder's own step).
* :func:`pair_reason`: the TransferShedder's trigger and per-pair reason (std above target, the
  low broker underloaded, the high broker overloaded), built on :func:`is_underloaded` and
  :func:`is_overloaded`; :func:`count_hits` and :func:`hit_count_gate` act only once it has
  fired more than ``loadBalancerSheddingConditionHitCountThreshold`` cycles in a row.
* :func:`sole_bundle_gate`: a broker's sole bundle is never shed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from trimtab.config.pulsar import SheddingConfig
from trimtab.shedding.decisions import CycleResult, Decision, Reason, ShedderState, skip
from trimtab.shedding.load import BrokerLoad
from trimtab.shedding.snapshot import BundleIndex, LoadSnapshot

__all__ = [
    "Level",
    "UsableBrokers",
    "count_hits",
    "hit_count_gate",
    "hit_note",
    "is_overloaded",
    "is_underloaded",
    "no_broker_gate",
    "pair_reason",
    "sole_bundle_gate",
    "underload_multiplier",
    "usable_brokers",
]

#: The note on the Skip of a cycle without a single broker with fresh load data.
NO_FRESH_DATA = "no broker has fresh load data"


@dataclass(frozen=True, slots=True)
class UsableBrokers:
    """Available brokers with fresh load data, in id order, and why the others were left out."""

    loads: tuple[BrokerLoad, ...]
    stale: tuple[str, ...]
    missing: tuple[str, ...]


def usable_brokers(snapshot: LoadSnapshot, now: float, config: SheddingConfig) -> UsableBrokers:
    """Split the available brokers into fresh, stale (older than the TTL) and never reported."""
    available = snapshot.available or frozenset()
    loads: list[BrokerLoad] = []
    stale: list[str] = []
    missing: list[str] = []
    for broker in sorted(available):
        load = snapshot.loads.get(broker)
        if load is None:
            missing.append(broker)
        elif now - load.updated_at > config.load_data_ttl_seconds:
            stale.append(broker)
        else:
            loads.append(load)
    return UsableBrokers(tuple(loads), tuple(stale), tuple(missing))


def no_broker_gate(
    usable: UsableBrokers,
    state: ShedderState,
    *,
    notes: tuple[Decision, ...] = (),
    note: str = NO_FRESH_DATA,
) -> CycleResult | None:
    """None while some broker is usable; else the cycle's Skip: OutdatedData when brokers
    were left out as stale, NoBrokers when none is there at all (after ``notes``)."""
    if usable.loads:
        return None
    reason = Reason.OUTDATED_DATA if usable.stale else Reason.NO_BROKERS
    return CycleResult(decisions=(*notes, skip(reason, note=note)), state=state)


def underload_multiplier(config: SheddingConfig) -> float:
    """``min(0.5, max(0, targetStd / 2))``: 0.125 with the default target of 0.25."""
    return min(0.5, max(0.0, config.target_std / 2.0))


def is_underloaded(
    load: float,
    throughput_ema: float,
    avg: float,
    max_throughput_ema: float,
    config: SheddingConfig,
) -> bool:
    """Load below ``avg·m``, or throughput EMA below ``m`` × the max broker's (PR #22321)."""
    m = underload_multiplier(config)
    return load < avg * m or throughput_ema < m * max_throughput_ema


def is_overloaded(load: float, avg: float, config: SheddingConfig) -> bool:
    """Load above the overload threshold (85 %) **and** above ``avg + targetStd`` (PR #20059)."""
    threshold = config.overloaded_threshold_percentage / 100.0
    return load > threshold and load > avg + config.target_std


class Level(NamedTuple):
    """One broker's side of a pair: its load and its message-throughput EMA."""

    load: float
    throughput_ema: float

    @classmethod
    def of(cls, load: BrokerLoad) -> Level:
        return cls(load.load, load.msg_throughput_ema)


def pair_reason(
    std: float, avg: float, low: Level, high: Level, config: SheddingConfig
) -> Reason | None:
    """Why ``high`` should shed to ``low``, in upstream's order: Overloaded while the std is
    above target, else Underloaded (``low`` underloaded), else Overloaded (``high``
    overloaded); None when no rule fires. On the extreme pair it is the cycle's trigger."""
    if std > config.target_std:
        return Reason.OVERLOADED
    if is_underloaded(low.load, low.throughput_ema, avg, high.throughput_ema, config):
        return Reason.UNDERLOADED
    if is_overloaded(high.load, avg, config):
        return Reason.OVERLOADED
    return None


def count_hits(state: ShedderState, triggered: bool) -> ShedderState:
    """The state with the run of consecutive triggered cycles advanced, or reset to 0."""
    return replace(state, hit_count=state.hit_count + 1 if triggered else 0)


def hit_note(hit: int, std: float, config: SheddingConfig) -> str:
    """Why a cycle stopped at the hit-count gate, in words."""
    if hit == 0:
        return (
            f"balanced: std {std:.3f} <= target {config.target_std:g}, "
            "no broker underloaded or overloaded"
        )
    times = "1 time" if hit == 1 else f"{hit} times"
    need = config.hit_count_threshold + 1  # upstream acts once the count exceeds the threshold
    return (
        f"shedding condition hit {times} in a row; it acts at {need} in a row "
        f"(loadBalancerSheddingConditionHitCountThreshold {config.hit_count_threshold}, exclusive)"
    )


def hit_count_gate(
    state: ShedderState,
    config: SheddingConfig,
    *,
    avg: float,
    std: float,
    notes: tuple[Decision, ...] = (),
) -> CycleResult | None:
    """None once the trigger has fired more than the threshold in a row (counted in
    ``state``); else the cycle's HitCount Skip, with the std unchanged."""
    if state.hit_count > config.hit_count_threshold:
        return None
    note = hit_note(state.hit_count, std, config)
    return CycleResult(
        decisions=(*notes, skip(Reason.HIT_COUNT, note=note)),
        state=state,
        avg=avg,
        std=std,
        std_after=std,
    )


def sole_bundle_gate(index: BundleIndex, position: int, broker: str) -> Decision | None:
    """None when the broker at ``position`` has bundles to spare; else a NoBundles Skip."""
    if index.count(position) > 1:
        return None
    return skip(Reason.NO_BUNDLES, broker, "a sole bundle is never shed")
