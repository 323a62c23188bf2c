"""Net moves (issue 43, point 2): a plan never moves a bundle twice unless it ends somewhere new."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trimtab.shedding.decisions import Move, Reason
from trimtab.shedding.net import net_transfers

OVER, UNDER = Reason.OVERLOADED, Reason.UNDERLOADED


def _m(bundle: str, source: str, destination: str | None) -> Move:
    return Move(bundle=bundle, source=source, destination=destination, throughput=1.0)


def test_a_round_trip_is_no_move() -> None:
    chain = [
        (2, _m("b", "broker-1", "broker-2"), OVER),
        (33, _m("b", "broker-2", "broker-1"), UNDER),
    ]
    assert net_transfers(chain) == []


def test_a_chain_is_one_move_from_the_first_source_to_the_last_destination() -> None:
    chain = [
        (2, _m("b", "A", "B"), OVER),
        (5, _m("x", "A", "C"), OVER),
        (7, _m("b", "B", "C"), UNDER),
    ]
    assert net_transfers(chain) == [(2, _m("b", "A", "C"), UNDER), (5, _m("x", "A", "C"), OVER)]


def test_a_lookup_placement_composes_with_the_next_move() -> None:
    chain = [(1, _m("b", "A", None), OVER), (3, _m("b", "D", "E"), OVER)]
    assert net_transfers(chain) == [(1, _m("b", "A", "E"), OVER)]


_BROKERS = st.sampled_from(["A", "B", "C", "D"])


@given(st.lists(st.tuples(st.sampled_from(["b1", "b2", "b3"]), _BROKERS), max_size=30))
def test_net_moves_end_where_the_sequence_ends_and_move_each_bundle_once(
    hops: list[tuple[str, str]],
) -> None:
    where = {"b1": "A", "b2": "B", "b3": "C"}
    start = dict(where)
    chain = []
    for cycle, (bundle, destination) in enumerate(hops, start=1):
        if where[bundle] != destination:
            chain.append((cycle, _m(bundle, where[bundle], destination), OVER))
            where[bundle] = destination
    net = net_transfers(chain)
    assert len({m.bundle for _, m, _ in net}) == len(net)
    after = dict(start)
    for _, move, _ in net:
        assert after[move.bundle] == move.source
        after[move.bundle] = move.destination  # type: ignore[assignment]
    assert after == where
