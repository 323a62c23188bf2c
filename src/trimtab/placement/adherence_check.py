"""Adherence: how well a given ensemble keeps a policy's rules on the current topology.

Rack-aware (upstream ``isEnsembleAdheringToPlacementPolicy``, reference §2.6)
    FAIL if the ensemble is empty, if any write quorum spans fewer than
    ``min(W, minNumRacksPerWriteQuorum)`` racks (members of unknown location are not counted),
    or, with ``enforceMinNumRacksPerWriteQuorum``, if a member sits on the default rack;
    MEETS_STRICT otherwise. trimtab also fails an ensemble that names a node twice. With
    ``W > E`` the write quorums wrap round the ensemble as upstream's do (``(i + j) % E``):
    each holds every member, and needs ``min(W, minRacks)`` racks among them.

Region-aware (upstream always answers MEETS_STRICT, #1898; this is the real check)
    FAIL        a member twice, no member, region durability broken in some write quorum (some
                ``minRegions - 1`` regions hold ``A`` or more of its replicas), fewer than
                ``minRegions`` regions in all, or a rack rule broken while it is enforced;
    MEETS_SOFT  durable, but a write quorum spans fewer than ``min(W, minRacks)`` racks, or the
                ensemble uses fewer regions than it could (``min(E, regions in play)``), so it
                is not spread in equal shares;
    MEETS_STRICT everything holds.

Acked bookies (``areAckedBookiesAdheringToPlacementPolicy``)
    the acknowledging nodes span at least ``min(W, minRacks)`` racks (and, region-aware with
    durability, at least ``minRegions`` regions).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from trimtab.placement.contract import Adherence
from trimtab.placement.coverage import windows_of

__all__ = ["acked_span_ok", "durable", "rack_adherence", "region_adherence"]

Locate = Callable[[str], str | None]


def _region(rack: str) -> str:
    return rack[1:].split("/", 1)[0]


def _wrapped(size: int, write_quorum: int) -> tuple[tuple[int, ...], ...]:
    """The write quorums, wrapped as upstream does when ``W > E``: quorum ``i`` is members
    ``i, i+1, … i+W-1 mod E``, so each then holds every member (its distinct set is all E)."""
    return windows_of(size, min(write_quorum, size))


def _racks_ok(ensemble: Sequence[str], write_quorum: int, rack_of: Locate, min_racks: int) -> bool:
    need = min(write_quorum, min_racks)
    racks = [rack_of(n) for n in ensemble]
    for window in _wrapped(len(ensemble), write_quorum):
        if len({racks[p] for p in window if racks[p] is not None}) < need:
            return False
    return True


def rack_adherence(
    ensemble: Sequence[str],
    write_quorum: int,
    *,
    rack_of: Locate,
    min_racks: int,
    forbidden_rack: str | None = None,
) -> Adherence:
    """Rack-aware adherence; ``forbidden_rack`` is the default rack when enforcement is on."""
    if not ensemble or len(set(ensemble)) != len(ensemble):
        return Adherence.FAIL
    if forbidden_rack is not None and any(rack_of(n) == forbidden_rack for n in ensemble):
        return Adherence.FAIL
    if not _racks_ok(ensemble, write_quorum, rack_of, min_racks):
        return Adherence.FAIL
    return Adherence.MEETS_STRICT


def durable(
    ensemble: Sequence[str], write_quorum: int, ack_quorum: int, rack_of: Locate, min_regions: int
) -> bool:
    """No ``min_regions - 1`` regions hold ``ack_quorum`` replicas of any write quorum."""
    if min_regions < 2:
        return True
    racks = [rack_of(n) for n in ensemble]
    for window in _wrapped(len(ensemble), write_quorum):
        counts = Counter(_region(r) for p in window if (r := racks[p]) is not None)
        worst = sum(sorted(counts.values(), reverse=True)[: min_regions - 1])
        if worst > ack_quorum - 1:
            return False
    return True


def region_adherence(
    ensemble: Sequence[str],
    write_quorum: int,
    ack_quorum: int,
    *,
    rack_of: Locate,
    min_racks: int,
    min_regions: int,
    regions_in_play: int,
    forbidden_rack: str | None = None,
) -> Adherence:
    """Region-aware adherence as the module docstring defines it."""
    if not ensemble or len(set(ensemble)) != len(ensemble):
        return Adherence.FAIL
    racks = [r for r in map(rack_of, ensemble) if r is not None]
    regions = {_region(r) for r in racks}
    if min_regions >= 2 and len(regions) < min_regions:
        return Adherence.FAIL
    if not durable(ensemble, write_quorum, ack_quorum, rack_of, min_regions):
        return Adherence.FAIL
    racks_ok = _racks_ok(ensemble, write_quorum, rack_of, min_racks)
    if forbidden_rack is not None and (not racks_ok or forbidden_rack in racks):
        return Adherence.FAIL
    if not racks_ok or len(regions) < min(len(ensemble), regions_in_play):
        return Adherence.MEETS_SOFT
    return Adherence.MEETS_STRICT


def acked_span_ok(
    acked: Iterable[str],
    write_quorum: int,
    *,
    rack_of: Locate,
    min_racks: int,
    min_regions: int = 0,
) -> bool:
    """Whether acknowledging nodes span enough racks (and regions, when durability is on)."""
    racks = {r for r in map(rack_of, acked) if r is not None}
    if len(racks) < min(write_quorum, min_racks):
        return False
    return min_regions < 2 or len({_region(r) for r in racks}) >= min_regions
