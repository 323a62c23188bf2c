"""Upstream ``TestWeightedRandomSelection`` and ``BookKeeperDiskSpaceWeightedLedgerPlacementTest``
(apache/bookkeeper), ported with upstream's test names.

``TestWeightedRandomSelection`` runs each case against upstream's two selector classes; trimtab
has one weighted sampler per pool (:class:`~trimtab.placement.weights.DiskWeights`), which also
chooses among a subset by the pool's own weights (what upstream's dynamic selector's
``getNextRandom(selectFrom)`` does), so each case runs once.

``BookKeeperDiskSpaceWeightedLedgerPlacementTest`` starts ten bookies that report made-up free
space, creates 2,000 ledgers of E3/W3 through a client with disk weights on (cap 3), and
checks the inclusion ratios. Here the same cluster is an inventory file and the client is the
``trimtab place`` command (``--weights disk``, the cap in a ``--config`` file, 2,000
ensembles); the periodic-update case drives a live policy through ``update_bookie_info``, the
seam the bookie-info reader feeds. Upstream's client places with the rack-aware policy and its
bookies all sit on the default rack, as here: one rack, so no ensemble covers a write quorum
on two racks and inclusion must still follow the weights (3 x, not less).
"""

from __future__ import annotations

import json
import random
import statistics
from collections import Counter
from itertools import pairwise
from pathlib import Path

from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.diskinfo import BookieInfo
from trimtab.placement.weights import DiskWeights, WeightRule
from trimtab.systems.bookkeeper.placement_setup import make_policy

runner = CliRunner()
KEYS = 50
DRAWS = 1_000_000


def _draws(weights: list[int], multiple: float) -> tuple[tuple[NodeId, ...], Counter[NodeId]]:
    pool = tuple(NodeId(f"k{i:02d}:3181") for i in range(len(weights)))
    sampler = DiskWeights(
        dict(zip(pool, map(float, weights), strict=True)), WeightRule(multiple=multiple)
    ).sampler(pool)
    rng = random.Random(11)
    return pool, Counter(sampler.draw(rng) for _ in range(DRAWS))


def _verify(weights: list[int], multiple: float, min_weight: int, median_weight: int) -> None:
    """Upstream's ``verifyResult``: each key's share, as a multiple of the median share, is
    within 5 % of ``min(w, multiple x median) / median`` (a zero weight counts as the minimum)."""
    pool, counts = _draws(weights, multiple)
    median_count = statistics.median(counts[k] for k in pool)
    for key, weight in zip(pool, weights, strict=True):
        expected = (weight or min_weight) / median_weight
        if multiple > 0:
            expected = min(expected, multiple)
        observed = counts[key] / median_count
        assert abs(expected - observed) / expected < 0.05, (key, weight, observed)


class TestWeightedRandomSelection:
    def testSelectionWithEqualWeights(self) -> None:
        """50 keys of 100: each within 5 % of 2 %."""
        _, counts = _draws([100] * KEYS, 3)
        assert all(abs(counts[k] / DRAWS - 0.02) / 0.02 < 0.05 for k in counts)

    def testSelectionWithAllZeroWeights(self) -> None:
        """50 keys of 0: uniform too."""
        _, counts = _draws([0] * KEYS, 3)
        assert len(counts) == KEYS
        assert all(abs(counts[k] / DRAWS - 0.02) / 0.02 < 0.05 for k in counts)

    def testSelectionWithSomeZeroWeights(self) -> None:
        """A third at 0, a third at 100, the rest at 200, cap 3: zeros weigh as 100."""
        third = KEYS // 3
        weights = [0] * third + [100] * third + [200] * (KEYS - 2 * third)
        _verify(weights, 3, 100, 100)

    def testSelectionWithUnequalWeights(self) -> None:
        """100 / 200 / 1000 by thirds, cap 4 x median (200): 1000 counts as 800."""
        third = KEYS // 3
        weights = [100] * third + [200] * third + [1000] * (KEYS - 2 * third)
        _verify(weights, 4, 100, 200)

    def testSelectionWithHotNode(self) -> None:
        """49 at 100 and one at 49,000 (ten times all the rest), cap 3: the hot key gets 3 x."""
        _verify([100] * (KEYS - 1) + [10 * (KEYS - 1) * 100], 3, 100, 100)

    def testSelectionWithHotNodeWithLimit(self) -> None:
        """The same hot key, the limit stated as upstream's second case: 3 x the median."""
        _verify([100] * (KEYS - 1) + [10 * (KEYS - 1) * 100], 3, 100, 100)

    def testSelectionFromSelectedNodesWithEqualWeights(self) -> None:
        """Choosing among half the keys only ever returns one of them."""
        pool = tuple(NodeId(f"k{i:02d}:3181") for i in range(KEYS))
        weights = DiskWeights(dict.fromkeys(pool, 100.0))
        subset = pool[: KEYS // 2]
        rng = random.Random(5)
        assert all(weights.choice(subset, rng) in subset for _ in range(1000))


# -- BookKeeperDiskSpaceWeightedLedgerPlacementTest ----------------------------------------------

FREE = 1_000_000
MULTIPLE = 3
BOOKIES = [NodeId(f"bookie{i}:3181") for i in range(10)]
LEDGERS = 2000


def _inventory(path: Path, free: dict[NodeId, int]) -> Path:
    """Upstream's bookies as inventory rows: default rack, 10 MB disks, ``free`` bytes free."""
    rows = [
        "cluster,node,region,rack,cores,memory_bytes,disk_total_bytes,disk_free_bytes,nic_bps,state"
    ]
    for node, bytes_free in free.items():
        rows.append(
            f"bk,{node},default-region,default-rack,8,{2**34},10000000,{bytes_free},{10**10},writable"
        )
    path.write_text("\n".join(rows) + "\n")
    return path


def _ledgers(tmp_path: Path, free: dict[NodeId, int], name: str = "inv.csv") -> Counter[NodeId]:
    """``trimtab place`` creating 2,000 ensembles of E3/W3 on ``free``: inclusion counts."""
    config = tmp_path / "client.conf"
    config.write_text(
        "ensemblePlacementPolicy=org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy\n"
        f"bookieMaxMultipleForWeightBasedPlacement={MULTIPLE}\n"
    )
    inventory = _inventory(tmp_path / name, free)
    args = ["place", "-i", str(inventory), "-E", "3", "-W", "3", "-A", "2", "--weights", "disk"]
    args += ["--count", str(LEDGERS), "--config", str(config), "--json", "--seed", "3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return Counter({NodeId(k): v for k, v in json.loads(result.output)["inclusion"].items()})


def _heavy_last_two() -> dict[NodeId, int]:
    return {b: FREE if i < 8 else MULTIPLE * FREE for i, b in enumerate(BOOKIES)}


def _ratios_hold(counts: Counter[NodeId], heavy: list[NodeId], light: list[NodeId]) -> None:
    for h in heavy:
        for lo in light:
            assert abs(counts[h] / counts[lo] - MULTIPLE) < 1, (h, lo, counts)


def _even(counts: Counter[NodeId], nodes: list[NodeId]) -> None:
    """Upstream's check for equal weights: neighbours differ by at most 30 %."""
    for x, y in pairwise(nodes):
        assert abs(counts[x] - counts[y]) * 100 / counts[y] <= 30, counts


class TestBookKeeperDiskSpaceWeightedLedgerPlacement:
    """Upstream's BookKeeperDiskSpaceWeightedLedgerPlacementTest (pytest collects Test* classes)."""

    def testDiskSpaceWeightedBookieSelection(self, tmp_path: Path) -> None:
        """Eight bookies at 1 MB free, two at 3 MB: the two are in 3 x as many ledgers."""
        counts = _ledgers(tmp_path, _heavy_last_two())
        _ratios_hold(counts, BOOKIES[8:], BOOKIES[:8])

    def testDiskSpaceWeightedBookieSelectionWithChangingWeights(self, tmp_path: Path) -> None:
        """Then bookies 0, 1 grow to 3 MB and 8, 9 shrink to 1 MB: the ratio follows."""
        _ratios_hold(_ledgers(tmp_path, _heavy_last_two()), BOOKIES[8:], BOOKIES[:8])
        changed = {b: MULTIPLE * FREE if i < 2 else FREE for i, b in enumerate(BOOKIES)}
        counts = _ledgers(tmp_path, changed, "changed.csv")
        _ratios_hold(counts, BOOKIES[:2], BOOKIES[2:])

    def testDiskSpaceWeightedBookieSelectionWithBookiesDying(self, tmp_path: Path) -> None:
        """The two heavy bookies die: the other eight share evenly and the dead get none."""
        counts = _ledgers(tmp_path, _heavy_last_two())
        _ratios_hold(counts, [BOOKIES[8]], [BOOKIES[0]])
        _ratios_hold(counts, [BOOKIES[9]], [BOOKIES[1]])
        alive = {b: f for b, f in _heavy_last_two().items() if b not in BOOKIES[8:]}
        counts = _ledgers(tmp_path, alive, "alive.csv")
        _even(counts, BOOKIES[:8])
        assert counts[BOOKIES[8]] == counts[BOOKIES[9]] == 0

    def testDiskSpaceWeightedBookieSelectionWithBookiesBeingAdded(self, tmp_path: Path) -> None:
        """Eight equal bookies share evenly; two added at 3 MB get 3 x the others."""
        counts = _ledgers(tmp_path, dict.fromkeys(BOOKIES[:8], FREE))
        _even(counts, BOOKIES[:8])
        counts = _ledgers(tmp_path, _heavy_last_two(), "added.csv")
        _ratios_hold(counts, BOOKIES[8:], BOOKIES[:8])

    def testDiskSpaceWeightedBookieSelectionWithPeriodicBookieInfoUpdate(self) -> None:
        """All report 1 MB, so ledgers spread evenly; a later bookie-info update says the last
        two have 3 MB, and the same live policy gives them 3 x from then on."""
        config = Config.of(
            ensemblePlacementPolicy="rackaware",
            diskWeightBasedPlacementEnabled=True,
            bookieMaxMultipleForWeightBasedPlacement=MULTIPLE,
        )
        where = {str(b): "/default-region/default-rack" for b in BOOKIES}
        policy = make_policy(config, resolver=where, rng=random.Random(9), host="10.1.1.1")
        policy.on_cluster_changed(BOOKIES, [])
        for update in (dict.fromkeys(BOOKIES, FREE), _heavy_last_two()):
            policy.update_bookie_info({b: BookieInfo(10_000_000, f) for b, f in update.items()})
            counts: Counter[NodeId] = Counter()
            for _ in range(LEDGERS):
                counts.update(policy.new_ensemble(3, 3, 2).ensemble)
            if len(set(update.values())) == 1:
                _even(counts, BOOKIES)
            else:
                _ratios_hold(counts, BOOKIES[8:], BOOKIES[:8])
