"""Builders and *independent* checks for the placement tests.

The checks here re-derive the rules from their definitions (every round-robin write quorum,
brute force over rack sequences) without touching ``trimtab.placement.coverage``, so a property
test comparing the two is a real cross-check.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.placement import (
    Adherence,
    DefaultPolicy,
    MemoryStats,
    RackAwarePolicy,
    RegionAwarePolicy,
)

__all__ = [
    "brute_force_feasible",
    "ids",
    "independent_rack_adherence",
    "independent_region_adherence",
    "quorums",
    "rack_policy",
    "region_of",
    "region_policy",
    "sequence_ok",
]


def ids(*names: str) -> list[NodeId]:
    """``ids("a", "b")`` -> ``[NodeId("a:3181"), NodeId("b:3181")]``."""
    return [NodeId(f"{n}:3181") for n in names]


def region_of(rack: str) -> str:
    return rack.split("/")[1]


def quorums(size: int, write: int) -> list[list[int]]:
    """Round-robin write quorums by their definition: entry e goes to e, e+1, … e+W-1 mod E."""
    return [[(e + k) % size for k in range(write)] for e in range(size)]


def rack_policy(
    locations: Mapping[NodeId, str],
    *,
    seed: int = 1,
    readonly: Iterable[NodeId] = (),
    stats: MemoryStats | None = None,
    **config: Any,
) -> RackAwarePolicy:
    policy = RackAwarePolicy(
        config=Config.of(**config),
        resolver={str(k): v for k, v in locations.items()},
        rng=random.Random(seed),
        stats=stats,
    )
    ro = set(readonly)
    policy.on_cluster_changed([n for n in locations if n not in ro], ro)
    return policy


def region_policy(
    locations: Mapping[NodeId, str],
    *,
    seed: int = 1,
    stats: MemoryStats | None = None,
    local_location: str | None = None,
    **config: Any,
) -> RegionAwarePolicy:
    policy = RegionAwarePolicy(
        config=Config.of(**config),
        resolver={str(k): v for k, v in locations.items()},
        rng=random.Random(seed),
        stats=stats,
        local_location=local_location,
    )
    policy.on_cluster_changed(list(locations), [])
    return policy


def default_policy(locations: Mapping[NodeId, str], *, seed: int = 1) -> DefaultPolicy:
    policy = DefaultPolicy(rng=random.Random(seed))
    policy.on_cluster_changed(list(locations), [])
    return policy


def _racks_cover(racks: Sequence[str | None], write: int, need: int) -> bool:
    windows = quorums(len(racks), write)
    return all(len({racks[p] for p in w if racks[p] is not None}) >= need for w in windows)


def _durable(regions: Sequence[str], write: int, ack: int, min_regions: int) -> bool:
    if min_regions < 2:
        return True
    for w in quorums(len(regions), write):
        counts = sorted(Counter(regions[p] for p in w).values(), reverse=True)
        if sum(counts[: min_regions - 1]) >= ack:
            return False
    return True


def independent_rack_adherence(
    ensemble: Sequence[NodeId],
    write: int,
    locations: Mapping[NodeId, str],
    min_racks: int,
    *,
    forbidden: str | None = None,
) -> Adherence:
    if not ensemble or len(set(ensemble)) < len(ensemble):
        return Adherence.FAIL
    racks = [locations.get(n) for n in ensemble]
    if forbidden is not None and forbidden in racks:
        return Adherence.FAIL
    ok = _racks_cover(racks, write, min(write, min_racks))
    return Adherence.MEETS_STRICT if ok else Adherence.FAIL


def independent_region_adherence(
    ensemble: Sequence[NodeId],
    write: int,
    ack: int,
    locations: Mapping[NodeId, str],
    *,
    min_racks: int,
    min_regions: int,
    regions_in_play: int,
    forbidden: str | None = None,
) -> Adherence:
    if not ensemble or len(set(ensemble)) < len(ensemble):
        return Adherence.FAIL
    racks = [locations[n] for n in ensemble]
    regions = [region_of(r) for r in racks]
    if min_regions >= 2 and len(set(regions)) < min_regions:
        return Adherence.FAIL
    if not _durable(regions, write, ack, min_regions):
        return Adherence.FAIL
    racks_ok = _racks_cover(list(racks), write, min(write, min_racks))
    if forbidden is not None and (not racks_ok or forbidden in racks):
        return Adherence.FAIL
    spread = len(set(regions)) >= min(len(ensemble), regions_in_play)
    if not racks_ok or not spread:
        return Adherence.MEETS_SOFT
    return Adherence.MEETS_STRICT


def sequence_ok(
    racks: Sequence[str], write: int, ack: int, *, min_racks: int, min_regions: int = 0
) -> bool:
    """Whether this rack sequence meets the rack rule and region durability by definition."""
    need = min(write, min_racks)
    if need >= 2 and not _racks_cover(racks, write, need):
        return False
    return _durable([region_of(r) for r in racks], write, ack, min_regions)


def brute_force_feasible(
    capacity: Mapping[str, int],
    size: int,
    write: int,
    ack: int,
    *,
    min_racks: int,
    min_regions: int = 0,
) -> bool:
    """Whether some sequence of racks (each used at most its capacity) meets both rules.

    Plain enumeration of rack sequences; the only pruning is on capacity and on quorums that
    lie wholly inside the prefix built so far (those cannot change any more).
    """
    racks = sorted(r for r, n in capacity.items() if n > 0)
    need = min(write, min_racks)
    if sum(capacity[r] for r in racks) < size:
        return False
    if need < 2 and min_regions < 2:
        return True
    inner = [w for w in quorums(size, write) if max(w) - min(w) == write - 1]

    def ok(prefix: list[str], final: bool) -> bool:
        windows = quorums(size, write) if final else [w for w in inner if max(w) < len(prefix)]
        for w in windows:
            if need >= 2 and len({prefix[p] for p in w}) < need:
                return False
            if not _durable([region_of(prefix[p]) for p in w], write, ack, min_regions):
                return False
        return True

    def extend(prefix: list[str], left: Counter[str]) -> bool:
        if len(prefix) == size:
            return ok(prefix, final=True)
        for rack in racks:
            if left[rack] == 0:
                continue
            prefix.append(rack)
            left[rack] -= 1
            if ok(prefix, final=False) and extend(prefix, left):
                return True
            left[rack] += 1
            prefix.pop()
        return False

    return extend([], Counter({r: capacity[r] for r in racks}))
