"""The default policy: any distinct writable nodes, uniformly."""

from __future__ import annotations

from collections import Counter

import pytest

from trimtab.errors import NotEnoughNodesError
from trimtab.placement import Adherence

from .support import default_policy, ids

NODES = ids(*(f"n{i}" for i in range(10)))
WHERE = dict.fromkeys(NODES, "/default-rack")


def test_ensembles_are_distinct_and_uniform() -> None:
    """E=3 over 10 nodes, 3000 ensembles: each node in about 900 (binomial sd ~25, 5 sd)."""
    policy = default_policy(WHERE, seed=11)
    counts: Counter[str] = Counter()
    for _ in range(3000):
        placed = policy.new_ensemble(3, 2, 2)
        assert len(set(placed.ensemble)) == 3
        assert placed.adherence is Adherence.MEETS_STRICT
        counts.update(placed.ensemble)
    assert all(abs(c - 900) < 5 * 25 for c in counts.values())


def test_read_only_and_departed_nodes_are_never_drawn() -> None:
    """Unlike upstream's weighted selector, read-only nodes never come back."""
    policy = default_policy(WHERE)
    policy.on_cluster_changed(NODES[2:], NODES[:1])
    for _ in range(200):
        assert not set(policy.new_ensemble(4, 2, 2).ensemble) & set(NODES[:2])


def test_not_enough_candidates_says_how_many() -> None:
    """8 excluded of 10: asking for 3 raises with requested 3, available 10, excluded 8."""
    policy = default_policy(WHERE)
    with pytest.raises(NotEnoughNodesError) as info:
        policy.new_ensemble(3, 2, 2, NODES[:8])
    assert (info.value.requested, info.value.available, info.value.excluded) == (3, 10, 8)


def test_replacement_avoids_the_ensemble() -> None:
    """The replacement is outside the ensemble and the exclusions."""
    policy = default_policy(WHERE)
    ensemble = NODES[:3]
    for _ in range(50):
        swap = policy.replace_bookie(3, 2, 2, ensemble, NODES[0], NODES[3:5])
        assert swap.node not in NODES[:5]
        assert swap.ensemble == (swap.node, *NODES[1:3])


def test_adherence_and_acks() -> None:
    """No rules: any ensemble without repeats adheres; any ack set is enough."""
    policy = default_policy(WHERE)
    assert policy.is_ensemble_adhering(NODES[:3], 2, 2) is Adherence.MEETS_STRICT
    assert policy.is_ensemble_adhering([], 2, 2) is Adherence.FAIL
    assert policy.are_acked_bookies_adhering(NODES[:1], 3, 2)


def test_close_is_idempotent() -> None:
    """uninitalize in upstream terms: harmless to call twice."""
    policy = default_policy(WHERE)
    policy.close()
    policy.close()
    assert policy.closed
