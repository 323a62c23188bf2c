"""The network topology tree: lookups, scopes, equal depth and default racks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import inner_scopes, topologies
from trimtab.cluster import DEFAULT_RACK, DEFAULT_REGION_RACK, NodeId
from trimtab.errors import InvalidTopologyError
from trimtab.topology import NetworkTopology, default_rack_for_depth

BK1, BK2, BK3, BK4 = (NodeId(f"bk{i}:3181") for i in range(1, 5))


@pytest.fixture
def two_regions() -> NetworkTopology:
    """bk1, bk2 on /dc1/r1; bk3 on /dc1/r2; bk4 on /dc2/r1."""
    return NetworkTopology([(BK1, "/dc1/r1"), (BK2, "/dc1/r1"), (BK3, "/dc1/r2"), (BK4, "/dc2/r1")])


class TestLookups:
    def test_added_nodes_are_found_with_their_location(self, two_regions):
        """A node added at a location is in the tree and reports that location."""
        assert BK3 in two_regions and "bk3:3181" in two_regions
        assert len(two_regions) == 4
        assert two_regions.location_of("bk3:3181") == "/dc1/r2"
        assert two_regions.depth == 2

    def test_nodes_are_sorted_whatever_the_insertion_order(self):
        """nodes() is in id order, not insertion order."""
        t = NetworkTopology([(BK3, "/r1"), (BK1, "/r2"), (BK2, "/r1")])
        assert t.nodes() == (BK1, BK2, BK3)

    def test_rack_is_the_full_path_and_region_the_first_component(self, two_regions):
        """rack_of keeps /dc1/r1 and /dc2/r1 apart; region_of is the first component."""
        assert two_regions.rack_of(BK1) == "/dc1/r1"
        assert two_regions.rack_of(BK4) == "/dc2/r1"
        assert two_regions.region_of(BK4) == "dc2"
        assert two_regions.racks() == ("/dc1/r1", "/dc1/r2", "/dc2/r1")
        assert two_regions.regions() == ("dc1", "dc2")

    def test_region_of_a_one_level_topology_is_the_rack_name(self):
        """With locations like /r1 the first component is the rack itself."""
        t = NetworkTopology([(BK1, "/r1")])
        assert (t.rack_of(BK1), t.region_of(BK1), t.regions()) == ("/r1", "r1", ("r1",))

    def test_unknown_or_malformed_nodes_are_simply_absent(self, two_regions):
        """Lookups of a node not in the tree, or of a string that is no node id, give None."""
        assert "bk9:3181" not in two_regions and "not a node!" not in two_regions
        assert 42 not in two_regions
        assert two_regions.location_of("bk9:3181") is None
        assert two_regions.rack_of("not a node!") is None
        assert two_regions.region_of("bk9:3181") is None

    def test_remove_reports_whether_the_node_was_there(self, two_regions):
        """remove is True once, then False; the node is gone from every view."""
        assert two_regions.remove("bk3:3181") is True
        assert two_regions.remove("bk3:3181") is False
        assert two_regions.remove("not a node!") is False
        assert BK3 not in two_regions
        assert two_regions.leaves("/dc1") == (BK1, BK2)

    def test_count_racks_counts_distinct_racks_of_known_nodes(self, two_regions):
        """count_racks ignores nodes not in the tree."""
        assert two_regions.count_racks([BK1, BK2, BK4, "bk9:3181"]) == 2

    def test_children_walk_the_tree_level_by_level(self, two_regions):
        """children lists regions, then racks, then node ids; unknown paths have none."""
        assert two_regions.children() == ("dc1", "dc2")
        assert two_regions.children("/dc1") == ("r1", "r2")
        assert two_regions.children("/dc1/r1/") == ("bk1:3181", "bk2:3181")
        assert two_regions.children("/dc3") == ()
        assert NetworkTopology().children() == ()


class TestScopes:
    @pytest.mark.parametrize(
        ("scope", "expected"),
        [
            pytest.param("/", (BK1, BK2, BK3, BK4), id="the root holds every node"),
            pytest.param("", (BK1, BK2, BK3, BK4), id="an empty scope is the root"),
            pytest.param("/dc1", (BK1, BK2, BK3), id="a region holds its racks' nodes"),
            pytest.param("/dc1/r1", (BK1, BK2), id="a rack holds its nodes"),
            pytest.param("/dc1/r1/", (BK1, BK2), id="a trailing slash is ignored"),
            pytest.param("/dc2/r1", (BK4,), id="same rack name in another region is apart"),
            pytest.param("/dc1/r1/bk2:3181", (BK2,), id="a node's full path is its own scope"),
            pytest.param("/dc1/r2/bk2:3181", (), id="a node under the wrong rack is not there"),
            pytest.param("/dc3", (), id="an unknown scope is empty"),
            pytest.param("dc1", (), id="a scope without a leading slash is unknown"),
        ],
    )
    def test_leaves_under_a_scope(self, two_regions, scope, expected):
        """leaves(scope) lists exactly the nodes under that path, sorted."""
        assert two_regions.leaves(scope) == expected

    @pytest.mark.parametrize(
        ("scope", "expected"),
        [
            pytest.param("~/dc1/r1", (BK3, BK4), id="excluding a rack"),
            pytest.param("~/dc1", (BK4,), id="excluding a region"),
            pytest.param("~/dc1/r1,/dc2/r1", (BK3,), id="excluding a comma list of racks"),
            pytest.param("~/dc1/r1, ~/dc1/r2", (BK4,), id="a tilde repeated in the list is ok"),
            pytest.param("~/", (), id="excluding the root leaves nothing"),
            pytest.param("~/dc1/r1/bk1:3181", (BK2, BK3, BK4), id="excluding one node"),
            pytest.param("~/unknown", (BK1, BK2, BK3, BK4), id="excluding nothing known"),
        ],
    )
    def test_leaves_outside_excluded_scopes(self, two_regions, scope, expected):
        """A ~ scope lists the nodes under none of the comma-separated paths."""
        assert two_regions.leaves(scope) == expected

    def test_leaf_tuples_are_cached_until_the_scope_changes(self, two_regions):
        """Repeated reads return the cached tuple; a change below a scope refreshes it."""
        rack, other = two_regions.leaves("/dc1/r1"), two_regions.leaves("/dc2")
        outside = two_regions.leaves("~/dc1/r1")
        assert two_regions.leaves("/dc1/r1") is rack
        assert two_regions.leaves("~/dc1/r1") is outside
        two_regions.add("bk5:3181", "/dc1/r1")
        assert two_regions.leaves("/dc1/r1") == (BK1, BK2, NodeId("bk5:3181"))
        assert two_regions.leaves("/dc2") is other
        assert two_regions.leaves("~/dc2") == (BK1, BK2, BK3, NodeId("bk5:3181"))


class TestChanges:
    def test_re_adding_a_node_moves_it(self, two_regions):
        """Adding a node that is already in the tree moves it to the new location."""
        two_regions.add(BK1, "/dc2/r9")
        assert two_regions.location_of(BK1) == "/dc2/r9"
        assert two_regions.leaves("/dc1/r1") == (BK2,)
        assert two_regions.leaves("/dc2") == (BK1, BK4)
        assert len(two_regions) == 4

    def test_empty_inner_nodes_vanish_with_their_last_leaf(self, two_regions):
        """When the last node of a rack or region goes, so do the rack and region."""
        two_regions.remove(BK4)
        assert two_regions.racks() == ("/dc1/r1", "/dc1/r2")
        assert two_regions.regions() == ("dc1",)
        assert two_regions.children() == ("dc1",)
        two_regions.add(BK3, "/dc1/r1")  # moving away empties /dc1/r2 too
        assert two_regions.racks() == ("/dc1/r1",)

    def test_locations_are_normalised(self):
        """A trailing slash or surrounding spaces do not make another rack."""
        t = NetworkTopology([(BK1, "/dc1/r1/"), (BK2, " /dc1/r1")])
        assert t.racks() == ("/dc1/r1",)

    def test_an_empty_tree_forgets_its_depth(self):
        """Once the last node is gone, a location of another depth is accepted."""
        t = NetworkTopology([(BK1, "/r1")])
        t.remove(BK1)
        assert t.depth is None
        t.add(BK2, "/dc1/r1")
        assert t.depth == 2

    def test_the_only_node_may_move_to_another_depth(self):
        """A tree of one node has no other leaves to disagree with, so it can change depth."""
        t = NetworkTopology([(BK1, "/r1")])
        t.add(BK1, "/dc1/r1")
        assert (t.depth, t.racks()) == (2, ("/dc1/r1",))


class TestInvalidLocations:
    @pytest.mark.parametrize(
        "location",
        [
            pytest.param("", id="empty"),
            pytest.param("/", id="the root itself"),
            pytest.param("rack1", id="no leading slash"),
            pytest.param("/dc1//r1", id="an empty component"),
        ],
    )
    def test_bad_locations_are_rejected_naming_node_and_location(self, location):
        """Locations that name no rack raise InvalidTopologyError (BookKeeper #2980)."""
        t = NetworkTopology()
        with pytest.raises(InvalidTopologyError, match=r"bk1:3181") as caught:
            t.add(BK1, location)
        assert repr(location) in str(caught.value)
        assert len(t) == 0

    def test_a_bad_node_id_is_rejected(self):
        """A node id that is not host[:port] raises InvalidTopologyError."""
        with pytest.raises(InvalidTopologyError, match="bad node id"):
            NetworkTopology().add("bk1:99999", "/r1")

    def test_mixed_depths_are_rejected_with_a_hint(self, two_regions):
        """Adding a one-level node to a two-level tree names both depths and the default rack."""
        with pytest.raises(InvalidTopologyError) as caught:
            two_regions.add("bk5:3181", DEFAULT_RACK)
        message = str(caught.value)
        assert "bk5:3181" in message and "'/default-rack' (depth 1)" in message
        assert "at depth 2" in message
        assert DEFAULT_REGION_RACK in message
        assert "bk5:3181" not in two_regions

    def test_a_failed_move_leaves_the_node_where_it_was(self, two_regions):
        """Moving a node to a location of the wrong depth changes nothing."""
        with pytest.raises(InvalidTopologyError):
            two_regions.add(BK1, "/dc1/r1/shelf1")
        assert two_regions.location_of(BK1) == "/dc1/r1"


class TestDefaultRacks:
    def test_one_level_default_rack_fits_a_rack_aware_topology(self):
        """/default-rack sits beside /rack nodes (the rack-aware policy's default)."""
        t = NetworkTopology([(BK1, "/r1"), (BK2, DEFAULT_RACK)])
        assert t.racks() == ("/default-rack", "/r1")

    def test_two_level_default_rack_fits_a_region_aware_topology(self):
        """/default-region/default-rack sits beside /region/rack nodes."""
        t = NetworkTopology([(BK1, "/dc1/r1"), (BK2, DEFAULT_REGION_RACK)])
        assert t.regions() == ("dc1", "default-region")

    def test_two_level_default_rack_does_not_fit_a_one_level_topology(self):
        """The region-aware default next to /rack nodes is a depth error too."""
        t = NetworkTopology([(BK1, "/r1")])
        with pytest.raises(InvalidTopologyError, match=r"depth 2.*depth 1"):
            t.add(BK2, DEFAULT_REGION_RACK)

    @pytest.mark.parametrize(
        ("depth", "expected"),
        [
            pytest.param(1, DEFAULT_RACK, id="one level is the rack-aware default"),
            pytest.param(2, DEFAULT_REGION_RACK, id="two levels is the region-aware default"),
            pytest.param(3, "/default-region/default/default-rack", id="deeper trees pad"),
        ],
    )
    def test_default_rack_for_depth_matches_the_depth(self, depth, expected):
        """default_rack_for_depth gives a location with that many components."""
        assert default_rack_for_depth(depth) == expected
        NetworkTopology([(BK1, expected)])  # and it is a valid location

    def test_default_rack_for_depth_refuses_zero(self):
        """There is no location of depth zero."""
        with pytest.raises(ValueError, match="at least 1"):
            default_rack_for_depth(0)


class TestProperties:
    @given(st.data())
    def test_a_scope_and_its_exclusion_split_the_nodes(self, data):
        """leaves(scope) and leaves('~' + scope) are disjoint and together hold every node."""
        entries = data.draw(topologies())
        t = NetworkTopology(entries)
        scope = data.draw(inner_scopes(entries))
        inside, outside = set(t.leaves(scope)), set(t.leaves("~" + scope))
        assert not inside & outside
        assert inside | outside == set(t.nodes())
        assert list(t.leaves(scope)) == sorted(inside)

    @given(topologies())
    def test_racks_partition_the_nodes(self, entries):
        """Every node is under exactly one rack, and that rack is its rack_of."""
        t = NetworkTopology(entries)
        seen: list[NodeId] = []
        for rack in t.racks():
            members = t.leaves(rack)
            assert members and all(t.rack_of(n) == rack for n in members)
            seen.extend(members)
        assert sorted(seen) == list(t.nodes())
        assert len(t) == len({n for n, _ in entries})

    @given(topologies(min_nodes=1), st.data())
    def test_removing_nodes_keeps_the_caches_right(self, entries, data):
        """After removals, every cached scope answer equals a tree built from scratch."""
        t = NetworkTopology(entries)
        scopes = [data.draw(inner_scopes(entries)) for _ in range(3)]
        for scope in scopes:
            t.leaves(scope), t.leaves("~" + scope)  # fill the caches
        gone = data.draw(st.sets(st.sampled_from([n for n, _ in entries])))
        for node in gone:
            t.remove(node)
        fresh = NetworkTopology((n, loc) for n, loc in entries if n not in gone)
        for scope in scopes:
            assert t.leaves(scope) == fresh.leaves(scope)
            assert t.leaves("~" + scope) == fresh.leaves("~" + scope)
        assert t.racks() == fresh.racks()
