"""Broker filters on real policy files: isolation policies in ``pulsar-admin
ns-isolation-policy`` JSON, anti-affinity groups, and how every shedder and the placement of
unload-only moves obey them; plus the top-K report's filters and rounding."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.shedding import upstream as up
from tests.shedding.test_cli_shed import ARGS, EXAMPLES
from tests.strategies import shedding_snapshots
from trimtab.cli import app
from trimtab.config import Config
from trimtab.errors import InputError
from trimtab.shedding import (
    Bundle,
    BundleLoads,
    LoadSnapshot,
    Reason,
    ShedderState,
    TransferShedder,
    assign_destinations,
    shedder_for,
)
from trimtab.shedding.base import reportable
from trimtab.shedding.filters import (
    AntiAffinityGroups,
    IsolationPolicies,
    IsolationPolicy,
    Policies,
    is_system_namespace,
)
from trimtab.shedding.snapshot import BundleIndex
from trimtab.systems.pulsar.isolation import read_anti_affinity, read_isolation_policies

#: ``pulsar-admin ns-isolation-policy list pulsar-eu`` as it prints it.
LISTED = {
    "gold": {
        "namespaces": ["my-tenant/my-namespaceE", "gold/.*"],
        "primary": ["broker5"],
        "secondary": ["broker[34]"],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "2", "usage_threshold": "80"},
        },
    }
}


def write(tmp_path: Path, name: str, doc: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


class TestIsolationPolicyFiles:
    def test_list_output_is_read_as_policies_in_file_order(self, tmp_path: Path) -> None:
        policies = read_isolation_policies(write(tmp_path, "list.json", LISTED))
        (gold,) = policies.policies
        assert gold.name == "gold" and gold.min_limit == 2
        assert policies.policy_for("gold/ns1") is gold
        assert policies.policy_for("my-tenant/my-namespaceEE") is None, "full match only"

    def test_one_policy_get_output_is_read_too(self, tmp_path: Path) -> None:
        policies = read_isolation_policies(write(tmp_path, "gold.json", LISTED["gold"]))
        assert [p.name for p in policies.policies] == ["gold"]

    @pytest.mark.parametrize(
        ("doc", "words"),
        [
            ({"p": {"namespaces": ["a/("], "primary": ["x"]}}, "is not a regular expression"),
            ({"p": {"namespaces": ["a/b"]}}, "namespaces and primary"),
            ({"p": {"namespaces": "a/b", "primary": ["x"]}}, "must be a list of strings"),
            (
                {
                    "p": {
                        "namespaces": ["a/b"],
                        "primary": ["x"],
                        "auto_failover_policy": {"policy_type": "other"},
                    }
                },
                "min_available",
            ),
            ([1, 2], "JSON object of policies"),
        ],
    )
    def test_bad_files_are_refused_naming_the_file(
        self, tmp_path: Path, doc: object, words: str
    ) -> None:
        path = write(tmp_path, "bad.json", doc)
        with pytest.raises(InputError, match=words) as caught:
            read_isolation_policies(path)
        assert str(path) in str(caught.value)


class TestIsolationCandidates:
    BROKERS = tuple(f"broker{i}:8080" for i in range(1, 7))

    def policies(self, min_limit: int) -> IsolationPolicies:
        gold = IsolationPolicy.of(
            "gold", ["gold/.*"], ["broker5"], ["broker[34]"], min_limit=min_limit
        )
        return IsolationPolicies((gold,))

    def test_primaries_only_while_enough_are_up(self) -> None:
        assert self.policies(1).candidates("gold/ns", self.BROKERS) == {"broker5:8080"}

    def test_secondaries_join_when_fewer_primaries_than_min_limit(self) -> None:
        assert self.policies(2).candidates("gold/ns", self.BROKERS) == {
            "broker3:8080",
            "broker4:8080",
            "broker5:8080",
        }

    def test_other_namespaces_use_shared_brokers_only(self) -> None:
        """A broker that is some policy's primary is not shared; secondaries still are."""
        shared = self.policies(1).candidates("other/ns", self.BROKERS)
        assert shared == set(self.BROKERS) - {"broker5:8080"}


class TestAntiAffinity:
    def test_groups_from_json_and_csv(self, tmp_path: Path) -> None:
        from_json = read_anti_affinity(write(tmp_path, "g.json", {"g": ["a/x", "a/y"]}))
        csv_path = tmp_path / "g.csv"
        csv_path.write_text("namespace,group\na/x,g\na/y,g\n", encoding="utf-8")
        assert dict(from_json.groups) == dict(read_anti_affinity(csv_path).groups)
        assert from_json.group_of("a/x") == "g" and from_json.group_of("a/z") is None

    def test_a_transfer_never_lands_next_to_its_group(self) -> None:
        """Namespaces A and E share a group, and A lives on broker1: E1 may not go to broker1
        (it owns the group's bundles, brokers 2-4 own none), so broker5 sheds nothing and
        broker4's D1 goes to broker1 instead."""
        groups = AntiAffinityGroups(
            {"my-tenant/my-namespaceA": "g", "my-tenant/my-namespaceE": "g"}
        )
        snap = replace(up.five(), policies=Policies(anti_affinity=groups))
        result = TransferShedder(up.config(shed_bundles_with_policies=True)).cycle(
            snap, ShedderState(), now=up.NOW
        )
        assert {(m.source, m.bundle, m.destination) for m in result.moves} == {
            ("broker4", up.BUNDLE_D1, "broker1")
        }
        assert any(
            d.broker == "broker5" and d.reason is Reason.NO_BUNDLES for d in result.decisions
        )


class TestPlacementObeysFilters:
    @pytest.mark.parametrize("strategy", ["transfer", "threshold", "overload", "uniform"])
    def test_unload_only_moves_land_on_allowed_brokers(self, strategy: str) -> None:
        """Namespace E may live on broker5, or on broker3 and broker4 when fewer than two
        primaries are up: its bundles only ever go to broker3 or broker4."""
        gold = IsolationPolicy.of(
            "gold", ["my-tenant/my-namespaceE"], ["broker5"], ["broker[34]"], min_limit=2
        )
        snap = replace(up.five(broker5=99), policies=Policies(isolation=IsolationPolicies((gold,))))
        cfg = up.config(shed_bundles_with_policies=True, transfer_enabled=False, strategy=strategy)
        for seed in range(20):
            result = shedder_for(cfg).cycle(snap, ShedderState(), now=up.NOW)
            placed = assign_destinations(result, snap, cfg, random.Random(seed), now=up.NOW)
            for move in placed.moves:
                if move.bundle.startswith("my-tenant/my-namespaceE"):
                    assert move.destination in {"broker3", "broker4"}

    def test_a_bundle_only_its_own_broker_may_hold_is_not_unloaded(self) -> None:
        """The modular shedders ask the filters too: E may live on broker5 alone, so the hot
        broker5 keeps it (upstream's shouldNamespacePoliciesUnload)."""
        only5 = IsolationPolicy.of("gold", ["my-tenant/my-namespaceE"], ["broker5"])
        snap = replace(
            up.five(broker5=99), policies=Policies(isolation=IsolationPolicies((only5,)))
        )
        cfg = up.config(shed_bundles_with_policies=True, strategy="overload")
        result = shedder_for(cfg).cycle(snap, ShedderState(), now=up.NOW)
        assert not [m for m in result.moves if m.source == "broker5"]


class TestTopKReport:
    def test_rates_within_upstream_s_equality_steps_compare_equal(self) -> None:
        """NamespaceBundleStats calls throughputs within 100 KB/s equal: 1.00 and 1.05 MB/s in
        tie, so the one with more throughput out ranks higher, though its total is smaller."""
        bundles = BundleLoads.of(
            [
                Bundle(name="t/n/a", broker="b", throughput_in=1.05e6),
                Bundle(name="t/n/b", broker="b", throughput_in=1.0e6, throughput_out=0.2e6),
                Bundle(name="t/n/c", broker="b", throughput_in=0.1e6),
            ]
        )
        index = BundleIndex.build(bundles, ["b"])
        assert [bundles.names[i] for i in index.top_k(0, 1)] == ["t/n/b"]
        assert [bundles.names[i] for i in index.top_k(0, 3)] == ["t/n/c", "t/n/a", "t/n/b"]

    def test_top_k_is_taken_after_the_excluded_system_and_policy_filters(self) -> None:
        """With K = 2, a broker whose two biggest bundles are excluded (PIP-380) and a system
        bundle still reports two sheddable ones."""
        table = [
            Bundle(name="pulsar/system/0x0_0x1", broker="b", throughput_out=9e9),
            Bundle(name="t/excluded/0x0_0x1", broker="b", throughput_out=8e9),
            Bundle(name="t/pinned/0x0_0x1", broker="b", throughput_out=7e9, pinned=True),
            Bundle(name="t/ok/0x0_0x1", broker="b", throughput_out=2e6),
            Bundle(name="t/ok/0x1_0x2", broker="b", throughput_out=1e6),
        ]
        bundles = BundleLoads.of(table)
        cfg = Config.of(
            loadBalancerSheddingExcludedNamespaces="t/excluded",
            loadBalancerMaxNumberOfBundlesInBundleLoadReport=2,
        ).shedding
        index = BundleIndex.build(bundles, ["b"])
        top = index.top_k(0, cfg.max_bundles_in_load_report, reportable(index, cfg))
        assert [bundles.names[i] for i in top] == ["t/ok/0x1_0x2", "t/ok/0x0_0x1"]
        allowed = replace(cfg, shed_bundles_with_policies=True)
        top = index.top_k(0, 2, reportable(index, allowed))
        assert [bundles.names[i] for i in top] == ["t/ok/0x0_0x1", "t/pinned/0x0_0x1"]

    @pytest.mark.parametrize(
        ("namespace", "system"),
        [
            ("pulsar/system", True),
            ("pulsar/pulsar-eu/broker1.example.net:8080", True),
            ("pulsar/broker1.example.net:8080", True),
            ("pulsar/functions", False),
            ("acme/orders", False),
        ],
    )
    def test_system_namespaces(self, namespace: str, system: bool) -> None:
        assert is_system_namespace(namespace) is system


class TestZeroThroughput:
    def test_a_swap_never_sends_back_an_idle_bundle(self) -> None:
        """testUnloadBundlesGreaterThanTargetThroughput's fixture with broker1's two smallest
        bundles idle: the swap passes over them, so they stay on broker1."""
        snap = up.snapshot(
            [
                ("broker1", "my-tenant/my-namespaceA", (0, 0, 3e6, 4e6, 5e6), 10),
                ("broker2", "my-tenant/my-namespaceB", (100e6, 180e6, 220e6, 250e6, 250e6), 1000),
            ]
        )
        result = TransferShedder(up.config()).cycle(snap, ShedderState(), now=up.NOW)
        idle = {
            n for n, t in zip(snap.bundles.names, snap.bundles.throughput, strict=True) if not t
        }
        assert result.moves and not idle & {m.bundle for m in result.moves}


class TestCli:
    def test_policies_keep_bundles_on_allowed_brokers(self, tmp_path: Path) -> None:
        """acme may live on broker1/broker2 only (the example policy), so with policies
        shed no acme bundle reaches broker6; globex keeps to shared brokers, one per group."""
        conf = tmp_path / "broker.conf"
        conf.write_text("loadBalancerSheddingBundlesWithPoliciesEnabled=true\n", encoding="utf-8")
        extra = [
            "--isolation-policies",
            str(EXAMPLES / "isolation-policies.json"),
            "--anti-affinity",
            str(EXAMPLES / "anti-affinity.json"),
            "--until-balanced",
            "--json",
        ]
        result = CliRunner().invoke(app, [*ARGS, *extra, "--config", str(conf)])
        assert result.exit_code == 0, result.output
        transfers = json.loads(result.output)["transfers"]
        assert transfers
        for move in transfers:
            if move["bundle"].startswith("acme/"):
                assert move["destination"].split(".")[0] in {"broker1", "broker2"}
            else:
                assert move["destination"].split(".")[0] not in {"broker1", "broker2"}

    def test_a_bad_policy_file_is_one_error_line(self, tmp_path: Path) -> None:
        bad = write(tmp_path, "bad.json", {"p": {"namespaces": ["a/("], "primary": ["x"]}})
        result = CliRunner().invoke(app, [*ARGS, "--isolation-policies", str(bad)])
        assert result.exit_code == 2
        lines = [x for x in result.output.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:") and str(bad) in lines[0]
        assert "Traceback" not in result.output


@st.composite
def policies(draw: st.DrawFn, brokers: int) -> Policies:
    """An isolation policy for tenant t0 (primaries, secondaries, a min_limit) and an
    anti-affinity group over some of the namespaces."""
    names = [f"broker{i}" for i in range(brokers)]
    primary = draw(st.lists(st.sampled_from(names), max_size=3, unique=True)) or ["nobody"]
    secondary = draw(st.lists(st.sampled_from(names), max_size=3, unique=True))
    gold = IsolationPolicy.of(
        "gold", ["t0/.*"], primary, secondary, min_limit=draw(st.integers(1, 3))
    )
    grouped = draw(st.lists(st.integers(0, brokers - 1), max_size=4, unique=True))
    groups = AntiAffinityGroups({f"t{i % 3}/ns{i}": "g" for i in grouped})
    return Policies(isolation=IsolationPolicies((gold,)), anti_affinity=groups)


@pytest.mark.parametrize("strategy", ["transfer", "balanced", "threshold", "overload", "uniform"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_move_lands_where_the_filters_allow(strategy: str, data: st.DataObject) -> None:
    """Whatever the loads and policies, each move of every strategy (swaps and unload-only
    placements included) goes to a broker the filter pipeline allows for its bundle, off the
    broker it leaves, and carries traffic."""
    drawn = data.draw(shedding_snapshots())
    assert isinstance(drawn, LoadSnapshot)
    snap = replace(drawn, policies=data.draw(policies(len(drawn.loads))))
    cfg = Config.of(
        strategy=strategy,
        shed_bundles_with_policies=True,
        hit_count_threshold=0,
        minUnloadMessage=0,
        minUnloadMessageThroughput=0,
        loadBalancerBundleUnloadMinThroughputThreshold=0,
    ).shedding
    now = max(x.updated_at for x in snap.loads.values())
    result = shedder_for(cfg).cycle(snap, ShedderState(), now=now)
    result = assign_destinations(result, snap, cfg, random.Random(0), now=now)
    assert snap.policies is not None
    bundles = snap.bundles
    owners = [bundles.owners[o] for o in bundles.owner.tolist()]
    view = snap.policies.bind(bundles.names, owners)
    throughput = dict(zip(bundles.names, bundles.throughput.tolist(), strict=True))
    for move in result.moves:
        assert throughput[move.bundle] > 0
        if move.destination is not None:
            assert move.destination != move.source
            assert move.destination in view.candidates(move.bundle, snap.loads)
