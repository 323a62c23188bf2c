"""Disk measurement, the read-only rule, the static registry and ZooKeeper target parsing."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.online.helpers import wait_until
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import MembershipError
from trimtab.systems.bookkeeper.bookieinfo.disk import (
    DiskUsage,
    FilesystemUsage,
    measure_disks,
    next_readonly,
)
from trimtab.systems.bookkeeper.registry import Membership, StaticRegistry, read_registry
from trimtab.systems.zookeeper import ZkTarget, decode_node_data, encode_node_data, zk_target


def _fake_fs(devices: dict[str, int], sizes: dict[int, tuple[int, int]]) -> dict[str, Any]:
    def stat(path: str) -> Any:
        return SimpleNamespace(st_dev=devices[path])

    def statvfs(path: str) -> Any:
        blocks, avail = sizes[devices[path]]
        return SimpleNamespace(f_blocks=blocks, f_bavail=avail, f_frsize=4096)

    return {"stat": stat, "statvfs": statvfs}


def test_directories_on_one_filesystem_count_it_once() -> None:
    """Two ledger dirs on one disk plus one on another: two filesystems summed, not three."""
    fs = _fake_fs({"/a": 1, "/b": 1, "/c": 2}, {1: (1000, 250), 2: (3000, 3000)})
    usage = measure_disks(["/a", "/b", "/c"], **fs)
    assert [f.directories for f in usage.filesystems] == [("/a", "/b"), ("/c",)]
    assert usage.info().total_disk_bytes == 4000 * 4096
    assert usage.info().free_disk_bytes == 3250 * 4096


def test_real_directory_matches_statvfs(tmp_path: Path) -> None:
    """Total is f_blocks*f_frsize and free is f_bavail*f_frsize, as upstream's usable space."""
    usage = measure_disks([tmp_path, tmp_path / "."])
    vfs = os.statvfs(tmp_path)
    assert len(usage.filesystems) == 1
    assert usage.total_bytes == vfs.f_blocks * vfs.f_frsize


def _usage(*used_percent: int) -> DiskUsage:
    return DiskUsage(
        tuple(FilesystemUsage(i, (f"/d{i}",), 100, 100 - u) for i, u in enumerate(used_percent))
    )


@pytest.mark.parametrize(
    ("readonly", "used", "expected"),
    [
        (False, (90,), False),
        (False, (96,), True),
        (False, (96, 50), False),
        (False, (96, 97), True),
        (True, (93,), True),
        (True, (89,), False),
        (True, (96, 89), False),
    ],
    ids=[
        "writable below the threshold stays writable",
        "writable above the threshold turns read-only",
        "one filesystem with room keeps it writable",
        "every filesystem full turns it read-only",
        "read-only inside the gap stays read-only",
        "read-only below the low-water mark turns writable",
        "one filesystem below the low-water mark is enough",
    ],
)
def test_readonly_rule_has_hysteresis(
    readonly: bool, used: tuple[int, ...], expected: bool
) -> None:
    """Read-only above diskUsageThreshold on every filesystem, writable again below the LWM."""
    assert next_readonly(readonly, _usage(*used), threshold=0.95, lwm_threshold=0.90) is expected


def test_registry_file_gives_states_addresses_and_rejections(tmp_path: Path) -> None:
    """Defaults fill state and address; bad and repeated rows are rejected, not fatal."""
    path = tmp_path / "nodes.csv"
    path.write_text(
        "id,state,address\n"
        "bk1:3181,,\n"
        "bk2:3181,readonly,127.0.0.1:9\n"
        "bk3:3181,down,\n"
        "not an id,writable,\n"
        "bk1:3181,writable,\n"
        "bk4:3181,sleepy,\n"
    )
    file = read_registry(path)
    assert file.membership.writable == {"bk1:3181"}
    assert file.membership.readonly == {"bk2:3181"}
    assert file.membership.addresses == {"bk1:3181": "bk1:3181", "bk2:3181": "127.0.0.1:9"}
    reasons = sorted(r.reason for r in file.rejected)
    assert len(reasons) == 3 and any("twice" in r for r in reasons)


def test_missing_registry_file_is_a_membership_error(tmp_path: Path) -> None:
    """A registry that does not exist says so in one line."""
    with pytest.raises(MembershipError, match="does not exist"):
        read_registry(tmp_path / "none.csv")


def test_static_registry_delivers_changes_and_keeps_the_last_good_view(tmp_path: Path) -> None:
    """Re-read on change (polled) or on demand; an unusable file keeps the previous view."""
    path = tmp_path / "nodes.jsonl"
    path.write_text('{"id": "bk1:3181"}\n')
    seen: list[Membership] = []
    registry = StaticRegistry(path, seen.append, poll_seconds=0.05)
    registry.start()
    try:
        assert seen[-1].writable == {"bk1:3181"}
        path.write_text('{"id": "bk1:3181"}\n{"id": "bk2:3181", "state": "readonly"}\n')
        wait_until(lambda: len(seen) == 2, what="poll picks up the change")
        assert seen[-1].readonly == {"bk2:3181"}
        assert registry.refresh() == seen[-1] and len(seen) == 2, "no change, no delivery"
        path.unlink()
        assert registry.refresh().members == {"bk1:3181", "bk2:3181"}
        assert registry.last_error is not None
    finally:
        registry.stop()


def test_membership_counts_a_node_in_both_sets_as_readonly() -> None:
    """During a mode switch a node is briefly in both sets: read-only wins."""
    m = Membership.of(
        writable=["a:1", "b:1"], readonly=["b:1"], addresses={"b:1": "x:1", "z:1": "y"}
    )
    assert m.writable == {NodeId("a:1")} and m.readonly == {NodeId("b:1")}
    assert dict(m.addresses) == {"b:1": "x:1"}


def test_zk_target_comes_from_flags_uri_or_servers() -> None:
    """Flags win over metadataServiceUri, which wins over zkServers/zkLedgersRootPath."""
    cfg = Config.of(zkServers="z1:2181", zkLedgersRootPath="/bk").bookie_info
    assert zk_target(cfg) == ZkTarget("z1:2181", "/bk")
    uri = Config.of(
        zkServers="z1:2181", metadataServiceUri="zk+hierarchical://a:1;b:2/root"
    ).bookie_info
    assert zk_target(uri) == ZkTarget("a:1,b:2", "/root")
    assert zk_target(uri, hosts="c:3", root="/x/") == ZkTarget("c:3", "/x")
    with pytest.raises(MembershipError, match="no ZooKeeper"):
        zk_target(Config().bookie_info)
    with pytest.raises(MembershipError, match="bad ZooKeeper root"):
        ZkTarget("a:1", "ledgers")


def test_znode_data_round_trips_and_tolerates_foreign_data() -> None:
    """Our JSON carries the address; a real bookie's data (or none) gives no address."""
    assert decode_node_data(encode_node_data("127.0.0.1:7")) == "127.0.0.1:7"
    assert decode_node_data(b"") is None
    assert decode_node_data(b"\x08\x01binary") is None
    assert decode_node_data(b'{"other": 1}') is None
