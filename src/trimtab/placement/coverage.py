"""Write-quorum coverage: the rack and region rules every round-robin write quorum must keep.

BookKeeper writes entry ``e`` of a ledger to the ``W`` ensemble members starting at position
``e mod E`` (round robin). So an ensemble of size ``E`` has ``E`` write quorums (windows)
``{j, j+1, …, j+W-1} mod E``, or a single one when ``E == W``. Position ``p`` belongs to the
``W`` windows starting at ``p-W+1 … p``; the ones near the end wrap around to position 0.

Two rules per window (upstream ``RRTopologyAwareCoverageEnsemble``, reference §2.4):

* **Rack coverage** (``RackQuorumCoverageSet``): the window must end up spanning at least
  ``m = min(W, minNumRacksPerWriteQuorum)`` racks. A candidate is accepted while the window's
  remaining slots can still bring in the racks it lacks::

      W - seen - 1  >=  m - |racks in window ∪ {candidate's rack}|

  (upstream phrases it as two cases; the first, "accept the first W-m+1 bookies anywhere", is
  implied by this one.) With ``W < 2`` or ``m < 2`` everything is accepted.

* **Region durability** (``RackOrRegionDurabilityCoverageSet``): with ``minRegions >= 2``, no set
  of ``minRegions - 1`` regions may hold ``A`` or more of the window's replicas, so fewer than
  ``minRegions`` regions can never complete an ack quorum alone. The worst set containing the
  candidate's region is that region plus the ``minRegions - 2`` fullest others, so the test is::

      count[region] + 1 + (sum of the minRegions-2 largest other counts)  <=  A - 1

  which is what upstream's recursion over subsets computes, without the recursion.

Worked example (E=5, W=3, m=2): windows are {0,1,2} {1,2,3} {2,3,4} {3,4,0} {4,0,1}. Racks
r1 r1 r2 r1 r2 cover every window with two racks; r1 r1 r1 … is refused at position 2, because
window {0,1,2} would have no slot left to bring a second rack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Protocol

from trimtab.cluster import NodeId
from trimtab.constraints import Hard

__all__ = [
    "CoverageContext",
    "QuorumCoverage",
    "covers_write_quorums",
    "windows_of",
]


@lru_cache(maxsize=256)
def windows_of(ensemble_size: int, write_quorum: int) -> tuple[tuple[int, ...], ...]:
    """The write quorums (as position tuples) of a round-robin ensemble; one when ``E == W``.

    >>> windows_of(4, 2)
    ((0, 1), (1, 2), (2, 3), (3, 0))
    >>> windows_of(3, 3)
    ((0, 1, 2),)
    """
    if ensemble_size == write_quorum:
        return (tuple(range(ensemble_size)),)
    return tuple(
        tuple((j + t) % ensemble_size for t in range(write_quorum)) for j in range(ensemble_size)
    )


@lru_cache(maxsize=256)
def _windows_at(ensemble_size: int, write_quorum: int) -> tuple[tuple[int, ...], ...]:
    """For each position, the windows (by index in :func:`windows_of`) that hold it."""
    at: list[list[int]] = [[] for _ in range(ensemble_size)]
    for w, members in enumerate(windows_of(ensemble_size, write_quorum)):
        for position in members:
            at[position].append(w)
    return tuple(tuple(ws) for ws in at)


class QuorumCoverage:
    """Per-window rack and region counts of an ensemble being built, with the two rules above.

    Mutable and cheap: ``accepts`` is a few dictionary lookups per window holding the position;
    ``add``/``remove`` keep the counts so an exact search can backtrack.
    """

    __slots__ = (
        "_dur_k",
        "_racks",
        "_regions",
        "_seen",
        "_windows_at",
        "ack_quorum",
        "check_durability",
        "check_racks",
        "ensemble_size",
        "min_racks",
        "min_regions",
        "write_quorum",
    )

    def __init__(
        self,
        ensemble_size: int,
        write_quorum: int,
        ack_quorum: int,
        *,
        min_racks: int,
        min_regions: int = 0,
    ) -> None:
        self.ensemble_size = ensemble_size
        self.write_quorum = write_quorum
        self.ack_quorum = ack_quorum
        self.min_racks = min(write_quorum, min_racks)
        self.min_regions = min_regions
        self.check_racks = write_quorum >= 2 and self.min_racks >= 2
        self.check_durability = min_regions >= 2
        self._dur_k = max(0, min_regions - 2)
        windows = windows_of(ensemble_size, write_quorum)
        self._windows_at = _windows_at(ensemble_size, write_quorum)
        self._racks: list[dict[str, int]] = [{} for _ in windows]
        self._regions: list[dict[str, int]] = [{} for _ in windows]
        self._seen = [0] * len(windows)

    def __repr__(self) -> str:
        return (
            f"QuorumCoverage(E={self.ensemble_size}, W={self.write_quorum},"
            f" A={self.ack_quorum}, racks>={self.min_racks}, regions>={self.min_regions})"
        )

    @property
    def active(self) -> bool:
        """Whether any rule can refuse a candidate at all."""
        return self.check_racks or self.check_durability

    def accepts(self, position: int, rack: str, region: str) -> bool:
        """Whether a node in ``rack``/``region`` may fill ``position`` under both rules."""
        at = self._windows_at[position]
        if self.check_racks:
            # W - seen - 1 >= m - distinct, rearranged to one comparison per window
            room = self.write_quorum - 1 - self.min_racks
            seen = self._seen
            for w in at:
                racks = self._racks[w]
                if room - seen[w] + len(racks) + (rack not in racks) < 0:
                    return False
        if self.check_durability:
            for w in at:
                if not self._durable(self._regions[w], region):
                    return False
        return True

    def _durable(self, counts: dict[str, int], region: str) -> bool:
        mine = counts.get(region, 0) + 1
        if self._dur_k:
            others = sorted((c for r, c in counts.items() if r != region), reverse=True)
            mine += sum(others[: self._dur_k])
        return mine <= self.ack_quorum - 1

    def add(self, position: int, rack: str, region: str) -> None:
        """Record a node in ``rack``/``region`` at ``position`` (only what a rule reads)."""
        at = self._windows_at[position]
        if self.check_racks:
            seen = self._seen
            for w in at:
                racks = self._racks[w]
                racks[rack] = racks.get(rack, 0) + 1
                seen[w] += 1
        if self.check_durability:
            for w in at:
                regions = self._regions[w]
                regions[region] = regions.get(region, 0) + 1

    def remove(self, position: int, rack: str, region: str) -> None:
        """Undo :meth:`add` (for backtracking)."""
        at = self._windows_at[position]
        if self.check_racks:
            for w in at:
                racks = self._racks[w]
                racks[rack] -= 1
                if not racks[rack]:
                    del racks[rack]
                self._seen[w] -= 1
        if self.check_durability:
            for w in at:
                regions = self._regions[w]
                regions[region] -= 1
                if not regions[region]:
                    del regions[region]

    def fresh(self) -> QuorumCoverage:
        """An empty coverage with the same sizes and rules."""
        return QuorumCoverage(
            self.ensemble_size,
            self.write_quorum,
            self.ack_quorum,
            min_racks=self.min_racks,
            min_regions=self.min_regions,
        )


class CoverageContext(Protocol):
    """What :func:`covers_write_quorums` reads from an ensemble being built (live)."""

    @property
    def coverage(self) -> QuorumCoverage | None: ...

    @property
    def position(self) -> int: ...

    @property
    def racks(self) -> Mapping[NodeId, str]: ...

    @property
    def regions(self) -> Mapping[NodeId, str]: ...


def covers_write_quorums() -> Hard[CoverageContext]:
    """Every write quorum holding the slot being filled can still meet its rack and region rules.

    The check reads the context's current ``position``, so it is prepared once per ensemble. A
    node whose location is unknown is refused while a rule is active.
    """

    def prepare(ctx: CoverageContext) -> Callable[[NodeId], bool]:
        coverage = ctx.coverage
        if coverage is None or not coverage.active:
            return lambda node: True
        racks = ctx.racks
        regions = ctx.regions
        accepts = coverage.accepts

        def check(node: NodeId) -> bool:
            rack = racks.get(node)
            region = regions.get(node)
            if rack is None or region is None:
                return False
            return accepts(ctx.position, rack, region)

        return check

    return Hard("every write quorum at this slot must still reach its racks and regions", prepare)
