"""Replace to adhere: upstream's ``testReplaceToAdherePlacementPolicy*`` tests of
``TestRackawareEnsemblePlacementPolicy`` (upstream names), then trimtab's own checks: the
exact-minimum step, the zone-aware policy, and hypothesis invariants."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.placement import Adherence
from trimtab.placement.policy import PolicyBase
from trimtab.systems.bookkeeper.placement_setup import make_policy

R1, R2, R3 = "/default-region/r1", "/default-region/r2", "/default-region/r3"
RUNS = 50  # upstream repeats each case 1000 times; fixed seeds here, fewer runs


def addr(n: int) -> NodeId:
    """Upstream's ``addrN`` here: ``127.0.0.N:3181``."""
    return NodeId(f"127.0.0.{n}:3181")


def repp(racks: dict[int, str], seed: int, **config: Any) -> PolicyBase:
    settings_ = {
        "minNumRacksPerWriteQuorum": 2,
        "enforceMinNumRacksPerWriteQuorum": True,
        **config,
    }
    policy = make_policy(
        Config.of(**settings_),
        resolver={addr(n).host: rack for n, rack in racks.items()},
        rng=random.Random(seed),
    )
    assert isinstance(policy, PolicyBase)
    policy.on_cluster_changed([addr(n) for n in racks], [])
    return policy


NINE = {1: R1, 2: R1, 3: R1, 4: R2, 5: R2, 6: R2, 7: R3, 8: R3, 9: R3}
SIX = {1: R1, 2: R1, 3: R1, 4: R2, 5: R2, 6: R2}


def rack_of(n: NodeId) -> str:
    return NINE[int(n.host.rsplit(".", 1)[1])]


class TestRackawareEnsemblePlacementPolicy:
    def testReplaceToAdherePlacementPolicy(self) -> None:
        cases: list[tuple[list[int], list[object]]] = [
            ([1, 4, 7, 2, 5, 8, 9], [1, 4, 7, 2, 5, 8, 6]),
            ([6, 4, 7, 2, 5, 8, 3], [6, 1, 7, 2, 5, 8, 3]),
            ([1, 2, 3, 4, 5, 6, 7], [1, {R3}, 3, 4, {R1, R3}, 6, 7]),
            ([1, 2, 4, 5, 7, 8, 9], [1, {R2, R3}, *[{R1, R2, R3}] * 4, {R2, R3}]),
        ]
        for seed in range(RUNS):
            policy = repp(NINE, seed)
            for members, expected in cases:
                ensemble = [addr(n) for n in members]
                assert policy.is_ensemble_adhering(ensemble, 2, 2) is Adherence.FAIL
                result = policy.replace_to_adhere(7, 2, 2, ensemble)
                assert result.adherence is Adherence.MEETS_STRICT
                for node, want in zip(result.ensemble, expected, strict=True):
                    if isinstance(want, int):
                        assert node == addr(want), (members, result.ensemble)
                    else:
                        assert isinstance(want, set) and rack_of(node) in want

    def testReplaceToAdherePlacementPolicyWithOutOfOrder(self) -> None:
        for seed in range(RUNS):
            policy = repp(SIX, seed)
            ensemble = [addr(n) for n in range(1, 7)]
            assert policy.is_ensemble_adhering(ensemble, 2, 2) is Adherence.FAIL
            result = policy.replace_to_adhere(6, 2, 2, ensemble)
            assert result.adherence is Adherence.MEETS_STRICT

    def testReplaceToAdherePlacementPolicyWithNoMoreRackBookie(self) -> None:
        for seed in range(RUNS):
            policy = repp(SIX, seed)
            ensemble = [addr(1), addr(2), addr(4)]
            assert policy.is_ensemble_adhering(ensemble, 2, 2) is Adherence.FAIL
            result = policy.replace_to_adhere(3, 2, 2, ensemble)
            assert result.adherence is Adherence.FAIL
            assert result.ensemble == ()

    def testReplaceToAdherePlacementPolicyWithUnknowBookie(self) -> None:
        for seed in range(RUNS):
            policy = repp(SIX, seed)
            ensemble = [NodeId("127.0.0.10:3181"), NodeId("127.0.0.11:3181")]
            ensemble += [addr(n) for n in (3, 4, 5, 6)]
            assert policy.is_ensemble_adhering(ensemble, 2, 2) is Adherence.FAIL
            result = policy.replace_to_adhere(6, 2, 2, ensemble)
            assert result.adherence is Adherence.MEETS_STRICT
            got = result.ensemble
            assert SIX[int(got[0].host.rsplit(".", 1)[1])] == R1
            assert got[1:4] == (addr(5), addr(3), addr(4))
            assert SIX[int(got[4].host.rsplit(".", 1)[1])] == R1
            assert got[5] == addr(6)


class TestTrimtab:
    def test_an_adhering_ensemble_comes_back_unchanged(self) -> None:
        policy = repp(NINE, 1)
        ensemble = tuple(addr(n) for n in (1, 4, 7))
        result = policy.replace_to_adhere(3, 2, 2, ensemble)
        assert result.ensemble == ensemble and result.adherence is Adherence.MEETS_STRICT
        assert not result.notes

    def test_excluded_and_read_only_members_are_replaced(self) -> None:
        policy = repp(NINE, 1)
        policy.on_cluster_changed([addr(n) for n in range(1, 9)], [addr(9)])
        ensemble = [addr(n) for n in (1, 4, 9)]  # 9 is read-only; 4 is excluded
        result = policy.replace_to_adhere(3, 2, 2, ensemble, exclude=[addr(4)])
        assert result.adherence is Adherence.MEETS_STRICT
        assert result.ensemble[0] == addr(1)
        assert addr(4) not in result.ensemble and addr(9) not in result.ensemble

    def test_zone_aware_fewest_replacements(self) -> None:
        racks = {n: f"/zone{(n - 1) % 3 + 1}/ud{(n - 1) // 3 + 1}" for n in range(1, 10)}
        policy = make_policy(
            Config.of(ensemblePlacementPolicy="zoneaware"),
            resolver={addr(n).host: where for n, where in racks.items()},
            rng=random.Random(3),
        )
        policy.on_cluster_changed([addr(n) for n in racks], [])
        ensemble = [addr(n) for n in (1, 4, 7)]  # all zone1: FAIL
        assert policy.is_ensemble_adhering(ensemble, 3, 2) is Adherence.FAIL
        result = policy.replace_to_adhere(3, 3, 2, ensemble)
        # adhering means "not FAIL" (upstream's rule): one new zone already gives MEETS_SOFT
        assert result.adherence is Adherence.MEETS_SOFT
        assert sum(a != b for a, b in zip(result.ensemble, ensemble, strict=True)) == 1
        assert result.notes == ("replaced 1 of 3",)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    racks=st.lists(st.integers(1, 4), min_size=9, max_size=9),
    members=st.permutations(list(range(1, 10))),
    size=st.integers(3, 7),
    write=st.integers(2, 3),
    seed=st.integers(0, 1000),
)
def test_result_adheres_with_distinct_members_and_no_more_changes_than_one_by_one(
    racks: list[int], members: list[int], size: int, write: int, seed: int
) -> None:
    """Distinct members; adheres or is empty; keeps every member an adhering one-slot fix
    would keep (a single replacement found by brute force is never beaten by more)."""
    where = {n: f"/default-region/r{racks[n - 1]}" for n in range(1, 10)}
    policy = repp(where, seed)
    ensemble = [addr(n) for n in members[:size]]
    result = policy.replace_to_adhere(size, write, 2, ensemble)
    if not result.ensemble:
        assert result.adherence is Adherence.FAIL
        return
    assert len(set(result.ensemble)) == size
    assert result.adherence is not Adherence.FAIL
    changed = sum(a != b for a, b in zip(result.ensemble, ensemble, strict=True))
    one_fix = any(
        policy.is_ensemble_adhering([*ensemble[:at], addr(n), *ensemble[at + 1 :]], write, 2)
        is not Adherence.FAIL
        for at in range(size)
        for n in range(1, 10)
        if addr(n) not in ensemble
    )
    if one_fix:
        assert changed <= 1
