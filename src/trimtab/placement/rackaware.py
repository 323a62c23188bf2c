"""The rack-aware policy: every write quorum spans ``min(W, minNumRacksPerWriteQuorum)`` racks.

Goals (upstream ``RackawareEnsemblePlacementPolicy``, reference §2.3-2.6, 2.9)
    1. Every round-robin write quorum covers ``m = min(W, minNumRacksPerWriteQuorum)`` racks
       whenever the candidates allow it (coverage rules: :mod:`~trimtab.placement.coverage`).
    2. Spread: the first member comes from the client's own rack when known; each later one
       from a rack not used yet (#3721), falling back to any rack.
    3. Replacement keeps the replaced node's rack, else takes a rack the rest of the ensemble
       does not use.

Constraints
    * Candidates are writable nodes minus exclusions and members already chosen. With
      ``enforceMinNumRacksPerWriteQuorum`` the default rack is never used and an ensemble that
      cannot meet the rack rule is an error, never a random fallback.
    * Every loop is bounded; with no acceptable node the call raises
      :class:`~trimtab.errors.NotEnoughNodesError` with the numbers (upstream #4324 spun).
    * With ``networkTopologyStabilizePeriodSeconds > 0``, a call that fails on the plain
      topology is retried once on the stabilized one, where recently departed nodes still sit.

Algorithm (``new_ensemble``)
    a. *Greedy, as upstream*: slot 0 from the local rack (else anywhere); slot p > 0 from a
       rack outside the racks used since the last fallback, else anywhere. Each pick is a bounded
       draw (:func:`~trimtab.placement.selection.pick`) among nodes passing the hard rules:
       distinct, not excluded, every write quorum at the slot still coverable.
    b. *Exact*: if some slot has no acceptable node, search rack sequences
       (:mod:`~trimtab.placement.solver`); upstream would fall back to a random node here.
    c. *No covering ensemble exists*: enforced -> error; otherwise step a again without the
       coverage rule: racks still rotate slot by slot (each write quorum spans as many racks as
       there are) and the weights' plan still drives the draws, so inclusion stays
       proportional to weight even on a single rack; graded by the full check (FAIL).

Disk weights (:mod:`~trimtab.placement.weights`)
    Rack choice is unchanged; each pick is weighted inside its scope. With inclusion-
    proportional sampling and at least E racks, step a first plans E *racks* by their total
    weight (systematic PPS) and one node in each by weight, and the slots take the planned
    nodes: node inclusion is then ``E·w/Σw`` unless a rack is certain to be used (one member
    per rack cannot give a rack more). Fewer racks than E: a plan of nodes, taken when a slot
    accepts them. Fallbacks and the exact search draw by weight slot by slot.

Worked example (E=5, W=3, m=2; racks r1={a,b}, r2={c}, r3={d,e}; local rack r2)
    slot 0 from r2: c; slot 1 outside {r2}: say a (r1); slot 2 outside {r1,r2}: d (r3);
    slot 3 outside {r1,r2,r3} is empty, so anywhere: b (r1), and the list restarts from r1;
    slot 4 outside {r1}: e (r3). Ensemble c a d b e; quorums {c,a,d} {a,d,b} {d,b,e} {b,e,c}
    {e,c,a} all span two racks or more: MEETS_STRICT.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Iterable, Sequence

from trimtab.cluster import NodeId
from trimtab.constraints import Constraints
from trimtab.errors import NotEnoughNodesError
from trimtab.placement.adherence_check import acked_span_ok, rack_adherence
from trimtab.placement.contract import Adherence, EnsemblePlacement, Replacement, check_quorums
from trimtab.placement.coverage import QuorumCoverage
from trimtab.placement.policy import PolicyBase, Vacancy
from trimtab.placement.sampling import Plan
from trimtab.placement.selection import (
    CandidateIndex,
    Draft,
    ensemble_rules,
    pick,
    plan_for,
    replacement_rules,
)
from trimtab.placement.solver import solve_racks

__all__ = ["RackAwarePolicy", "exact_fill", "random_fill"]

Check = Callable[[NodeId], bool]
_ENSEMBLE = ensemble_rules()
_REPLACE = replacement_rules(keep_coverage=False)
_REPLACE_COVERED = replacement_rules(keep_coverage=True)


class RackAwarePolicy(PolicyBase):
    """Rack-aware ensembles, replacements, adherence and reads; see the module docstring."""

    # -- new ensembles ---------------------------------------------------------------------

    def new_ensemble(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int, exclude: Iterable[str] = ()
    ) -> EnsemblePlacement:
        check_quorums(ensemble_size, write_quorum, ack_quorum)
        excluded = self._ids(exclude)
        return self._last_resort(
            lambda stable: self._new(ensemble_size, write_quorum, ack_quorum, excluded, stable)
        )

    @property
    def enforce(self) -> bool:
        return self.placement.enforce_min_num_racks_per_write_quorum

    def _new(
        self, size: int, wq: int, aq: int, excluded: frozenset[NodeId], stabilized: bool
    ) -> EnsemblePlacement:
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.enforce)
        self._require(index, size, excluded)
        min_racks = self.placement.min_num_racks_per_write_quorum
        coverage = QuorumCoverage(size, wq, aq, min_racks=min_racks)
        notes: list[str] = []
        draft = Draft(index, coverage, excluded)
        hopeless = coverage.check_racks and len(index.by_rack) < coverage.min_racks
        if hopeless or not self._greedy(draft, size):
            found, why = exact_fill(
                index, coverage.fresh(), excluded, self.rng, budget=self.search_budget
            )
            notes.append(f"greedy pass found no covering node; exact search: {why}")
            if found is None:
                if self.enforce and coverage.check_racks:
                    raise self._not_enough(
                        index,
                        size,
                        excluded,
                        f"no ensemble puts every write quorum of {wq} on"
                        f" {coverage.min_racks} racks ({len(index.by_rack)} racks usable)",
                    )
                found = Draft(index, None, excluded)
                if not self._greedy(found, size, _REPLACE):
                    raise self._not_enough(
                        index, size, excluded, f"only {len(found.chosen)} candidates"
                    )
                notes.append("no covering ensemble exists: spread over as many racks as possible")
            draft = found
        ensemble = tuple(draft.chosen)
        if draft.coverage is not None and not stabilized:
            # Built under the coverage rules from writable nodes: every write quorum spans
            # min(W, minRacks) racks (the rule leaves no window short at its last slot) and
            # no member is on a skipped default rack, so the full check could only agree.
            adherence = Adherence.MEETS_STRICT
        else:
            adherence = self.is_ensemble_adhering(ensemble, wq, aq)
        return EnsemblePlacement(ensemble, adherence, tuple(notes))

    def _greedy(self, draft: Draft, size: int, rules: Constraints[Draft] = _ENSEMBLE) -> bool:
        """Fill every slot upstream's way; False at the first slot with no acceptable node.

        With ``rules`` that drop the coverage rule this is the fill used when no covering
        ensemble exists: racks still rotate slot by slot, so each write quorum spans as many
        racks as the candidates allow, and weights still plan the draws."""
        index = draft.index
        everywhere = index.pool()
        local = self._local_rack(index)
        used: set[str] = set()
        checks = draft.checks(rules)
        plan = plan_for(
            index.weights, everywhere.nodes, draft.excluded, size, self.rng, index.rack_of
        )
        for position in range(size):
            node = None
            if position == 0:
                if local is not None:
                    node = pick(index.pool(local), checks, self.rng, plan=plan)
            elif len(used) < len(index.by_rack):  # some rack not used yet
                node = pick(
                    everywhere, checks, self.rng, avoid_racks=used, rack_of=index.rack_of, plan=plan
                )
            if node is None:
                node = pick(everywhere, checks, self.rng, plan=plan)
                used.clear()  # a fallback starts the list of racks to avoid again (#3721)
            if node is None:
                return False
            draft.add(node)
            used.add(index.rack_of[node])
        return True

    def _local_rack(self, index: CandidateIndex) -> str | None:
        local = self.local_location
        if local is None or local == self.view.default_rack() or local not in index.by_rack:
            return None
        return local

    def select_one(
        self,
        draft: Draft,
        checks: Sequence[Check],
        *,
        avoid_racks: Collection[str],
        stabilized: bool,
        plan: Plan | None = None,
    ) -> NodeId | None:
        """One node of this policy's own pools for a slot of someone else's ``draft``: outside
        ``avoid_racks`` if possible, else anywhere here (region-aware composes regions so);
        ``plan`` (from :meth:`plan_slots`) is preferred when it fits."""
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.enforce)
        everywhere = index.pool()
        node = None
        if len(avoid_racks) < len(index.by_rack):  # some rack of this policy not used yet
            node = pick(everywhere, checks, self.rng, avoid_racks, index.rack_of, plan=plan)
        if node is not None or not avoid_racks:
            return node
        return pick(everywhere, checks, self.rng, plan=plan)

    def plan_slots(
        self, excluded: frozenset[NodeId], size: int, *, stabilized: bool
    ) -> Plan | None:
        """An inclusion-proportional plan of ``size`` of this policy's nodes (None unless the
        weights sample proportionally); region-aware asks one per region."""
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.enforce)
        return plan_for(index.weights, index.nodes, excluded, size, self.rng, index.rack_of)

    # -- replacement -----------------------------------------------------------------------

    def _fill(self, vacancy: Vacancy) -> Replacement:
        return self._last_resort(lambda stable: self._replace(vacancy, stable))

    def _replace(self, vacancy: Vacancy, stabilized: bool) -> Replacement:
        """The replaced node's rack, else a rack the others do not use, else a node keeping
        the quorums covered, else (not enforced) any node."""
        target, excluded = vacancy.target, vacancy.excluded
        index = self.view.index(stabilized=stabilized, skip_default_rack=self.enforce)
        draft = Draft(index, None, excluded)
        checks = draft.checks(_REPLACE)
        everywhere = index.pool()
        notes: list[str] = []
        home: str | None = self.view.home_rack(target)
        node = pick(index.pool(home), checks, self.rng) if home is not None else None
        if node is None:
            others = {
                r for n in vacancy.current if n != target if (r := self.view.remembered_rack(n))
            }
            node = pick(everywhere, checks, self.rng, avoid_racks=others, rack_of=index.rack_of)
        if node is None:
            node = self._keeping_coverage(index, vacancy)
            notes.append("no free rack: a node keeping the quorums covered")
        if node is None and not self.enforce:
            node = pick(everywhere, checks, self.rng)
            notes[-1] = "no free rack and no covering node: random choice"
        if node is None:
            raise self._not_enough(index, 1, excluded, f"no node can replace {target}")
        return self._replaced(vacancy, node, notes)

    def _keeping_coverage(self, index: CandidateIndex, vacancy: Vacancy) -> NodeId | None:
        """A node that keeps every write quorum through the replaced slot covered, if any."""
        min_racks = self.placement.min_num_racks_per_write_quorum
        draft = self._vacancy_draft(index, vacancy, min_racks=min_racks)
        if draft is None:
            return None
        return pick(index.pool(), draft.checks(_REPLACE_COVERED), self.rng)

    # -- replace to adhere (the hooks adherence_repair calls) ------------------------------

    def repair_candidates(self) -> CandidateIndex:
        return self.view.index(skip_default_rack=self.enforce)

    def repair_coverage(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int
    ) -> QuorumCoverage:
        """Every write quorum on ``min(W, minRacks)`` racks."""
        min_racks = self.placement.min_num_racks_per_write_quorum
        return QuorumCoverage(ensemble_size, write_quorum, ack_quorum, min_racks=min_racks)

    # -- adherence -------------------------------------------------------------------------

    def is_ensemble_adhering(
        self, ensemble: Sequence[str], write_quorum: int, ack_quorum: int
    ) -> Adherence:
        """Upstream's check: every write quorum spans ``min(W, minRacks)`` known racks, and no
        member is on the default rack while the minimum is enforced."""
        return rack_adherence(
            ensemble,
            write_quorum,
            rack_of=self.view.rack_lookup(),
            min_racks=self.placement.min_num_racks_per_write_quorum,
            forbidden_rack=self.view.default_rack() if self.enforce else None,
        )

    def are_acked_bookies_adhering(
        self, acked: Iterable[str], write_quorum: int, ack_quorum: int
    ) -> bool:
        """The acknowledging nodes span ``min(W, minRacks)`` racks (``enforceMinNumFaultDomains
        ForWrite`` holds the ack until they do)."""
        return acked_span_ok(
            acked,
            write_quorum,
            rack_of=self.view.remembered_rack,
            min_racks=self.placement.min_num_racks_per_write_quorum,
        )


def exact_fill(
    index: CandidateIndex,
    coverage: QuorumCoverage,
    excluded: frozenset[NodeId],
    rng: random.Random,
    *,
    budget: int,
) -> tuple[Draft | None, str]:
    """An ensemble keeping ``coverage`` (empty) found by exact search over racks, or None and
    why."""
    found = solve_racks(index.free_by_rack(excluded), coverage.fresh(), rng, budget=budget)
    if found.racks is None:
        return None, found.reason
    draft = Draft(index, coverage, excluded)
    checks = draft.checks(_ENSEMBLE)
    for rack in found.racks:
        node = pick(index.pool(rack), checks, rng)
        assert node is not None, "the search counted a free node in this rack"
        draft.add(node)
    return draft, f"found in {found.steps} steps"


def random_fill(
    index: CandidateIndex,
    excluded: frozenset[NodeId],
    size: int,
    rng: random.Random,
    not_enough: Callable[[CandidateIndex, int, frozenset[NodeId], str], NotEnoughNodesError],
) -> Draft:
    """Any ``size`` distinct candidates (rules on racks dropped), or the not-enough error."""
    draft = Draft(index, None, excluded)
    checks = draft.checks(_REPLACE)
    for _ in range(size):
        node = pick(index.pool(), checks, rng)
        if node is None:
            raise not_enough(index, size, excluded, f"only {len(draft.chosen)} candidates")
        draft.add(node)
    return draft
