"""Disk info: one rule for an unknown free space, and one sink protocol every consumer meets."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.online.helpers import RecordingSink
from trimtab.cli import app
from trimtab.cluster import NodeId
from trimtab.config import Config, PolicyName
from trimtab.diskinfo import BookieInfo, BookieInfoSink, disk_info
from trimtab.systems.bookkeeper.bookieinfo.feed import PolicyFeed
from trimtab.systems.bookkeeper.placement_setup import make_policy

GB = 10**9
HEADER = (
    "cluster,node,region,rack,cores,memory_bytes,disk_total_bytes,nic_bps,state,disk_free_bytes"
)


def _inventory(path: Path, unknown_free: str) -> Path:
    """Four writable nodes; b3's free space is ``unknown_free`` (empty: unknown)."""
    disks = [(100, "40"), (200, "150"), (300, "300"), (400, unknown_free)]
    rows = [HEADER]
    for i, (gb, free) in enumerate(disks):
        cell = str(int(free) * GB) if free else ""
        rows.append(f"c,b{i}:3181,dc1,r{i % 2},8,68719476736,{gb * GB},10000000000,writable,{cell}")
    path.write_text("\n".join(rows) + "\n")
    return path


def _run(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_place_and_diskfill_read_an_unknown_free_space_alike(tmp_path: Path) -> None:
    """In ``place`` and ``simulate diskfill -i`` alike, a node without disk_free_bytes weighs
    as the smallest free space known (40 GB here), never as an empty disk."""
    unknown = _inventory(tmp_path / "unknown.csv", "")
    smallest = _inventory(tmp_path / "smallest.csv", "40")
    place = ["place", "-E", "1", "-W", "1", "-A", "1", "--policy", "default", "--weights", "disk"]
    placed = [
        _run(*place, "-i", str(p), "--count", "4000", "--seed", "3") for p in (unknown, smallest)
    ]
    assert placed[0]["inclusion"] == placed[1]["inclusion"]
    assert placed[0]["ensembles"] == placed[1]["ensembles"]
    fill = ["simulate", "diskfill", "--policy", "default", "--refresh", "0"]
    filled = [_run(*fill, "-i", str(p)) for p in (unknown, smallest)]
    assert filled[0] == {**filled[1], "setting": filled[0]["setting"]}
    assert filled[0]["initial_bytes"] == (60 + 50 + 0 + 360) * GB  # b3 holds 400 - 40 GB


def test_an_unknown_free_space_has_no_info_unless_a_number_is_needed() -> None:
    """Without ``assume_unknown`` the node is left out (the policy gives it the smallest
    weight); with it, the node gets the smallest positive free space known, at most its size."""
    rows = [("b", 500.0, math.nan), ("a", 100.0, 40.0), ("c", 30.0, None), ("d", 80.0, 0.0)]
    assert disk_info(rows) == {NodeId("a"): BookieInfo(100, 40), NodeId("d"): BookieInfo(80, 0)}
    assumed = disk_info(rows, assume_unknown=True)
    assert list(assumed) == ["a", "b", "c", "d"]
    assert assumed[NodeId("b")] == BookieInfo(500, 40)
    assert assumed[NodeId("c")] == BookieInfo(30, 30)  # never more than its own disk


def test_with_no_free_space_known_every_disk_counts_as_empty() -> None:
    """Nothing to compare with: the simulator's disks start empty."""
    rows = [("a", 100.0, None), ("b", 200.0, math.nan)]
    assert disk_info(rows) == {}
    assert disk_info(rows, assume_unknown=True) == {
        NodeId("a"): BookieInfo(100, 100),
        NodeId("b"): BookieInfo(200, 200),
    }


def _sinks() -> list[tuple[str, BookieInfoSink]]:
    """Every implementation of the sink: the four policies, the watch feed, the test fake."""
    config = Config()
    found: list[tuple[str, BookieInfoSink]] = []
    for kind in PolicyName:
        policy = make_policy(
            Config.of(ensemblePlacementPolicy=kind.value), resolver={}, rng=random.Random(1)
        )
        found.append((f"{kind.value} policy", policy))
    feed_policy = make_policy(config, rng=random.Random(1))
    found.append(("the watch feed", PolicyFeed(feed_policy, config.placement)))
    found.append(("the tests' recording sink", RecordingSink()))
    return found


@pytest.mark.parametrize(("name", "sink"), _sinks(), ids=[n for n, _ in _sinks()])
def test_every_sink_satisfies_the_one_protocol(name: str, sink: BookieInfoSink) -> None:
    """Each consumer the reader can feed is a BookieInfoSink and takes a cluster and disk info."""
    assert isinstance(sink, BookieInfoSink), name
    sink.on_cluster_changed(["a:3181", "b:3181"], [])
    sink.update_bookie_info({"a:3181": BookieInfo(100, 40), "b:3181": (100, 60)})
    assert sink.on_cluster_changed(["a:3181"], []) == {NodeId("b:3181")}
