"""What the three policies share: construction, membership, slow nodes, disk info, read plumbing,
and the frame of a replacement.

Kept deliberately thin: each policy's decisions (new ensembles, replacements, adherence) live in
its own module; this base wires the injected services to a :class:`ClusterView`, and
:meth:`PolicyBase.replace_bookie` is a template: it checks the request once and hands each
policy a :class:`Vacancy` to fill (:meth:`PolicyBase._fill`).
"""

from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import ClassVar, TypeVar

from trimtab.cluster import DEFAULT_RACK, NodeId
from trimtab.config.core import Config
from trimtab.diskinfo import BookieInfo, InfoMap
from trimtab.errors import NotEnoughNodesError
from trimtab.placement.adherence_repair import Gap, coverage_refill, replace_to_adhere
from trimtab.placement.contract import Adherence, EnsemblePlacement, Replacement, node_ids
from trimtab.placement.coverage import QuorumCoverage
from trimtab.placement.locations import LocationSource, Locator
from trimtab.placement.reorder import SlowNodes, add_missing_indices, reorder_reads
from trimtab.placement.selection import (
    CandidateIndex,
    Draft,
    UniformWeights,
    Weights,
    region_of_rack,
)
from trimtab.placement.services import (
    ENSEMBLE_NOT_ADHERING,
    READ_REQUESTS_REORDERED,
    REGION_AWARE_ANOMALOUS_ENSEMBLE,
    FeatureSwitches,
    NoFeatures,
    NullStats,
    Stats,
)
from trimtab.placement.solver import DEFAULT_BUDGET
from trimtab.placement.view import ClusterView

__all__ = ["PolicyBase", "Vacancy", "WeightsFactory", "uniform_weights"]

#: Builds the weights in force from the latest disk info (the disk-weight issue's seam).
WeightsFactory = Callable[[Mapping[NodeId, BookieInfo]], Weights]


def uniform_weights(info: Mapping[NodeId, BookieInfo]) -> Weights:
    """Ignore disk info: every writable node equally likely."""
    return UniformWeights()


#: The note on a result that only the stabilized topology could serve.
STABILIZED_NOTE = "placed on the stabilized topology (last resort)"

Placed = TypeVar("Placed", EnsemblePlacement, Replacement)


@dataclass(frozen=True, slots=True)
class Vacancy:
    """A checked replacement request: the ensemble, the member to replace, the quorums, and
    every node the replacement may not be (the exclusions and the ensemble itself)."""

    current: tuple[NodeId, ...]
    target: NodeId
    write_quorum: int
    ack_quorum: int
    excluded: frozenset[NodeId]

    def filled_by(self, node: NodeId) -> tuple[NodeId, ...]:
        """The ensemble with ``node`` in the target's place (just ``node`` for an empty one)."""
        return tuple(node if n == self.target else n for n in self.current) or (node,)


class PolicyBase(ABC):
    """Construction and the bookkeeping every policy does the same way."""

    #: Where nodes the resolver cannot place go (upstream ``NetworkTopology.DEFAULT_RACK``).
    DEFAULT_LOCATION = DEFAULT_RACK

    #: Whether reads are ever reordered (the default policy never does, as upstream).
    REORDERS_READS: ClassVar[bool] = True

    def __init__(
        self,
        *,
        config: Config | None = None,
        resolver: LocationSource | Locator = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        features: FeatureSwitches | None = None,
        stats: Stats | None = None,
        local_location: str | None = None,
        local_host: str | None = None,
        weights: WeightsFactory = uniform_weights,
        default_rack: str | None = None,
        search_budget: int = DEFAULT_BUDGET,
    ) -> None:
        """Upstream ``initialize``: every service injected, keyword-only.

        ``resolver`` places nodes (a resolver, a node/host -> location mapping, or a shared
        :class:`Locator`); ``default_rack`` is where unplaceable nodes go (default: the class's
        ``DEFAULT_LOCATION``, lifted to the depth real locations have); ``local_location`` is
        the client's own location, else where the resolver puts ``local_host``; ``weights``
        builds the weights from disk info.
        """
        self.config = config if config is not None else Config()
        self.placement = self.config.placement
        self.rng = rng if rng is not None else random.Random()
        self.clock = clock
        self.features: FeatureSwitches = features if features is not None else NoFeatures()
        self.stats: Stats = stats if stats is not None else NullStats()
        self.local_location = None if self._ignores_local() else local_location
        self.search_budget = search_budget
        self._weights_factory = weights
        self._bookie_info: Mapping[NodeId, BookieInfo] = MappingProxyType({})
        locator = (
            resolver
            if isinstance(resolver, Locator)
            else Locator(
                resolver,
                default_rack=default_rack or type(self).DEFAULT_LOCATION,
                stats=self.stats,
            )
        )
        if self.local_location is None and local_host and not self._ignores_local():
            self.local_location = locator.where(local_host)
        self.view = ClusterView(
            locator=locator,
            weights=weights(self._bookie_info),
            stats=self.stats,
            stabilize_period_seconds=self.config.topology.stabilize_period_seconds,
            clock=clock,
        )
        self.slow = SlowNodes(
            expiry_ms=self.placement.bookie_failure_history_expiration_ms, clock=clock
        )
        self.closed = False
        self._on_close: list[Callable[[], object]] = []
        self._setup()

    def _ignores_local(self) -> bool:
        return self.placement.ignore_local_node_in_placement_policy

    def _setup(self) -> None:  # noqa: B027 (an optional hook, empty on purpose)
        """Per-policy state set up after the shared parts (a hook, empty here)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.view!r})"

    # -- lifecycle and membership ----------------------------------------------------------

    def close(self) -> None:
        """Upstream ``uninitalize``; also ends what :meth:`on_close` was given (a resolver that
        :func:`~trimtab.systems.bookkeeper.placement_setup.make_policy` made for this policy);
        idempotent."""
        if not self.closed:
            self.closed = True
            for action in self._on_close:
                action()

    def on_close(self, action: Callable[[], object]) -> None:
        """Run ``action`` when the policy is closed."""
        self._on_close.append(action)

    def on_cluster_changed(
        self, writable: Iterable[str], readonly: Iterable[str]
    ) -> frozenset[NodeId]:
        """Take the new membership; return the nodes that left and are not read-only."""
        return self.view.update(writable, readonly)

    def on_rack_change(self, nodes: Iterable[str]) -> None:
        """The resolver says these nodes moved: locate them again (upstream
        ``onBookieRackChange``)."""
        self.view.relocate(nodes)

    # -- disk info and slow nodes ----------------------------------------------------------

    @property
    def bookie_info(self) -> Mapping[NodeId, BookieInfo]:
        """The latest disk info handed to :meth:`update_bookie_info`, read-only."""
        return self._bookie_info

    def update_bookie_info(self, info: InfoMap) -> None:
        """Store the latest ``node -> (total, free)`` and rebuild the weights from it."""
        self._bookie_info = MappingProxyType(
            {NodeId(k): BookieInfo(*v) for k, v in sorted(info.items())}
        )
        self.view.set_weights(self._weights_factory(self._bookie_info))

    def register_slow_bookie(self, node: str, entry_id: int) -> None:
        """Remember a slow node, only when reordering by pending requests is off (upstream)."""
        if self.placement.read_reorder_threshold_pending_requests <= 0:
            self.slow.register(node, entry_id)

    # -- reads -----------------------------------------------------------------------------

    def _local_region(self) -> str | None:
        """The client's region, when region-aware reordering should use it."""
        return None

    def _region_of(self, node: NodeId) -> str | None:
        rack = self.view.remembered_rack(node)
        return None if rack is None else rack[1:].split("/", 1)[0]

    def reorder_read_sequence(
        self,
        ensemble: Sequence[str],
        write_set: Sequence[int],
        failure_history: Mapping[str, int] | None = None,
        *,
        pending_requests: Mapping[str, int] | None = None,
    ) -> tuple[int, ...]:
        """See :mod:`trimtab.placement.reorder` for the classes and rules."""
        if not (self.REORDERS_READS and self.placement.reorder_read_sequence_enabled):
            return tuple(write_set)
        local_region = self._local_region()
        order, reordered = reorder_reads(
            [NodeId(n) for n in ensemble],
            write_set,
            writable=self.view.writable,
            readonly=self.view.readonly,
            slow=self.slow,
            failure_history={NodeId(k): v for k, v in (failure_history or {}).items()},
            pending={NodeId(k): v for k, v in (pending_requests or {}).items()},
            threshold=self.placement.read_reorder_threshold_pending_requests,
            region_of=self._region_of if local_region is not None else None,
            local_region=local_region,
            rng=self.rng if self.placement.ensemble_random_read_reordering else None,
        )
        if reordered:
            self.stats.incr(READ_REQUESTS_REORDERED)
        return order

    def reorder_read_lac_sequence(
        self,
        ensemble: Sequence[str],
        write_set: Sequence[int],
        failure_history: Mapping[str, int] | None = None,
        *,
        pending_requests: Mapping[str, int] | None = None,
    ) -> tuple[int, ...]:
        """The read order, then every other ensemble index (reads of the last add confirmed)."""
        order = self.reorder_read_sequence(
            ensemble, write_set, failure_history, pending_requests=pending_requests
        )
        return add_missing_indices(order, len(ensemble))

    # -- helpers for the deciders ----------------------------------------------------------

    def _not_enough(
        self,
        index: CandidateIndex,
        requested: int,
        excluded: frozenset[NodeId],
        detail: str,
    ) -> NotEnoughNodesError:
        """The error with the numbers: nodes that could serve, and how many were excluded."""
        return NotEnoughNodesError(
            requested=requested,
            available=len(index.nodes),
            excluded=self._excluded_here(index, excluded),
            detail=detail,
        )

    @staticmethod
    def _excluded_here(index: CandidateIndex, excluded: frozenset[NodeId]) -> int:
        """How many of ``excluded`` are candidates of ``index``: O(|excluded|), not O(nodes)."""
        members = index.rack_of
        return sum(1 for node in excluded if node in members)

    def _require(self, index: CandidateIndex, size: int, excluded: frozenset[NodeId]) -> None:
        """Raise at once when fewer than ``size`` candidates are left after the exclusions."""
        free = len(index.nodes) - self._excluded_here(index, excluded)
        if free < size:
            raise self._not_enough(index, size, excluded, f"only {free} candidates")

    def _last_resort(self, attempt: Callable[[bool], Placed]) -> Placed:
        """``attempt(stabilized=False)``; only if the plain topology cannot serve it, the
        stabilized one (upstream's second policy instance), noted. A FAIL result is counted."""
        result: Placed
        try:
            result = attempt(False)
        except NotEnoughNodesError:
            if self.view.stable is None:
                raise
            fallback: Placed = attempt(True)
            result = replace(fallback, notes=(*fallback.notes, STABILIZED_NOTE))
        if result.adherence is Adherence.FAIL:
            self.stats.incr(ENSEMBLE_NOT_ADHERING)
        return result

    @staticmethod
    def _ids(nodes: Iterable[str]) -> frozenset[NodeId]:
        return node_ids(nodes)

    # -- replacement -----------------------------------------------------------------------

    def replace_bookie(
        self,
        ensemble_size: int,
        write_quorum: int,
        ack_quorum: int,
        current_ensemble: Sequence[str],
        bookie_to_replace: str,
        exclude: Iterable[str] = (),
    ) -> Replacement:
        """Upstream ``replaceBookie``: the node to replace must be a member (or the ensemble
        empty, which upstream's tests use to ask for any one node); the ensemble is excluded
        with ``exclude``; the policy's :meth:`_fill` chooses the node."""
        current = tuple(NodeId(n) for n in current_ensemble)
        target = NodeId(bookie_to_replace)
        if current and target not in current:
            raise ValueError(f"{target} is not a member of the ensemble {list(current)}")
        excluded = self._ids(exclude) | frozenset(current) | {target}
        return self._fill(Vacancy(current, target, write_quorum, ack_quorum, excluded))

    @abstractmethod
    def _fill(self, vacancy: Vacancy) -> Replacement:
        """The policy's own part of :meth:`replace_bookie`: the node for ``vacancy``."""

    def _replaced(self, vacancy: Vacancy, node: NodeId, notes: Sequence[str] = ()) -> Replacement:
        """``node`` filling ``vacancy``: the ensemble it makes and that ensemble's adherence."""
        ensemble = vacancy.filled_by(node)
        adherence = self.is_ensemble_adhering(ensemble, vacancy.write_quorum, vacancy.ack_quorum)
        return Replacement(node, ensemble, adherence, tuple(notes))

    def _vacancy_draft(
        self, index: CandidateIndex, vacancy: Vacancy, *, min_racks: int, min_regions: int = 0
    ) -> Draft | None:
        """A draft for the vacant slot whose coverage (write quorums on ``min_racks`` racks,
        durable across ``min_regions`` regions) already holds the other members' locations.
        None when the ensemble has no full write quorum through the slot, or when durability
        is asked and the other members already break it (an anomalous ensemble, counted)."""
        current, target = vacancy.current, vacancy.target
        if target not in current or vacancy.write_quorum > len(current):
            return None
        coverage = QuorumCoverage(
            len(current),
            vacancy.write_quorum,
            vacancy.ack_quorum,
            min_racks=min_racks,
            min_regions=min_regions,
        )
        for position, node in enumerate(current):
            rack = self.view.remembered_rack(node)
            if node == target or rack is None:
                continue
            region = region_of_rack(rack)
            if coverage.check_durability and not coverage.accepts(position, rack, region):
                self.stats.incr(REGION_AWARE_ANOMALOUS_ENSEMBLE)
                return None
            coverage.add(position, rack, region)
        return Draft(index, coverage, vacancy.excluded, position=current.index(target))

    # -- replace to adhere (upstream replaceToAdherePlacementPolicy) -------------------------

    def replace_to_adhere(
        self,
        ensemble_size: int,
        write_quorum: int,
        ack_quorum: int,
        current_ensemble: Sequence[str],
        exclude: Iterable[str] = (),
    ) -> EnsemblePlacement:
        """The ensemble itself if it adheres, else one adhering with the fewest members
        replaced, else an empty FAIL result (:mod:`~trimtab.placement.adherence_repair`)."""
        return replace_to_adhere(
            self, ensemble_size, write_quorum, ack_quorum, current_ensemble, exclude
        )

    def repair_candidates(self) -> CandidateIndex:
        """The nodes :meth:`replace_to_adhere` may choose from: every writable node here; a
        policy that keeps nodes off the default rack leaves it out."""
        return self.view.index()

    def repair_coverage(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int
    ) -> QuorumCoverage | None:
        """The rack (and region) rules :meth:`replace_to_adhere` keeps: none here; the rack-
        and region-aware policies have theirs."""
        return None

    def repair_fill(self, index: CandidateIndex, gap: Gap) -> list[NodeId | None] | None:
        """Fill ``gap`` under this policy's slot rules (a hook of :meth:`replace_to_adhere`;
        the zone-aware policy has its own)."""
        return coverage_refill(self, index, gap)

    # -- adherence and acknowledgements ----------------------------------------------------

    @abstractmethod
    def is_ensemble_adhering(
        self, ensemble: Sequence[str], write_quorum: int, ack_quorum: int
    ) -> Adherence:
        """Each policy's own check (it also grades every replacement :meth:`_fill` makes)."""

    def are_acked_bookies_adhering(
        self, acked: Iterable[str], write_quorum: int, ack_quorum: int
    ) -> bool:
        """No fault-domain rule: any acknowledgement is enough (the default policy, as
        upstream); the rack- and region-aware policies override it."""
        return True

    def ack_may_complete(self, acked: Iterable[str], write_quorum: int, ack_quorum: int) -> bool:
        """With ``enforceMinNumFaultDomainsForWrite``, an ack quorum completes only once the
        acknowledging nodes adhere (upstream ``PendingAddOp`` holds it back until then)."""
        if not self.placement.enforce_min_num_fault_domains_for_write:
            return True
        return self.are_acked_bookies_adhering(acked, write_quorum, ack_quorum)
