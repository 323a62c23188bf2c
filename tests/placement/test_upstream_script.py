"""Upstream ``TestRackawareEnsemblePlacementPolicyUsingScript`` (apache/bookkeeper), ported with
upstream's test names, against a real rack script run by the script resolver.

Upstream's ``networkmappingscript.sh`` answers ``/<last character of the host>`` and exits 1
for a host ending in 0, failing the whole call; the script here follows the same rule (written
for ``/bin/sh``). The policy is built the way a user's config builds it: ``make_policy`` with
``reppDnsResolverClass=ScriptBasedMapping`` and ``networkTopologyScriptFileName``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import NotEnoughNodesError, ResolverError
from trimtab.placement import RackAwarePolicy
from trimtab.systems.bookkeeper.placement_setup import make_policy

from .support import quorums

SCRIPT = """#!/bin/sh
for host in "$@"; do
    last=$(printf '%s' "$host" | tail -c 1)
    [ "$last" = 0 ] && exit 1
    echo "/$last"
done
"""
RESOLVER = "org.apache.bookkeeper.net.ScriptBasedMapping"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "networkmappingscript.sh"
    path.write_text(SCRIPT)
    path.chmod(0o755)
    return path


def bookie(host: str) -> NodeId:
    return NodeId(f"{host}:3181")


def make(script: Path | str, members: Sequence[NodeId] = (), **config: object) -> RackAwarePolicy:
    cfg = Config.of(
        ensemblePlacementPolicy="rackaware",
        reppDnsResolverClass=RESOLVER,
        networkTopologyScriptFileName=str(script),
        **config,
    )
    policy = make_policy(cfg, rng=random.Random(1), host="10.9.9.9")
    assert isinstance(policy, RackAwarePolicy)
    if members:
        policy.on_cluster_changed(members, [])
    return policy


def covered(ensemble: Sequence[NodeId], wq: int) -> int:
    """Upstream's helper: write quorums whose hosts end in more than one distinct character."""
    return sum(len({ensemble[p][-6] for p in q}) > 1 for q in quorums(len(ensemble), wq))


def _covered_e3_e4(policy: RackAwarePolicy) -> tuple[int, int]:
    """Covered write quorums of a new E3/W2 and a new E4/W2 ensemble."""
    three, four = (covered(policy.new_ensemble(size, 2, 2).ensemble, 2) for size in (3, 4))
    return three, four


class TestRackawareEnsemblePlacementPolicyUsingScript:
    def testReplaceBookieWithEnoughBookiesInSameRack(self, script: Path) -> None:
        """127.0.0.2 and 127.0.1.2 share /2: the one is replaced by the other."""
        a = [bookie(h) for h in ("127.0.0.1", "127.0.0.2", "127.0.1.2", "127.0.0.4")]
        assert make(script, a).replace_bookie(1, 1, 1, [], a[1]).node == a[2]

    def testReplaceBookieWithEnoughBookiesInDifferentRack(self, script: Path) -> None:
        """Four racks, addr1 excluded: addr3 or addr4."""
        a = [bookie(f"127.0.0.{i}") for i in range(1, 5)]
        policy = make(script, a)
        assert policy.replace_bookie(1, 1, 1, [], a[1], exclude=[a[0]]).node in {a[2], a[3]}

    def testReplaceBookieWithNotEnoughBookies(self, script: Path) -> None:
        """Everyone else excluded: not enough bookies."""
        a = [bookie(f"127.0.0.{i}") for i in range(1, 5)]
        with pytest.raises(NotEnoughNodesError):
            make(script, a).replace_bookie(1, 1, 1, [], a[1], exclude=[a[0], a[2], a[3]])

    def testReplaceBookieWithScriptMappingError(self, script: Path) -> None:
        """127.0.0.0 breaks the script for its whole call; asked again host by host, 127.0.0.2
        still gets /2 and only 127.0.0.0 goes to the default rack, so it is the replacement."""
        a0, a1, a2 = (bookie(f"127.0.0.{i}") for i in range(3))
        policy = make(script, [a1])
        policy.on_cluster_changed([a0, a1, a2], [])
        assert policy.view.rack_of(a2) == "/2"
        assert policy.replace_bookie(1, 1, 1, [], a2, exclude=[a1]).node == a0

    def testReplaceBookieWithScriptMappingError2(self, script: Path) -> None:
        """The same with 127.0.0.0 joining first, alone."""
        a0, a1, a2 = (bookie(f"127.0.0.{i}") for i in range(3))
        policy = make(script, [a0])
        policy.on_cluster_changed([a0, a1, a2], [])
        assert policy.replace_bookie(1, 1, 1, [], a2, exclude=[a1]).node == a0

    def testNewEnsembleWithSingleRack(self, script: Path) -> None:
        """All on /1: E3 and E4 of W2 are placed, covering no write quorum."""
        assert _covered_e3_e4(make(script, [bookie(f"127.0.{i}.1") for i in range(4)])) == (0, 0)

    def testNewEnsembleWithMultipleRacks(self, script: Path) -> None:
        """One bookie on /1, three on /2: E3 and E4 of W2 cover exactly two write quorums."""
        a = [bookie(h) for h in ("127.0.0.1", "127.0.0.2", "127.0.1.2", "127.0.2.2")]
        assert _covered_e3_e4(make(script, a)) == (2, 2)

    def testNewEnsembleWithEnoughRacks(self, script: Path) -> None:
        """Four racks of two: every write quorum covered."""
        a = [bookie(f"127.0.{j}.{i}") for i in range(1, 5) for j in range(2)]
        assert _covered_e3_e4(make(script, a)) == (3, 4)

    def testRemoveBookieFromCluster(self, script: Path) -> None:
        """A bookie leaving is taken without error."""
        a = [bookie(h) for h in ("127.0.0.1", "127.0.0.2", "127.0.1.2", "127.0.0.4")]
        policy = make(script, a)
        policy.on_cluster_changed(a[1:], [])
        assert a[0] not in policy.view.writable

    def testNetworkTopologyScriptFileNameIsEmpty(self, script: Path) -> None:
        """No script: falls back to the default rack unless the rack minimum is enforced,
        where it is an error; with the script named, both start."""
        make("")
        with pytest.raises(ResolverError):
            make("", enforceMinNumRacksPerWriteQuorum=True)
        make(script, enforceMinNumRacksPerWriteQuorum=True)

    def testIfValidateConfFails(self, script: Path, tmp_path: Path) -> None:
        """A script that does not exist: the same rule as an empty name."""
        missing = tmp_path / "networkmappingscriptwithargs.sh"
        make(missing)
        with pytest.raises(ResolverError):
            make(missing, enforceMinNumRacksPerWriteQuorum=True)
        make(script, enforceMinNumRacksPerWriteQuorum=True)
