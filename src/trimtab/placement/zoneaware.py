"""The zone-aware policy: write quorums across zones, and across upgrade domains within a zone.

Upstream ``ZoneawareEnsemblePlacementPolicy``. Locations have two levels, ``/zone/upgradedomain``;
a node the resolver cannot place goes to ``/default-zone/default-upgradedomain`` (upstream's
default fault domain), and so does one whose location does not have exactly two levels.

Goals (``desiredNumZonesPerWriteQuorum`` = d, ``minNumZonesPerWriteQuorum`` = m)
    1. Every write quorum spans ``min(W, d)`` zones; at the least ``m``.
    2. Where a write quorum holds two or more nodes of one zone, they sit in at least two
       upgrade domains (so upgrading one domain never takes a zone's replicas all at once).

Constraints
    * ``m > d`` is a configuration error (upstream refuses to initialise).
    * With ``enforceStrictZoneawarePlacement`` (the default): ``E`` must be a multiple of ``W``
      and ``W > m`` (upstream's ``IllegalArgumentException``, here a ``ConfigError``); nodes of the
      default fault domain are never chosen; no acceptable node raises
      :class:`~trimtab.errors.NotEnoughNodesError`. Without it, ensembles and replacements are
      plain random (weighted) choices, graded afterwards, as upstream.

Algorithm (one slot, for a new ensemble slot by slot or for the replaced slot), upstream's order
    a. for ``k`` from ``min(W, d) - 1`` down to ``m - 1``: leave out the zones of the ``k``
       neighbours on each side of the slot (wrapping); among what is left, prefer upgrade
       domains no neighbour within ``W - 1`` of the same zone uses, else any upgrade domain that
       still leaves every write quorum through the slot with two domains per repeated zone;
    b. if nothing fits, leave out only zones that would bring a write quorum through the slot
       below ``m`` zones, and apply the same upgrade-domain filters;
    c. pick one survivor (weighted by disk when enabled: :func:`~trimtab.placement.selection.pick`).

Adherence (upstream ``isEnsembleAdheringToPlacementPolicy``)
    FAIL when the ensemble is empty, ``E`` is not a multiple of ``W``, ``W <= m``, a member is
    unresolved or on the default fault domain, a write quorum spans fewer than ``m`` zones, or a
    repeated zone in a write quorum uses one upgrade domain; MEETS_SOFT when a write quorum
    spans fewer than ``min(W, d)`` zones; MEETS_STRICT otherwise. trimtab also fails an ensemble
    naming a node twice. Acked bookies adhere when they are ``A`` or more and span
    ``min(W, m)`` zones. Reads are never reordered (upstream returns the write set as is).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence

from trimtab.cluster import NodeId
from trimtab.errors import ConfigError
from trimtab.placement.adherence_repair import Gap
from trimtab.placement.contract import Adherence, EnsemblePlacement, Replacement, check_quorums
from trimtab.placement.coverage import windows_of
from trimtab.placement.policy import PolicyBase, Vacancy
from trimtab.placement.rackaware import random_fill
from trimtab.placement.selection import CandidateIndex, Draft, pick, replacement_rules
from trimtab.topology.build import DEFAULT_ZONE_DOMAIN

__all__ = ["DEFAULT_FAULT_DOMAIN", "ZoneAwarePolicy", "zone_and_domain"]

#: Upstream ``NetworkTopology.DEFAULT_ZONE_AND_UPGRADEDOMAIN``.
DEFAULT_FAULT_DOMAIN = DEFAULT_ZONE_DOMAIN

Slots = Sequence[NodeId | None]
Check = Callable[[NodeId], bool]
_ANY = replacement_rules(keep_coverage=False)  # distinct, not excluded


def zone_and_domain(location: str | None) -> tuple[str, str] | None:
    """``'/z1/ud2'`` -> ``('z1', 'ud2')``; None for anything that is not two levels."""
    if location is None:
        return None
    parts = location.strip("/").split("/")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


class ZoneAwarePolicy(PolicyBase):
    """Zone- and upgrade-domain-aware ensembles; see the module docstring."""

    DEFAULT_LOCATION = DEFAULT_FAULT_DOMAIN
    REORDERS_READS = False

    def _setup(self) -> None:
        self._zones_cache: tuple[CandidateIndex, Mapping[NodeId, tuple[str, str] | None]] | None
        self._zones_cache = None
        p = self.placement
        if p.min_num_zones_per_write_quorum > p.desired_num_zones_per_write_quorum:
            raise ConfigError(
                f"minNumZonesPerWriteQuorum ({p.min_num_zones_per_write_quorum}) cannot be"
                f" greater than desiredNumZonesPerWriteQuorum"
                f" ({p.desired_num_zones_per_write_quorum})"
            )

    @property
    def strict(self) -> bool:
        return self.placement.enforce_strict_zoneaware_placement

    @property
    def min_zones(self) -> int:
        return self.placement.min_num_zones_per_write_quorum

    def _desired(self, write_quorum: int) -> int:
        return min(write_quorum, self.placement.desired_num_zones_per_write_quorum)

    def _check_shape(self, ensemble_size: int, write_quorum: int) -> None:
        """Upstream's two refusals under strict placement (its comments give the reasons: a
        wrapped quorum could fall to ``m`` zones; a lost zone could leave no replacement)."""
        if ensemble_size % write_quorum:
            raise ConfigError(
                f"ensemble size {ensemble_size} must be a multiple of write quorum {write_quorum}"
                " when enforceStrictZoneawarePlacement is on"
            )
        if write_quorum <= self.min_zones:
            raise ConfigError(
                f"write quorum {write_quorum} must exceed minNumZonesPerWriteQuorum"
                f" ({self.min_zones}) when enforceStrictZoneawarePlacement is on"
            )

    # -- new ensembles and replacements ----------------------------------------------------

    def new_ensemble(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int, exclude: Iterable[str] = ()
    ) -> EnsemblePlacement:
        check_quorums(ensemble_size, write_quorum, ack_quorum)
        if self.strict:
            self._check_shape(ensemble_size, write_quorum)
        excluded = self._ids(exclude)
        return self._last_resort(
            lambda stable: self._new(ensemble_size, write_quorum, ack_quorum, excluded, stable)
        )

    def _new(
        self, size: int, wq: int, aq: int, excluded: frozenset[NodeId], stabilized: bool
    ) -> EnsemblePlacement:
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.strict)
        self._require(index, size, excluded)
        if not self.strict:
            chosen = random_fill(index, excluded, size, self.rng, self._not_enough).chosen
            return EnsemblePlacement(tuple(chosen), self.is_ensemble_adhering(chosen, wq, aq))
        slots: list[NodeId | None] = [None] * size
        taken = set(excluded)
        for position in range(size):
            node = self._slot(index, slots, position, wq, taken)
            slots[position] = node
            taken.add(node)
        ensemble = tuple(n for n in slots if n is not None)
        return EnsemblePlacement(ensemble, self.is_ensemble_adhering(ensemble, wq, aq))

    def _fill(self, vacancy: Vacancy) -> Replacement:
        return self._last_resort(lambda stable: self._replace(vacancy, stable))

    def _replace(self, vacancy: Vacancy, stabilized: bool) -> Replacement:
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.strict)
        if not self.strict:
            node = pick(index.pool(), Draft(index, None, vacancy.excluded).checks(_ANY), self.rng)
            if node is None:
                raise self._not_enough(index, 1, vacancy.excluded, "no node left to replace with")
            return self._replaced(vacancy, node)
        slots: list[NodeId | None] = list(vacancy.current) or [None]
        position = vacancy.current.index(vacancy.target) if vacancy.current else 0
        node = self._slot(index, slots, position, vacancy.write_quorum, set(vacancy.excluded))
        return self._replaced(vacancy, node)

    def repair_candidates(self) -> CandidateIndex:
        """Replace to adhere: strict placement keeps nodes off the default fault domain."""
        return self.view.index(skip_default_rack=self.strict)

    def repair_fill(self, index: CandidateIndex, gap: Gap) -> list[NodeId | None] | None:
        """Replace to adhere: the zone rule of :meth:`_slot` for each position, in turn."""
        out = list(gap.slots)
        chosen = set(gap.taken)
        for position in gap.positions:
            node = self._slot(index, out, position, gap.write_quorum, chosen)
            out[position] = node
            chosen.add(node)
        return out

    def _slot(
        self, index: CandidateIndex, slots: Slots, position: int, wq: int, taken: set[NodeId]
    ) -> NodeId:
        """Steps a-c of the module docstring for ``slots[position]`` (its own entry ignored)."""
        located = self._zones_of(index)
        reaches = range(self._desired(wq) - 1, self.min_zones - 2, -1)
        zone_rules = itertools.chain(
            (self._near_zones(slots, position, reach) for reach in reaches),
            (self._zones_short_of_min(slots, position, wq) for _ in (0,)),
        )
        node = None
        for zones_out in zone_rules:
            node = self._pick_outside(index, located, slots, position, wq, taken, zones_out)
            if node is not None:
                break
        if node is None:
            raise self._not_enough(
                index,
                1,
                frozenset(taken),
                f"no node keeps the zone and upgrade-domain rules at slot {position}",
            )
        return node

    def _zones_of(self, index: CandidateIndex) -> Mapping[NodeId, tuple[str, str] | None]:
        """Zone and upgrade domain of every candidate, computed once per candidate index."""
        cached = self._zones_cache
        if cached is not None and cached[0] is index:
            return cached[1]
        located = {n: zone_and_domain(rack) for n, rack in index.rack_of.items()}
        self._zones_cache = (index, located)
        return located

    def _pick_outside(
        self,
        index: CandidateIndex,
        located: Mapping[NodeId, tuple[str, str] | None],
        slots: Slots,
        position: int,
        wq: int,
        taken: set[NodeId],
        zones_out: set[str],
    ) -> NodeId | None:
        """A node outside ``taken`` and ``zones_out``: in a fresh upgrade domain of its zone if
        possible, else in one that keeps two domains per repeated zone in each write quorum."""

        def base(node: NodeId) -> bool:
            where = located[node]
            return node not in taken and where is not None and where[0] not in zones_out

        for domains_out in (self._near_domains, self._single_domains):
            excluded_domains = domains_out(slots, position, wq)

            def fresh(node: NodeId, out: set[tuple[str, str]] = excluded_domains) -> bool:
                return located[node] not in out

            node = pick(index.pool(), [base, fresh], self.rng)
            if node is not None:
                return node
        return None

    def _located(self, node: NodeId | None) -> tuple[str, str] | None:
        return None if node is None else zone_and_domain(self.view.remembered_rack(node))

    def _others(self, slots: Slots, position: int, reach: int) -> list[tuple[str, str]]:
        """Zone and domain of the members within ``reach`` of ``position`` on either side."""
        size = len(slots)
        found = []
        for step in range(-reach, reach + 1):
            at = (position + step) % size
            if step and at != position and (where := self._located(slots[at])) is not None:
                found.append(where)
        return found

    def _near_zones(self, slots: Slots, position: int, reach: int) -> set[str]:
        return {zone for zone, _ in self._others(slots, position, reach)}

    def _near_domains(self, slots: Slots, position: int, wq: int) -> set[tuple[str, str]]:
        return set(self._others(slots, position, wq - 1))

    def _quorums_through(self, slots: Slots, position: int, wq: int) -> list[list[tuple[str, str]]]:
        """For each write quorum holding ``position``, its other members' zone and domain."""
        size = len(slots)
        out = []
        for start in range(-(wq - 1), 1):
            members = {(position + start + j) % size for j in range(wq)} - {position}
            out.append([w for at in members if (w := self._located(slots[at])) is not None])
        return out

    def _zones_short_of_min(self, slots: Slots, position: int, wq: int) -> set[str]:
        """Zones to avoid so that every write quorum through ``position`` keeps ``m`` zones."""
        out: set[str] = set()
        for quorum in self._quorums_through(slots, position, wq):
            zones = {zone for zone, _ in quorum}
            if len(zones) <= self.min_zones - 1:
                out |= zones
        return out

    def _single_domains(self, slots: Slots, position: int, wq: int) -> set[tuple[str, str]]:
        """Domains to avoid: the only domain a zone has in some write quorum through the slot."""
        out: set[tuple[str, str]] = set()
        for quorum in self._quorums_through(slots, position, wq):
            for zone in {z for z, _ in quorum}:
                domains = {w for w in quorum if w[0] == zone}
                if len(domains) == 1:
                    out |= domains
        return out

    # -- adherence -------------------------------------------------------------------------

    def is_ensemble_adhering(
        self, ensemble: Sequence[str], write_quorum: int, ack_quorum: int
    ) -> Adherence:
        """Upstream's levels; see the module docstring."""
        size = len(ensemble)
        if not size or len(set(ensemble)) != size:
            return Adherence.FAIL
        if size % write_quorum or write_quorum <= self.min_zones:
            return Adherence.FAIL
        located = [self._located(NodeId(n)) for n in ensemble]
        default = zone_and_domain(self.view.default_rack())
        if any(w is None or w == default for w in located):
            return Adherence.FAIL
        result = Adherence.MEETS_STRICT
        for window in windows_of(size, write_quorum):
            members = [located[p] for p in window]
            zones = {w[0] for w in members if w is not None}
            if len(zones) < self.min_zones or not _two_domains_per_repeated_zone(members):
                return Adherence.FAIL
            if len(zones) < self._desired(write_quorum):
                result = Adherence.MEETS_SOFT
        return result

    def are_acked_bookies_adhering(
        self, acked: Iterable[str], write_quorum: int, ack_quorum: int
    ) -> bool:
        """At least ``A`` acknowledgements, from ``min(W, m)`` zones or more."""
        nodes = set(acked)
        zones = {w[0] for n in nodes if (w := self._located(NodeId(n))) is not None}
        return len(nodes) >= ack_quorum and len(zones) >= min(write_quorum, self.min_zones)


def _two_domains_per_repeated_zone(members: Sequence[tuple[str, str] | None]) -> bool:
    by_zone: dict[str, list[str]] = {}
    for where in members:
        if where is not None:
            by_zone.setdefault(where[0], []).append(where[1])
    return all(len(ds) < 2 or len(set(ds)) >= 2 for ds in by_zone.values())
