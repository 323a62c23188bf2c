"""Telemetry rows to a shedding snapshot: parsing, rejection, assembly; pulsar-admin lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from trimtab.cluster import Capacity, ClusterState, Node, NodeId, NodeState
from trimtab.contract import RejectedRow, split_bundle
from trimtab.readers.metrics import (
    parse_bundle_row,
    parse_node_row,
    read_bundle_metrics,
    read_node_metrics,
)
from trimtab.shedding import LoadModel, Move
from trimtab.shedding.telemetry import build_snapshot
from trimtab.systems.pulsar.admin import unload_command, unload_commands

EXAMPLES = Path(__file__).parents[2] / "examples" / "shedding"

NODE = {
    "ts": "2024-05-01T12:00:00Z",
    "cluster": "c",
    "node": "b1:8080",
    "cpu": "0.5",
    "memory": "0.4",
    "direct_memory": "0.1",
    "net_in_bps": "1e9",
    "net_out_bps": "1e9",
    "msg_in_per_s": "100",
    "msg_out_per_s": "100",
    "throughput_in_bytes_per_s": "1e8",
    "throughput_out_bytes_per_s": "1e8",
}
BUNDLE = {
    "ts": 1714564800,
    "cluster": "c",
    "bundle": "acme/orders/0x00000000_0x40000000",
    "broker": "b1:8080",
    "msg_in_per_s": 10,
    "msg_out_per_s": 10,
    "throughput_in_bytes_per_s": 5e6,
    "throughput_out_bytes_per_s": 5e6,
}


def state(*names: str, down: tuple[str, ...] = ()) -> ClusterState:
    cap = Capacity(cores=8, memory_bytes=32 * 2**30, disk_total_bytes=10**12, nic_bps=10**10)
    return ClusterState.of(
        "c",
        [
            Node(
                id=NodeId(n),
                location="/r/a",
                capacity=cap,
                state=NodeState.DOWN if n in down else NodeState.WRITABLE,
            )
            for n in names
        ],
    )


def origin(line: int) -> RejectedRow:
    return RejectedRow("test.csv", line, "", {})


class TestRows:
    def test_iso_and_epoch_timestamps_are_the_same_instant(self) -> None:
        """ts may be ISO 8601 (UTC) or epoch seconds."""
        assert parse_node_row(NODE).sample.ts == parse_node_row(NODE | {"ts": 1714564800}).sample.ts

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            pytest.param({"cpu": "85"}, "fractions", id="cpu given in percent"),
            pytest.param({"net_in_bps": "-1"}, ">= 0", id="negative rate"),
            pytest.param({"memory": "nan"}, "finite", id="not a number"),
            pytest.param({"ts": "yesterday"}, "ISO 8601", id="bad timestamp"),
            pytest.param({"node": ""}, "missing node", id="no node"),
            pytest.param({"cpu": True}, "number", id="a boolean"),
        ],
    )
    def test_bad_node_rows_are_refused_with_a_reason(
        self, change: dict[str, object], reason: str
    ) -> None:
        """Each rule names the column and what is allowed."""
        with pytest.raises(ValueError, match=reason):
            parse_node_row(NODE | change)

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param("orders/0x0_0x1", id="no tenant"),
            pytest.param("acme/orders/all", id="no hash range"),
            pytest.param("acme/orders/0x0-0x1", id="wrong separator"),
        ],
    )
    def test_bundle_names_must_be_tenant_namespace_range(self, name: str) -> None:
        """pulsar-admin needs tenant/namespace and a 0xLOWER_0xUPPER range."""
        with pytest.raises(ValueError, match="bad bundle name"):
            parse_bundle_row(BUNDLE | {"bundle": name})

    def test_split_bundle(self) -> None:
        """The namespace and the range, as pulsar-admin takes them."""
        assert split_bundle("acme/orders/0x00000000_0x40000000") == (
            "acme/orders",
            "0x00000000_0x40000000",
        )


class TestAssembly:
    def test_history_folds_into_the_moving_average_and_latest_bundle_row_wins(self) -> None:
        """Two samples -> EMA; a bundle's newer row moves it to its new owner."""
        nodes = [
            (parse_node_row(NODE | {"ts": 100, "cpu": "0.9"}), origin(2)),
            (parse_node_row(NODE | {"ts": 160, "cpu": "0.1"}), origin(3)),
            (parse_node_row(NODE | {"ts": 160, "node": "b2:8080", "cpu": "0.2"}), origin(4)),
        ]
        bundles = [
            (parse_bundle_row(BUNDLE | {"ts": 100}), origin(2)),
            (parse_bundle_row(BUNDLE | {"ts": 160, "broker": "b2:8080"}), origin(3)),
        ]
        built = build_snapshot(state("b1:8080", "b2:8080"), nodes, bundles, LoadModel(history=0.5))
        assert built.now == 160
        assert built.snapshot.loads["b1:8080"].weighted_max_ema == pytest.approx(0.5)
        assert built.snapshot.bundles.broker_of(0) == "b2:8080"
        assert built.rejected == ()

    def test_rows_for_unknown_nodes_and_duplicates_are_rejected(self) -> None:
        """A node outside the cluster, or a second row for a bundle at the same time."""
        nodes = [(parse_node_row(NODE | {"node": "stranger:1"}), origin(5))]
        bundles = [(parse_bundle_row(BUNDLE), origin(2)), (parse_bundle_row(BUNDLE), origin(3))]
        built = build_snapshot(state("b1:8080"), nodes, bundles, LoadModel())
        reasons = sorted(r.reason for r in built.rejected)
        assert len(reasons) == 2
        assert "same ts" in reasons[0] and "not in cluster" in reasons[1]

    @pytest.mark.parametrize("reverse", [False, True], ids=["b1 read first", "b2 read first"])
    def test_two_brokers_with_one_bundle_at_one_time_follow_the_name_rule(
        self, reverse: bool
    ) -> None:
        """Whatever the file order, the broker whose name sorts first keeps the bundle (as the
        pipeline decides) and the other row is refused naming both brokers."""
        rows = [
            (parse_bundle_row(BUNDLE | {"broker": "b1:8080"}), origin(2)),
            (parse_bundle_row(BUNDLE | {"broker": "b2:8080"}), origin(3)),
        ]
        bundles = rows[::-1] if reverse else rows
        built = build_snapshot(state("b1:8080", "b2:8080"), [], bundles, LoadModel())
        assert built.snapshot.bundles.broker_of(0) == "b1:8080"
        (refused,) = built.rejected
        assert refused.line == 3
        assert "b1:8080 and b2:8080" in refused.reason and "first by name" in refused.reason

    def test_down_brokers_are_not_available(self) -> None:
        """The registry lists writable and read-only brokers, not down ones."""
        built = build_snapshot(state("b1:8080", "b2:8080", down=("b2:8080",)), [], [], LoadModel())
        assert built.snapshot.available == frozenset({"b1:8080"})

    def test_the_examples_read_cleanly(self) -> None:
        """The files shipped under examples/shedding have no rejected rows."""
        nodes = read_node_metrics(EXAMPLES / "node_metrics.csv")
        rows = read_bundle_metrics(EXAMPLES / "bundle_metrics.csv")
        assert not nodes.rejected and not rows.rejected
        assert len(nodes.accepted) == 30 and len(rows.accepted) == 20


class TestPulsarAdmin:
    def test_a_transfer_names_its_destination(self) -> None:
        """peers §3.3: unload <tenant>/<ns> --bundle <range> --destinationBroker <broker>."""
        move = Move(
            bundle="acme/orders/0x00000000_0x40000000",
            source="a:8080",
            destination="b:8080",
            throughput=1,
        )
        assert unload_command(move) == (
            "pulsar-admin namespaces unload acme/orders --bundle 0x00000000_0x40000000 "
            "--destinationBroker b:8080"
        )

    def test_an_unload_without_destination_keeps_the_bundle_flag(self) -> None:
        """-d without -b is refused upstream (PR #21879); -b without -d is a plain unload."""
        move = Move(
            bundle="acme/orders/0x00000000_0x40000000",
            source="a:8080",
            destination=None,
            throughput=1,
        )
        assert unload_commands([move]) == [
            "pulsar-admin namespaces unload acme/orders --bundle 0x00000000_0x40000000"
        ]

    def test_odd_characters_are_shell_quoted(self) -> None:
        """Lines can be piped to sh."""
        move = Move(bundle="a b/ns/0x0_0x1", source="x", destination="y;rm", throughput=1)
        assert (
            unload_command(move)
            == "pulsar-admin namespaces unload 'a b/ns' --bundle 0x0_0x1 --destinationBroker 'y;rm'"
        )
