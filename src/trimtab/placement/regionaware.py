"""The region-aware policy: equal shares across regions, rack-aware inside each, durable quorums.

Goals (upstream ``RegionAwareEnsemblePlacementPolicy``, reference §2.8)
    1. *Durability*: with ``reppRegionsToWrite`` set, no ``reppMinimumRegionsForDurability - 1``
       regions ever hold an ack quorum of a write quorum's replicas, so losing all but that
       many regions loses no acknowledged entry (the coverage rule of
       :mod:`~trimtab.placement.coverage`).
    2. *Equal shares*: E members split across the regions in play as evenly as their free nodes
       allow (15 over 3 regions: 5 each), the local region first, the others in an order that
       rotates per call so the same regions do not always get the extra member (#2658).
    3. *Rack-aware inside each region*: a per-region :class:`RackAwarePolicy` picks each
       region's members, preferring racks the region has not used yet, and every write quorum
       still spans ``min(W, minNumRacksPerWriteQuorum)`` racks when possible.

Constraints
    * Sizes are validated first: ``A >= minRegions``, ``E >= W >= A``, and with durability
      ``A > W - W // minRegions`` (else a degraded cluster could not reach the ack quorum).
    * Disk info (``update_bookie_info``) reaches the per-region policies too, since they do the
      drawing (upstream forgot, #4522); rack changes reach them as well (#3665). With
      inclusion-proportional sampling each region's policy plans that region's slots
      (:meth:`RackAwarePolicy.plan_slots`); shares per region stay set by node counts.
    * Bounded everywhere; the not-enough error carries the numbers.

Algorithm (``new_ensemble``)
    a. Shares per region (capped by each region's candidates), then slots interleaved by
       share (region a,b,c with 2,1,3 members -> c a b c a c) so each write quorum mixes
       regions; upstream put each region's members in one block, which a W-wide quorum inside
       one block breaks.
    b. Each slot asks its region's policy for a node in a rack that region has not used yet,
       else any rack there, else any region; every pick passes the hard rules (distinct, not
       excluded, rack and durability coverage of the slot's write quorums).
    c. Stuck: exact search over racks with every rule; then without the rack rule (unless
       enforced); no durable ensemble at all is an error. Durability off and nothing better:
       any E candidates.
    0 regions in play: any E candidates, as upstream.

Adherence is real (upstream always says MEETS_STRICT, #1898): see
:func:`~trimtab.placement.adherence_check.region_adherence`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from trimtab.cluster import DEFAULT_REGION_RACK, NodeId
from trimtab.diskinfo import InfoMap
from trimtab.errors import ConfigError
from trimtab.placement.adherence_check import acked_span_ok, region_adherence
from trimtab.placement.contract import (
    Adherence,
    EnsemblePlacement,
    Replacement,
    check_durable_quorums,
)
from trimtab.placement.coverage import QuorumCoverage
from trimtab.placement.policy import PolicyBase, Vacancy
from trimtab.placement.rackaware import RackAwarePolicy, exact_fill, random_fill
from trimtab.placement.selection import (
    CandidateIndex,
    Draft,
    ensemble_rules,
    in_regions,
    pick,
    region_of_rack,
    replacement_rules,
)
from trimtab.placement.services import (
    NullStats,
)
from trimtab.placement.shares import plan_slots

__all__ = ["RegionAwarePolicy"]

Check = Callable[[NodeId], bool]
_RULES = ensemble_rules()
_REPLACE = replacement_rules(keep_coverage=False)
_REPLACE_COVERED = replacement_rules(keep_coverage=True)


class RegionAwarePolicy(PolicyBase):
    """Region-aware ensembles, replacements, adherence and reads; see the module docstring."""

    #: Region-aware placement wants two-level locations (upstream ``withDefaultRack``).
    DEFAULT_LOCATION = DEFAULT_REGION_RACK

    def _setup(self) -> None:
        self.regions: dict[str, RackAwarePolicy] = {}
        self._rotation = 0
        configured = self.placement.regions_to_write
        self.min_regions = self.placement.minimum_regions_for_durability if configured else 0
        if configured and len(configured) < self.min_regions:
            raise ConfigError(
                f"reppRegionsToWrite names {len(configured)} regions, fewer than"
                f" reppMinimumRegionsForDurability ({self.min_regions})"
            )
        for region in configured:
            self._sub(region)

    def _sub(self, region: str) -> RackAwarePolicy:
        found = self.regions.get(region)
        if found is None:
            found = RackAwarePolicy(
                config=self.config,
                resolver=self.view.locator,  # one resolver cache for every region
                rng=self.rng,
                clock=self.clock,
                features=self.features,
                stats=NullStats(),  # joins and leaves are counted once, here
                local_location=self.local_location,
                weights=self._weights_factory,
                search_budget=self.search_budget,
            )
            found.update_bookie_info(self.bookie_info)
            self.regions[region] = found
        return found

    # -- membership, disk info -------------------------------------------------------------

    def on_cluster_changed(
        self, writable: Iterable[str], readonly: Iterable[str]
    ) -> frozenset[NodeId]:
        dead = self.view.update(writable, readonly)
        self._split()
        return dead

    def on_rack_change(self, nodes: Iterable[str]) -> None:
        moved = list(nodes)
        self.view.relocate(moved)
        self._split()
        for sub in self.regions.values():
            sub.on_rack_change(moved)

    def _split(self) -> None:
        by_region: dict[str, list[NodeId]] = {}
        for node in self.view.writable:
            rack = self.view.rack_of(node)
            if rack is not None:
                by_region.setdefault(region_of_rack(rack), []).append(node)
        for region in sorted(by_region):
            self._sub(region)
        for region, sub in self.regions.items():
            sub.on_cluster_changed(by_region.get(region, ()), self.view.readonly)

    def update_bookie_info(self, info: InfoMap) -> None:
        """Store the disk info and hand it to every per-region policy (upstream #4522)."""
        super().update_bookie_info(info)
        for sub in self.regions.values():
            sub.update_bookie_info(self.bookie_info)

    def _local_rack(self, index: CandidateIndex) -> str | None:
        """The client's rack when it has candidates (else no preference)."""
        local = self.local_location
        return local if local is not None and local in index.by_rack else None

    def _local_region(self) -> str | None:
        local = self.local_location
        if local is None or local == self.view.default_rack():
            return None
        return region_of_rack(local)

    # -- rules -----------------------------------------------------------------------------

    @property
    def enforce(self) -> bool:
        return self.placement.enforce_min_num_racks_per_write_quorum

    def effective_min_regions(self) -> int:
        """``reppMinimumRegionsForDurability``, or 1 while its feature switch disables it."""
        if self.features.is_on(self.placement.disable_durability_feature_name):
            return 1
        return self.min_regions

    def regions_in_play(self, index: CandidateIndex) -> list[str]:
        """Regions with candidates that no feature switch closes, sorted."""
        name = self.placement.disallow_placement_in_region_feature_name
        return [r for r in index.by_region if not (name and self.features.is_on(name, r))]

    def _closed_nodes(self, index: CandidateIndex, in_play: Iterable[str]) -> frozenset[NodeId]:
        """The candidates of regions a feature switch closes (none when no region is closed)."""
        open_regions = set(in_play)
        return frozenset(
            node
            for region, nodes in index.by_region.items()
            if region not in open_regions
            for node in nodes
        )

    # -- new ensembles ---------------------------------------------------------------------

    def new_ensemble(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int, exclude: Iterable[str] = ()
    ) -> EnsemblePlacement:
        min_regions = self.effective_min_regions()
        check_durable_quorums(ensemble_size, write_quorum, ack_quorum, min_regions)
        excluded = self._ids(exclude)
        args = (ensemble_size, write_quorum, ack_quorum, excluded, min_regions)
        return self._last_resort(lambda stable: self._new(*args, stabilized=stable))

    def _new(
        self,
        size: int,
        wq: int,
        aq: int,
        excluded: frozenset[NodeId],
        min_regions: int,
        *,
        stabilized: bool,
    ) -> EnsemblePlacement:
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.enforce)
        regions = self.regions_in_play(index)
        # Nodes of closed regions are excluded outright, so no fallback (exact search, random
        # fill) can reach them: upstream never places in a disallowed region.
        excluded = excluded | self._closed_nodes(index, regions)
        self._require(index, size, excluded)
        min_racks = self.placement.min_num_racks_per_write_quorum
        coverage = QuorumCoverage(size, wq, aq, min_racks=min_racks, min_regions=min_regions)
        notes: list[str] = []
        if not regions:  # unreachable with closed regions: _require raised above
            draft = random_fill(index, excluded, size, self.rng, self._not_enough)
            notes.append("no region in play: random fill")
        else:
            hopeless = (coverage.check_racks and len(index.by_rack) < coverage.min_racks) or (
                coverage.check_durability and len(regions) < min_regions
            )
            draft = Draft(index, coverage, excluded)
            found = None if hopeless else self._greedy(draft, size, regions, stabilized)
            if found is None:
                found = self._exact(index, coverage, excluded, notes)
            if found is None:
                if min_regions >= 2 or self.enforce:
                    raise self._not_enough(
                        index,
                        size,
                        excluded,
                        f"no ensemble keeps every write quorum of {wq} durable across"
                        f" {min_regions} regions (regions in play: {', '.join(regions)})",
                    )
                found = random_fill(index, excluded, size, self.rng, self._not_enough)
                notes.append("no covering ensemble exists: random fill")
            draft = found
        ensemble = tuple(draft.chosen)
        used = {index.region_of[n] for n in ensemble}
        if self.placement.enable_validation and min_regions >= 2 and len(used) < min_regions:
            raise self._not_enough(index, size, excluded, f"only {len(used)} regions used")
        built = draft.coverage
        if built is not None and built.min_racks == coverage.min_racks and not stabilized:
            # Built under every rule from writable nodes (greedy or full exact search): rack
            # coverage and durability hold by construction; only the spread is left to check.
            in_play = len(self.regions_in_play(self.view.index()))
            spread = len(used) >= min(size, in_play)
            adherence = Adherence.MEETS_STRICT if spread else Adherence.MEETS_SOFT
        else:
            adherence = self.is_ensemble_adhering(ensemble, wq, aq)
        return EnsemblePlacement(ensemble, adherence, tuple(notes))

    def _order(self, regions: list[str]) -> list[str]:
        local = self._local_region()
        first = [local] if local in regions else []
        others = [r for r in regions if r != local]
        if others:
            turn = self._rotation % len(others)
            others = others[turn:] + others[:turn]
        self._rotation += 1
        return first + others

    def _greedy(
        self, draft: Draft, size: int, regions: list[str], stabilized: bool
    ) -> Draft | None:
        index = draft.index
        free = index.free_by_region(draft.excluded)
        order = tuple(self._order(regions))
        plan = plan_slots(size, order, tuple(free[r] for r in order))
        if len(plan) < size:
            return None
        used: dict[str, set[str]] = {r: set() for r in regions}
        checks = draft.checks(_RULES)
        plans = {
            r: self._sub(r).plan_slots(draft.excluded, plan.count(r), stabilized=stabilized)
            for r in set(plan)
        }
        local = self._local_rack(index)
        for region in plan:
            sub = self._sub(region)
            node = None
            if local is not None and region == region_of_rack(local):
                # The local region's first member comes from the client's own rack (upstream).
                node = pick(index.pool(local), checks, self.rng, plan=plans[region])
                local = None
            if node is None:
                node = sub.select_one(
                    draft,
                    checks,
                    avoid_racks=used[region],
                    stabilized=stabilized,
                    plan=plans[region],
                )
            if node is None:
                node = pick(index.pool(), checks, self.rng)
            if node is None:
                return None
            rack = index.rack_of[node]
            avoid = used.setdefault(index.region_of[node], set())
            if rack in avoid:
                avoid.clear()  # every rack of the region used: start the list again
            avoid.add(rack)
            draft.add(node)
        return draft

    def _exact(
        self,
        index: CandidateIndex,
        coverage: QuorumCoverage,
        excluded: frozenset[NodeId],
        notes: list[str],
    ) -> Draft | None:
        found, why = exact_fill(
            index, coverage.fresh(), excluded, self.rng, budget=self.search_budget
        )
        notes.append(f"greedy pass stuck; exact search: {why}")
        if found is None and not self.enforce and coverage.check_racks:
            relaxed = QuorumCoverage(
                coverage.ensemble_size,
                coverage.write_quorum,
                coverage.ack_quorum,
                min_racks=1,
                min_regions=coverage.min_regions,
            )
            found, why = exact_fill(index, relaxed, excluded, self.rng, budget=self.search_budget)
            notes.append(f"without the rack rule: {why}")
        return found

    # -- replacement -----------------------------------------------------------------------

    def _fill(self, vacancy: Vacancy) -> Replacement:
        return self._last_resort(lambda stable: self._replace(vacancy, stabilized=stable))

    def _replace(self, vacancy: Vacancy, *, stabilized: bool) -> Replacement:
        """The replaced node's rack, else its region, else another region in play (keeping
        durability when replacements enforce it)."""
        target, excluded = vacancy.target, vacancy.excluded
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.enforce)
        allowed = set(self.regions_in_play(index))
        plain = Draft(index, None, excluded)
        checks = plain.checks(_REPLACE)
        home: str | None = self.view.home_rack(target)
        home_region = region_of_rack(home) if home is not None else None
        notes: list[str] = []
        node = None
        if home is not None and home_region in allowed:
            sub = self._sub(home_region)
            sub_index = sub.view.index(stabilized=stabilized, skip_default_rack=self.enforce)
            node = pick(sub_index.pool(home), checks, self.rng)
            if node is None:
                node = pick(sub_index.pool(), checks, self.rng)
                notes.append("no free node in the rack: same region")
        if node is None:
            durable = self._durability_draft(index, vacancy)
            draft = durable if durable is not None else plain
            keep = durable is not None
            rules = _REPLACE_COVERED if keep else _REPLACE
            checks = draft.checks(rules.add_hard(in_regions(allowed)))
            node = pick(index.pool(), checks, self.rng)
            notes.append("another region" + (", keeping durability" if keep else ""))
        if node is None:
            raise self._not_enough(index, 1, excluded, f"no node can replace {target}")
        return self._replaced(vacancy, node, notes)

    def _durability_draft(self, index: CandidateIndex, vacancy: Vacancy) -> Draft | None:
        """A draft whose coverage holds the other members' regions, or None when durability is
        not enforced in replacements, or the ensemble already breaks it (anomalous)."""
        min_regions = self.effective_min_regions()
        if not (self.placement.enable_durability_enforcement_in_replace and min_regions >= 2):
            return None
        return self._vacancy_draft(index, vacancy, min_racks=1, min_regions=min_regions)

    # -- replace to adhere (the hooks adherence_repair calls) ------------------------------

    def repair_candidates(self) -> CandidateIndex:
        return self.view.index(skip_default_rack=self.enforce)

    def repair_coverage(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int
    ) -> QuorumCoverage:
        """Every write quorum on ``min(W, minRacks)`` racks and durable across the regions."""
        return QuorumCoverage(
            ensemble_size,
            write_quorum,
            ack_quorum,
            min_racks=self.placement.min_num_racks_per_write_quorum,
            min_regions=self.effective_min_regions(),
        )

    # -- adherence -------------------------------------------------------------------------

    def is_ensemble_adhering(
        self, ensemble: Sequence[str], write_quorum: int, ack_quorum: int
    ) -> Adherence:
        """The real region-aware check (:func:`~.adherence_check.region_adherence`)."""
        return region_adherence(
            ensemble,
            write_quorum,
            ack_quorum,
            rack_of=self.view.rack_lookup(),
            min_racks=self.placement.min_num_racks_per_write_quorum,
            min_regions=self.effective_min_regions(),
            regions_in_play=len(self.regions_in_play(self.view.index())),
            forbidden_rack=self.view.default_rack() if self.enforce else None,
        )

    def are_acked_bookies_adhering(
        self, acked: Iterable[str], write_quorum: int, ack_quorum: int
    ) -> bool:
        return acked_span_ok(
            acked,
            write_quorum,
            rack_of=self.view.remembered_rack,
            min_racks=self.placement.min_num_racks_per_write_quorum,
            min_regions=self.effective_min_regions(),
        )
