"""The default policy: any distinct writable nodes, at random (upstream
``DefaultEnsemblePlacementPolicy``).

Goals
    The baseline every other policy is measured against: no rack or region rules at all.

Constraints
    * Members are distinct, writable and not excluded. Unlike upstream, read-only nodes can
      never be drawn (upstream kept them in its weighted selector, §1.4).
    * Fewer candidates than asked for raises :class:`~trimtab.errors.NotEnoughNodesError`
      with the numbers (upstream checked only ``|known - excluded| >= E``).

Algorithm
    ``new_ensemble``: E bounded picks from the pool of every writable node, each refusing nodes
    already chosen or excluded (:func:`~trimtab.placement.selection.pick`); weights come from the
    seam (:mod:`~trimtab.placement.weights`); with inclusion-proportional sampling a plan of
    E nodes is drawn first and, there being no rack rule, used as is. ``replace_bookie``: one
    such pick, the ensemble excluded too.
    Adherence is MEETS_STRICT for any non-empty ensemble without repeats (upstream: always);
    reads are never reordered, LAC reads append the missing indices.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from trimtab.placement.contract import Adherence, EnsemblePlacement, Replacement, check_quorums
from trimtab.placement.policy import PolicyBase, Vacancy
from trimtab.placement.selection import Draft, pick, plan_for, replacement_rules

__all__ = ["DefaultPolicy"]

_RULES = replacement_rules(keep_coverage=False)  # distinct, not excluded


class DefaultPolicy(PolicyBase):
    """Random choice among writable nodes; see the module docstring."""

    REORDERS_READS = False

    def new_ensemble(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int, exclude: Iterable[str] = ()
    ) -> EnsemblePlacement:
        check_quorums(ensemble_size, write_quorum, ack_quorum)
        excluded = self._ids(exclude)
        index = self.view.index()
        self._require(index, ensemble_size, excluded)
        draft = Draft(index, None, excluded)
        checks = draft.checks(_RULES)
        pool = index.pool()
        plan = plan_for(index.weights, pool.nodes, excluded, ensemble_size, self.rng)
        for _ in range(ensemble_size):
            node = pick(pool, checks, self.rng, plan=plan)
            if node is None:
                raise self._not_enough(
                    index, ensemble_size, excluded, f"only {len(draft.chosen)} candidates left"
                )
            draft.add(node)
        ensemble = tuple(draft.chosen)
        return EnsemblePlacement(ensemble, self._adherence(ensemble))

    def _fill(self, vacancy: Vacancy) -> Replacement:
        index = self.view.index()
        draft = Draft(index, None, vacancy.excluded)
        node = pick(index.pool(), draft.checks(_RULES), self.rng)
        if node is None:
            detail = "no writable node outside the ensemble"
            raise self._not_enough(index, 1, vacancy.excluded, detail)
        return self._replaced(vacancy, node)

    def is_ensemble_adhering(
        self, ensemble: Sequence[str], write_quorum: int, ack_quorum: int
    ) -> Adherence:
        return self._adherence(tuple(ensemble))

    @staticmethod
    def _adherence(ensemble: Sequence[str]) -> Adherence:
        if not ensemble or len(set(ensemble)) != len(ensemble):
            return Adherence.FAIL
        return Adherence.MEETS_STRICT
