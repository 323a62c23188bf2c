"""The stabilized topology: removals wait for the period, driven by a fake clock."""

from __future__ import annotations

import pytest

from trimtab.cluster import NodeId
from trimtab.errors import InvalidTopologyError
from trimtab.topology import NetworkTopology, StabilizedTopology

BK1, BK2, BK3 = (NodeId(f"bk{i}:3181") for i in range(1, 4))


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def stable(clock: FakeClock) -> StabilizedTopology:
    """bk1, bk2 on /dc1/r1 and bk3 on /dc2/r1, removals delayed by 10 s."""
    topology = StabilizedTopology(period_seconds=10, clock=clock)
    topology.add(BK1, "/dc1/r1")
    topology.add(BK2, "/dc1/r1")
    topology.add(BK3, "/dc2/r1")
    return topology


def test_a_removed_node_stays_until_the_period_ends(stable, clock):
    """Before the deadline the node is still placed; from the deadline on it is gone."""
    assert stable.remove(BK3) is True
    assert stable.pending() == {BK3: 110.0}
    clock.now = 109.9
    assert BK3 in stable and stable.regions() == ("dc1", "dc2")
    clock.now = 110.0
    assert BK3 not in stable
    assert stable.regions() == ("dc1",)
    assert stable.pending() == {}


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda t: t.nodes(), id="nodes"),
        pytest.param(lambda t: t.leaves("~/dc1"), id="leaves with exclusion"),
        pytest.param(lambda t: t.racks(), id="racks"),
        pytest.param(lambda t: t.children("/dc2/r1"), id="children"),
        pytest.param(lambda t: t.location_of(BK3), id="location_of"),
        pytest.param(lambda t: t.rack_of(BK3), id="rack_of"),
        pytest.param(lambda t: t.region_of(BK3), id="region_of"),
        pytest.param(lambda t: len(t), id="len"),
        pytest.param(lambda t: t.count_racks([BK1, BK3]), id="count_racks"),
        pytest.param(lambda t: t.depth, id="depth"),
        pytest.param(lambda t: t.topology.nodes(), id="the wrapped topology"),
    ],
)
def test_every_read_applies_due_removals_first(stable, clock, read):
    """Any read after the deadline sees the node gone, without a timer or a sleep."""
    stable.remove(BK3)
    clock.now = 200.0
    read(stable)
    assert BK3 not in stable.topology.nodes()
    assert stable.leaves() == (BK1, BK2)


def test_a_node_seen_again_before_the_deadline_stays(stable, clock):
    """add clears the pending removal, so the node survives the deadline."""
    stable.remove(BK3)
    clock.now = 105.0
    stable.add(BK3, "/dc2/r1")
    clock.now = 500.0
    assert BK3 in stable and stable.pending() == {}


def test_a_node_seen_again_elsewhere_moves_and_stays(stable, clock):
    """Coming back at another location moves the node and cancels its removal."""
    stable.remove(BK3)
    stable.add(BK3, "/dc1/r2")
    clock.now = 500.0
    assert stable.rack_of(BK3) == "/dc1/r2"


@pytest.mark.parametrize("period", [pytest.param(0, id="zero"), pytest.param(-1, id="negative")])
def test_no_period_removes_at_once(clock, period):
    """With period_seconds <= 0 a removal takes effect immediately (upstream's default)."""
    stable = StabilizedTopology(period_seconds=period, clock=clock)
    stable.add(BK1, "/r1")
    assert stable.remove(BK1) is True
    assert BK1 not in stable and stable.pending() == {}


def test_removing_again_keeps_the_first_deadline(stable, clock):
    """A node already pending has been gone since its first removal."""
    stable.remove(BK1)
    clock.now = 105.0
    assert stable.remove(BK1) is True
    assert stable.pending() == {BK1: 110.0}


def test_removing_an_unknown_node_is_false(stable):
    """Nodes not in the tree, or strings that are no node id, are not pending."""
    assert stable.remove("bk9:3181") is False
    assert stable.remove("not a node!") is False
    assert stable.pending() == {}


def test_wraps_an_existing_topology(clock):
    """A topology given to the constructor is the one read and changed."""
    tree = NetworkTopology([(BK1, "/r1"), (BK2, "/r2")])
    stable = StabilizedTopology(tree, period_seconds=5, clock=clock)
    stable.remove(BK2)
    clock.now += 5
    assert stable.nodes() == (BK1,) and tree.nodes() == (BK1,)
    assert stable.depth == 1


def test_due_removals_free_the_depth_for_new_nodes(clock):
    """Once the last node at one depth has expired, a node at another depth is accepted."""
    stable = StabilizedTopology(period_seconds=5, clock=clock)
    stable.add(BK1, "/r1")
    stable.remove(BK1)
    with pytest.raises(InvalidTopologyError):
        stable.add(BK2, "/dc1/r1")  # bk1 is still there, at depth 1
    clock.now += 5
    stable.add(BK2, "/dc1/r1")
    assert stable.depth == 2 and stable.nodes() == (BK2,)
