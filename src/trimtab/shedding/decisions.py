"""What a shedding cycle decides, why, and what it carries to the next cycle.

Pulsar's ``UnloadDecision`` is a label (Success, Skip, Failure) and a reason; a Success holds
an ``Unload(source, bundle, destination)``. trimtab keeps those names so that counts line up
with ``brk_lb_unload_broker_breakdown_total{result,reason}``.

A :class:`CycleResult` holds, in order:

* one Success decision per bundle moved (``broker`` = the source), in the order to run them;
* one Skip decision per broker that could not shed (``broker`` set, NoBundles or NoLoadData);
* when nothing moved, exactly one cycle-level Skip or Failure (``broker`` None): the one
  upstream counts, e.g. Skip/HitCount for a balanced cluster.

:class:`ShedderState` is everything carried between cycles (upstream keeps it in the shedder and
the scheduler): the hit count, recently unloaded bundles and brokers with their times, the
ThresholdShedder's smoothed scores, the balanced shedder's predictions and AvgShedder's
per-broker hit counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

__all__ = [
    "CycleResult",
    "Decision",
    "Label",
    "Move",
    "Prediction",
    "Reason",
    "ShedderState",
    "breakdown",
    "frozen_map",
    "skip",
    "success",
]


class Label(StrEnum):
    SUCCESS = "Success"
    SKIP = "Skip"
    FAILURE = "Failure"


class Reason(StrEnum):
    """Upstream ``UnloadDecision.Reason`` values (``Admin`` is a manual unload)."""

    OVERLOADED = "Overloaded"
    UNDERLOADED = "Underloaded"
    ADMIN = "Admin"
    HIT_COUNT = "HitCount"
    NO_BUNDLES = "NoBundles"
    COOL_DOWN = "CoolDown"
    OUTDATED_DATA = "OutDatedData"
    NO_LOAD_DATA = "NoLoadData"
    NO_BROKERS = "NoBrokers"
    UNKNOWN = "Unknown"


def frozen_map(
    items: Mapping[str, float] | Iterable[tuple[str, float]] = (),
) -> Mapping[str, float]:
    """A read-only copy, so states can be shared between cycles without aliasing."""
    return MappingProxyType(dict(items))


@dataclass(frozen=True, slots=True, kw_only=True)
class Move:
    """One bundle unload: from ``source`` to ``destination`` (None = placed at next lookup)."""

    bundle: str
    source: str
    destination: str | None
    throughput: float  # bytes/s in + out, as the shedder saw it


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """A label and a reason, about a bundle move, a broker, or (``broker`` None) the cycle."""

    label: Label
    reason: Reason
    broker: str | None = None
    move: Move | None = None
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Prediction:
    """A load change the balanced shedder expects but the broker has not reported yet.

    ``delta`` is in load units and ``throughput`` in bytes/s; ``samples`` is the broker's
    sample count when the move was made. Each later sample folds ``1 − h`` of the change into
    the smoothed values, so the part still missing is ``delta·h^(samples_now − samples)``.
    """

    broker: str
    delta: float
    throughput: float
    at: float
    samples: int


def _empty() -> Mapping[str, float]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShedderState:
    """What one cycle hands the next. Start from ``ShedderState()``."""

    hit_count: int = 0
    recently_unloaded_bundles: Mapping[str, float] = field(default_factory=_empty)
    recently_unloaded_brokers: Mapping[str, float] = field(default_factory=_empty)
    scores: Mapping[str, float] = field(default_factory=_empty)
    predictions: tuple[Prediction, ...] = ()
    #: AvgShedder's consecutive hits per broker: any gap of at least the low threshold, and
    #: gaps of at least the high threshold.
    hits_low: Mapping[str, float] = field(default_factory=_empty)
    hits_high: Mapping[str, float] = field(default_factory=_empty)
    #: The balanced shedder's run of cycles whose only trigger is the spread rule.
    spread_hits: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleResult:
    """One cycle's decisions, the state for the next cycle, and the load statistics.

    ``avg`` and ``std`` are the population mean and std of the loads the shedder used (NaN
    when the cycle stopped before computing them); ``std_after`` is the shedder's own estimate
    after its moves (upstream's incremental ``LoadStats.offload``).
    """

    decisions: tuple[Decision, ...]
    state: ShedderState
    avg: float = float("nan")
    std: float = float("nan")
    std_after: float = float("nan")

    @property
    def moves(self) -> tuple[Move, ...]:
        return tuple(d.move for d in self.decisions if d.move is not None)

    @property
    def outcome(self) -> Decision:
        """The cycle-level decision: the skip or failure, or the first success."""
        for decision in self.decisions:
            if decision.broker is None:
                return decision
        return self.decisions[0]


def success(reason: Reason, move: Move, note: str = "") -> Decision:
    """A Success decision: ``move`` leaves its source for ``reason``."""
    return Decision(label=Label.SUCCESS, reason=reason, broker=move.source, move=move, note=note)


def skip(reason: Reason, broker: str | None = None, note: str = "") -> Decision:
    """A Skip decision: about ``broker``, or about the whole cycle when it is None."""
    return Decision(label=Label.SKIP, reason=reason, broker=broker, note=note)


def breakdown(results: Iterable[CycleResult]) -> Counter[tuple[Label, Reason]]:
    """Counts like upstream ``UnloadCounter``: one per moved bundle, one per idle cycle."""
    counts: Counter[tuple[Label, Reason]] = Counter()
    for result in results:
        for decision in result.decisions:
            if decision.move is not None or decision.broker is None:
                counts[(decision.label, decision.reason)] += 1
    return counts
