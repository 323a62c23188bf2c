"""The cluster model: node ids, locations, capacities, states and snapshots."""

from __future__ import annotations

import pytest

from trimtab.cluster import (
    Capacity,
    ClusterState,
    Node,
    NodeId,
    NodeState,
    location_components,
    location_of,
    validate_location,
)

TB = 10**12


def node(name: str, location: str = "/dc1/r1", state: NodeState = NodeState.WRITABLE) -> Node:
    cap = Capacity(cores=8, memory_bytes=2**35, disk_total_bytes=4 * TB, nic_bps=10**10)
    return Node(id=NodeId(name), location=location, capacity=cap, state=state)


class TestNodeId:
    @pytest.mark.parametrize(
        ("text", "host", "port"),
        [
            ("bk1.dc1:3181", "bk1.dc1", 3181),
            ("10.0.0.7:3181", "10.0.0.7", 3181),
            ("[::1]:3181", "::1", 3181),
            ("broker-7", "broker-7", None),
        ],
        ids=["hostname and port", "IPv4 and port", "bracketed IPv6 and port", "host alone"],
    )
    def test_parses_host_and_port(self, text: str, host: str, port: int | None) -> None:
        """A node id splits into the host resolvers are asked about and the port."""
        nid = NodeId(text)
        assert (nid.host, nid.port, str(nid)) == (host, port, text)

    @pytest.mark.parametrize(
        "text", ["", "bk1:0", "bk1:70000", "bk 1:3181", "bk1:port", "::1:3181", "[::1"]
    )
    def test_rejects_malformed_ids(self, text: str) -> None:
        """Ids that are not host[:port] with a port in 1..65535 are refused with the id named."""
        with pytest.raises(ValueError, match="bad node id"):
            NodeId(text)

    def test_is_a_string(self) -> None:
        """A NodeId compares, hashes and serialises as the plain string."""
        assert NodeId("a:1") == "a:1" and {NodeId("a:1"): 1}.get("a:1") == 1  # type: ignore[call-overload]


class TestLocation:
    def test_valid_locations_are_normalised(self) -> None:
        """A trailing slash is dropped; components come back in order."""
        assert validate_location("/dc1/r1/") == "/dc1/r1"
        assert location_components("/dc1/r1") == ("dc1", "r1")

    @pytest.mark.parametrize(
        ("text", "why"),
        [
            ("", "must name a rack"),
            ("/", "must name a rack"),
            ("rack1", "must start with '/'"),
            ("/dc1//r1", "empty component"),
        ],
    )
    def test_rejects_bad_locations(self, text: str, why: str) -> None:
        """Empty, root-only, relative and hollow paths are refused (BookKeeper #2980)."""
        with pytest.raises(ValueError, match=why):
            validate_location(text)

    def test_missing_region_or_rack_take_default_names(self) -> None:
        """Inventory rows without region or rack land in /default-region/default-rack."""
        assert location_of(None, None) == "/default-region/default-rack"
        assert location_of("us-east", "") == "/us-east/default-rack"
        assert location_of(" ", "r2") == "/default-region/r2"

    def test_rack_names_cannot_hold_slashes(self) -> None:
        """A '/' inside a rack name would silently change the tree's depth, so it is refused."""
        with pytest.raises(ValueError, match="must not contain '/'"):
            location_of("dc1", "r1/a")


class TestNodeState:
    @pytest.mark.parametrize("text", ["readonly", "read-only", "READ_ONLY", " ReadOnly "])
    def test_accepts_common_spellings_of_read_only(self, text: str) -> None:
        """Operators write read-only in several ways; all mean the same state."""
        assert NodeState.parse(text) is NodeState.READONLY

    def test_rejects_unknown_state_listing_allowed(self) -> None:
        """An unknown state names what is allowed."""
        with pytest.raises(ValueError, match="writable, readonly, down"):
            NodeState.parse("draining")


class TestCapacity:
    def test_free_disk_above_total_is_refused(self) -> None:
        """Free space cannot exceed the disk."""
        with pytest.raises(ValueError, match="disk_free_bytes"):
            Capacity(cores=1, memory_bytes=1, disk_total_bytes=10, nic_bps=1, disk_free_bytes=11)

    def test_negative_numbers_are_refused(self) -> None:
        """Capacities are never negative."""
        with pytest.raises(ValueError, match="cores must not be negative"):
            Capacity(cores=-1, memory_bytes=1, disk_total_bytes=10, nic_bps=1)


class TestClusterState:
    def test_nodes_are_kept_in_id_order(self) -> None:
        """Iteration is by sorted id, so the same input gives the same decisions."""
        state = ClusterState.of("c", [node("b:1"), node("a:1"), node("c:1")])
        assert [n.id for n in state] == ["a:1", "b:1", "c:1"]

    def test_duplicate_ids_are_refused(self) -> None:
        """A snapshot cannot hold the same node twice."""
        with pytest.raises(ValueError, match="appears twice"):
            ClusterState.of("c", [node("a:1"), node("a:1")])

    def test_state_sets_and_lookup(self) -> None:
        """Writable and read-only sets come from the nodes' states; lookups by string work."""
        state = ClusterState.of(
            "c",
            [node("a:1"), node("b:1", state=NodeState.READONLY), node("d:1", state=NodeState.DOWN)],
        )
        assert state.writable == {"a:1"} and state.readonly == {"b:1"}
        assert state.node("b:1").state is NodeState.READONLY
        assert "d:1" in state and "z:1" not in state
        with pytest.raises(KeyError, match="no node 'z:1'"):
            state.node("z:1")

    def test_changes_make_new_snapshots(self) -> None:
        """with_state, with_node and without return new snapshots and leave the old one alone."""
        before = ClusterState.of("c", [node("a:1"), node("b:1")])
        after = before.with_state("a:1", NodeState.READONLY)
        assert before.node("a:1").state is NodeState.WRITABLE
        assert after.node("a:1").state is NodeState.READONLY
        assert len(before.with_node(node("c:1"))) == 3 and len(before.without("a:1")) == 1

    def test_node_region_and_rack(self) -> None:
        """Region is the first component; the rack is the whole path, as BookKeeper counts it."""
        n = node("a:1", "/dc2/r7")
        assert (n.region, n.rack) == ("dc2", "/dc2/r7")
