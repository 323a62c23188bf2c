"""Log dirs within a broker (issue 40 part 6): cordoned dirs (KIP-1066) and emptying a dir,
the engine alone (:mod:`trimtab.allocation.log_dirs`) and with the planner, by property."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.allocation.helpers import make_cluster
from tests.allocation.test_lower_bound import CONFIG, _cluster, _reached
from tests.allocation.test_planner import PROPERTIES, Case, cases
from trimtab.allocation.health import NodeStatus
from trimtab.allocation.log_dirs import (
    DirMove,
    LogDir,
    closed_nodes,
    dir_needs,
    empty_log_dirs,
)
from trimtab.allocation.lower_bound import LowerBounds, lower_bounds
from trimtab.allocation.model import PartitionAssignment, Replica
from trimtab.allocation.planner import plan_rebalance
from trimtab.cluster import NodeHealth, NodeId
from trimtab.config.redpanda import BalancerMode

GB = 10**9
N3 = NodeId("3")


def test_the_worked_example_of_the_module() -> None:
    """Broker 3: /d1 (30 and 10 GB) emptied, /d2 with 20 GB free: the 30 GB replica leaves
    the broker, the 10 GB one moves to /d2."""
    dirs = [
        LogDir(N3, "/d1", 100 * GB, 40 * GB, replicas={("a", 0): 30 * GB, ("b", 0): 10 * GB}),
        LogDir(N3, "/d2", 100 * GB, 80 * GB),
    ]
    inside, leave = empty_log_dirs(dirs, {(N3, "/d1")})
    assert inside == [DirMove("b", 0, N3, "/d1", "/d2", 10 * GB)]
    assert leave == [("a", 0, N3)]


def _one_broker(sizes: list[int]) -> tuple[Any, list[PartitionAssignment]]:
    """Four brokers "0".."3" on racks a..d; partition p of topic t (RF 1, ``sizes[p]``
    bytes) on broker 3."""
    cluster = _cluster(["a", "b", "c", "d"])
    held = [
        PartitionAssignment("t", p, (Replica(NodeId("3"), 0),), size)
        for p, size in enumerate(sizes)
    ]
    return cluster, held


def test_the_bound_does_not_take_the_largest_first_packing() -> None:
    """/d1 holds 30, 25 and 25 GB and is emptied; /d2 has 50 GB free. Largest first would keep
    the 30 GB replica and send 50 GB away in two moves (the planner did, and the bound took
    that choice as the only one); keeping the two of 25 sends only 30 GB in one. The bound (the
    module doc's example) is that one move and 30 GB, all moves together at least the 3 of
    /d1 (each moves once); the planner now packs the smallest first and meets it."""
    n3 = NodeId("3")
    cluster, held = _one_broker([30 * GB, 25 * GB, 25 * GB])
    dirs = [
        LogDir(
            n3,
            "/d1",
            200 * GB,
            80 * GB,
            replicas={("t", p): a.size_bytes for p, a in enumerate(held)},
        ),
        LogDir(n3, "/d2", 100 * GB, 50 * GB),
    ]
    emptied = {(n3, "/d1")}
    inside, leave = empty_log_dirs(dirs, emptied)
    assert leave == [("t", 0, n3)]  # the 30 GB replica leaves, the two of 25 stay
    args: dict[str, Any] = {
        "mode": "off",
        "evict": leave,
        "dir_needs": dir_needs(dirs, emptied, 0.8),
    }
    bound = lower_bounds(cluster, held, CONFIG, **args)
    assert (bound.moves, bound.bytes, bound.all_moves) == (1, 30 * GB, 3)
    assert bound.terms["log_dir_cordoned"] == 1
    plan = plan_rebalance(cluster, held, CONFIG, **args)
    assert len(plan.moves) == plan.lower_bound_moves == 1
    assert plan.bytes_moved == plan.lower_bound_bytes == 30 * GB
    assert len(plan.moves) + len(inside) == plan.lower_bound_all_moves == 3


@st.composite
def emptied_brokers(draw: st.DrawFn) -> tuple[list[int], list[LogDir]]:
    """Broker 3 with /d0 to empty and one or two open dirs with replicas of their own."""
    n3 = NodeId("3")
    sizes = draw(st.lists(st.integers(1, 30), min_size=1, max_size=4))
    dirs = [
        LogDir(n3, "/d0", 10**6, sum(sizes), replicas={("t", p): s for p, s in enumerate(sizes)})
    ]
    for k in range(1, draw(st.integers(1, 2)) + 1):
        own = draw(st.lists(st.integers(1, 30), max_size=3))
        first = len(sizes)
        sizes = sizes + own
        replicas = {("t", first + j): s for j, s in enumerate(own)}
        total = draw(st.integers(sum(own), sum(own) + 60))
        dirs.append(LogDir(n3, f"/d{k}", total, sum(own), replicas=replicas))
    return sizes, dirs


def _fits(stay: list[int], rooms: list[int]) -> bool:
    """Whether the ``stay`` sizes pack into bins of ``rooms`` (every assignment tried)."""
    if not stay:
        return True
    first, rest = stay[0], stay[1:]
    for i, room in enumerate(rooms):
        if room >= first and _fits(rest, [*rooms[:i], room - first, *rooms[i + 1 :]]):
            return True
    return False


@PROPERTIES
@given(emptied_brokers())
def test_no_choice_of_what_leaves_the_broker_beats_the_bound(
    drawn: tuple[list[int], list[LogDir]],
) -> None:
    """Property: over every set of broker 3's replicas that may leave it (of the emptied dir,
    or of an open dir to make room) after which the rest of the emptied dir packs into the
    open dirs, none has fewer moves or bytes than the bound between brokers."""
    sizes, dirs = drawn
    cluster, held = _one_broker(sizes)
    emptied = {(NodeId("3"), "/d0")}
    needs = dir_needs(dirs, emptied, 1.0)
    bound = lower_bounds(cluster, held, CONFIG, mode="off", dir_needs=needs)
    where = {p: d for d in dirs for (_, p) in d.replicas}
    best: dict[str, int] = {}
    for mask in range(1 << len(sizes)):
        gone = {p for p in range(len(sizes)) if mask >> p & 1}
        stay = [sizes[p] for p in range(len(sizes)) if where[p] is dirs[0] and p not in gone]
        rooms = [
            (d.total_bytes or 0) - d.used_bytes + sum(sizes[p] for p in gone if where[p] is d)
            for d in dirs[1:]
        ]
        if _fits(sorted(stay, reverse=True), rooms):
            found = {"moves": len(gone), "bytes": sum(sizes[p] for p in gone)}
            found["all"] = len(gone) + len(stay)  # those that stay move inside
            if all(where[p] is dirs[0] for p in gone):  # only the emptied dir's replicas
                found["dir only"] = len(gone)
            best.update({k: min(v, best.get(k, v)) for k, v in found.items()})
    assert best, "leaving everything is always a choice"
    assert bound.moves <= best["moves"]
    assert bound.bytes <= best["bytes"]
    assert bound.all_moves <= best["all"]
    # the planner's packing (smallest first): with one open dir, the fewest leave
    _, leave = empty_log_dirs(dirs, emptied)
    if len(dirs) == 2:
        assert len(leave) == best["dir only"]


def test_a_cordoned_dir_takes_nothing_and_unknown_capacity_picks_the_least_used() -> None:
    dirs = [
        LogDir(N3, "/d1", replicas={("a", 0): 5, ("a", 1): 3}),
        LogDir(N3, "/d2", used_bytes=1, cordoned=True),
        LogDir(N3, "/d3", used_bytes=7),
        LogDir(N3, "/d4", used_bytes=4),
    ]
    inside, leave = empty_log_dirs(dirs, {(N3, "/d1")})
    assert leave == []
    assert [(m.topic, m.partition, m.target) for m in inside] == [("a", 0, "/d4"), ("a", 1, "/d3")]


def test_a_broker_is_closed_only_when_every_dir_is_cordoned() -> None:
    dirs = [
        LogDir(N3, "/d1", cordoned=True),
        LogDir(N3, "/d2", cordoned=True),
        LogDir(NodeId("4"), "/d1", cordoned=True),
        LogDir(NodeId("4"), "/d2"),
    ]
    assert closed_nodes(dirs) == {N3: ("/d1", "/d2")}


@st.composite
def jbod_cases(draw: st.DrawFn) -> tuple[Case, list[LogDir], set[tuple[NodeId, str]]]:
    """A planner case with each node's replicas spread over 1–3 log dirs, some cordoned,
    some with a capacity, and some dirs to empty."""
    case = draw(cases())
    dirs: list[LogDir] = []
    for node in case.cluster:
        count = draw(st.integers(1, 3))
        held = [a for a in case.held if node.id in a.nodes]
        split: list[dict[tuple[str, int], int]] = [{} for _ in range(count)]
        for a in held:
            split[draw(st.integers(0, count - 1))][(a.topic, a.partition)] = a.size_bytes
        for k, replicas in enumerate(split):
            total = draw(st.none() | st.integers(0, 4 * max(1, sum(replicas.values()))))
            cordoned = draw(st.booleans())
            used = sum(replicas.values())
            dirs.append(LogDir(node.id, f"/d{k}", total, used, cordoned, replicas))
    emptied = {(d.node, d.path) for d in dirs if draw(st.booleans()) and d.replicas}
    return case, dirs, emptied


@PROPERTIES
@given(jbod_cases())
def test_no_replica_lands_on_a_cordoned_dir_or_a_closed_broker(
    drawn: tuple[Case, list[LogDir], set[tuple[NodeId, str]]],
) -> None:
    """Property (issue 40 part 6): no planned replica goes to a cordoned or emptied dir, nor
    to a broker whose dirs are all cordoned; the bound is the planner's, and a plan that
    reaches its goals moves at least lower_bound_moves."""
    case, dirs, emptied = drawn
    case = replace(case, max_moves=10**6)
    dirs = [replace(d, cordoned=d.cordoned or (d.node, d.path) in emptied) for d in dirs]
    closed = closed_nodes(dirs)
    stated = {s.node for s in case.health}
    health = [
        *case.health,
        *(NodeStatus(n, NodeHealth.MAINTENANCE) for n in closed if n not in stated),
    ]
    inside, leave = empty_log_dirs(dirs, emptied)
    shut = {(d.node, d.path) for d in dirs if d.cordoned}
    assert all((m.node, m.target) not in shut for m in inside)
    assert len(inside) + len(leave) == sum(
        len(d.replicas) for d in dirs if (d.node, d.path) in emptied
    )
    config = replace(CONFIG, balancer_mode=BalancerMode(case.mode))
    args: dict[str, Any] = {
        "health": health,
        "drain": case.drain,
        "now": 0.0,
        "mode": case.mode,
        "rack_aware": case.rack_aware,
        "evict": leave,
        # full dirs are not relieved here: only the emptied dirs' needs
        "dir_needs": {n: replace(v, full=0) for n, v in dir_needs(dirs, emptied, 0.8).items()},
    }
    plan = plan_rebalance(case.cluster, case.held, config, max_moves=case.max_moves, **args)
    assert all(m.target not in closed for m in plan.moves)
    bound = lower_bounds(case.cluster, case.held, config, **args)
    assert bound == LowerBounds(
        plan.lower_bound_moves,
        plan.lower_bound_bytes,
        plan.lower_bound_terms,
        plan.lower_bound_all_moves,
    )
    if _reached(case, plan):
        assert len(plan.moves) >= plan.lower_bound_moves
        assert plan.bytes_moved >= plan.lower_bound_bytes
        # the CLI drops a move between dirs of a replica the plan sends off its broker
        left = {(m.topic, m.partition, m.source) for m in plan.moves}
        kept = [d for d in inside if (d.topic, d.partition, d.node) not in left]
        assert len(plan.moves) + len(kept) >= plan.lower_bound_all_moves
        left = {(t, p, n) for t, p, n in leave}
        after = {(a.topic, a.partition): a.nodes for a in plan.after}
        assert all(n not in after.get((t, p), (n,)) for t, p, n in left)


def test_intra_broker_disk_capacity_goal_relieves_a_full_dir_inside_its_broker() -> None:
    """After Cruise Control's IntraBrokerDiskCapacityGoal (IntraBrokerRebalanceTest, single
    goal): /d1 at 90 % of 100 GB, /d2 at 10 %: the smallest replica that alone takes /d1
    under 80 % (12 GB ≥ 10 GB excess) moves to /d2; one move, the bound."""
    from trimtab.allocation.log_dirs import full_dir_bound, relieve_full_dirs

    replicas = {("a", 0): 50 * GB, ("a", 1): 28 * GB, ("a", 2): 12 * GB}
    dirs = [
        LogDir(N3, "/d1", 100 * GB, 90 * GB, replicas=replicas),
        LogDir(N3, "/d2", 100 * GB, 10 * GB),
    ]
    moves = relieve_full_dirs(dirs, 0.8)
    assert moves == [DirMove("a", 2, N3, "/d1", "/d2", 12 * GB)]
    assert full_dir_bound(dirs, 0.8) == 1


def test_a_full_dir_is_not_relieved_into_a_cordoned_or_full_dir() -> None:
    replicas = {("a", 0): 20 * GB}
    dirs = [
        LogDir(N3, "/d1", 100 * GB, 90 * GB, replicas=replicas),
        LogDir(N3, "/d2", 100 * GB, 0, cordoned=True),
        LogDir(N3, "/d3", 100 * GB, 70 * GB),
    ]
    from trimtab.allocation.log_dirs import relieve_full_dirs

    assert relieve_full_dirs(dirs, 0.8) == []


@st.composite
def broker_dirs(draw: st.DrawFn) -> list[LogDir]:
    dirs = []
    for k in range(draw(st.integers(1, 4))):
        sizes = draw(st.lists(st.integers(1, 30), max_size=8))
        total = draw(st.integers(1, 150))
        replicas = {("t", 10 * k + i): s * GB for i, s in enumerate(sizes)}
        dirs.append(
            LogDir(N3, f"/d{k}", total * GB, sum(replicas.values()), draw(st.booleans()), replicas)
        )
    return dirs


@PROPERTIES
@given(broker_dirs())
def test_intra_broker_relief_never_fills_a_dir_and_moves_at_least_the_bound(
    dirs: list[LogDir],
) -> None:
    """Property after IntraBrokerRebalanceTest's GOAL_VIOLATION/REGRESSION checks: no move
    lands on a cordoned dir or takes a dir over the limit; a dir brought under the limit
    took at least its share of the bound; no dir ends fuller than it began."""
    from trimtab.allocation.log_dirs import after_moves, full_dir_bound, relieve_full_dirs

    moves = relieve_full_dirs(dirs, 0.8)
    cordoned = {d.path for d in dirs if d.cordoned}
    assert all(m.target not in cordoned for m in moves)
    ended = {d.path: d.used_bytes for d in after_moves(dirs, moves, ())}
    for m in moves:
        ended[m.source] -= m.size_bytes
    limit = {d.path: 0.8 * (d.total_bytes or 0) for d in dirs}
    began = {d.path: d.used_bytes for d in dirs}
    for path, used in ended.items():
        assert used <= max(began[path], limit[path])
    if all(ended[d.path] <= limit[d.path] for d in dirs):
        assert len(moves) >= full_dir_bound(dirs, 0.8)


def test_cli_relieves_a_full_dir_inside_its_broker_with_no_network_bytes(tmp_path: Path) -> None:
    """What a user types: rebalance on log dirs with capacities where broker 2's /data/d1 is
    over 80 %: the moves are inside broker 2 (log_dir_moves), none between brokers."""
    import json

    from tests.allocation.test_cli_cordon import CURRENT, LOG_DIRS, inventory, run, with_dir_fields

    text = LOG_DIRS.read_text()
    doc = json.loads(text[text.index("{") :])
    used = {
        (b["broker"], d["logDir"]): sum(p["size"] for p in d["partitions"])
        for b in doc["brokers"]
        for d in b["logDirs"]
    }
    fields = {key: {"totalBytes": 10 * u + 100 * GB} for key, u in used.items()}
    fields[(2, "/data/d1")] = {"totalBytes": int(used[(2, "/data/d1")] / 0.9)}
    logs = with_dir_fields(tmp_path, fields)
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(logs)]
    code, out, err = run(*args, "--mode", "off", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["moves"] == []
    assert result["log_dir_moves"]
    assert all(
        m["broker"] == 2 and m["from_dir"] == "/data/d1" and m["to_dir"] == "/data/d2"
        for m in result["log_dir_moves"]
    )
    moved = sum(m["bytes"] for m in result["log_dir_moves"])
    assert used[(2, "/data/d1")] - moved <= 0.8 * fields[(2, "/data/d1")]["totalBytes"]
    assert result["all_moves"] == len(result["log_dir_moves"])
    assert result["all_moves"] >= result["lower_bound_all_moves"] >= 1


def test_an_evicted_replica_does_not_come_back_through_balancing() -> None:
    """Found by the property above: broker 0's /d0 is emptied and its other dir has no room,
    so t1-0's replica leaves broker 0. Count balancing then moved t1-0's other replica from
    broker 1 onto broker 0: in net terms t1-0 never left broker 0, and its replica stayed in
    the emptied dir. An evicted partition may not return to the node it leaves."""
    n0, n1 = NodeId("0"), NodeId("1")
    cluster = _cluster(["a"] * 8)
    held = [
        PartitionAssignment("t1", 0, (Replica(n0, 0), Replica(n1, 0)), 1),
        PartitionAssignment("t1", 1, (Replica(n1, 0),), 0),
    ]
    dirs = [
        LogDir(n0, "/d0", None, 1, True, {("t1", 0): 1}),
        LogDir(n0, "/d1", 0, 0),
        LogDir(n1, "/d0", None, 1, False, {("t1", 0): 1, ("t1", 1): 0}),
    ]
    emptied = {(n0, "/d0")}
    _, leave = empty_log_dirs(dirs, emptied)
    assert leave == [("t1", 0, n0)]
    plan = plan_rebalance(
        cluster,
        held,
        CONFIG,
        mode="node_add",
        evict=leave,
        dir_needs=dir_needs(dirs, emptied, 0.8),
    )
    after = {(a.topic, a.partition): a.nodes for a in plan.after}
    assert n0 not in after[("t1", 0)]
    assert len(plan.moves) >= plan.lower_bound_moves == 2


def test_replicas_evicted_from_a_closed_broker_count_in_the_shares() -> None:
    """Found by the property above: broker 6's only dir is emptied, so broker 6 is closed (in
    maintenance) and t1-1's replica leaves it for the balanced brokers 0 (4 cores) and 5
    (2 cores). The count term took the shares of the 3 replicas those two held, not the 4
    they end with, and asked for a count move the plan did not need: bound 2 for a plan of
    1 that reaches every goal."""
    cores = [4, 1, 1, 1, 1, 2, 1]
    cluster = make_cluster(cores)
    ids = [n.id for n in cluster]
    held = [
        PartitionAssignment("t1", 0, (Replica(ids[5], 0), Replica(ids[0], 0)), 0),
        PartitionAssignment("t1", 1, (Replica(ids[5], 0), Replica(ids[6], 0)), 0),
        PartitionAssignment("t1", 2, (Replica(ids[1], 0),), 0),
        PartitionAssignment("t1", 3, (Replica(ids[1], 0),), 0),
    ]
    health = [NodeStatus(ids[n], NodeHealth.DOWN, -1e6) for n in (1, 2, 3, 4)]
    health.append(NodeStatus(ids[6], NodeHealth.MAINTENANCE))
    dirs = [LogDir(ids[6], "/d0", None, 0, True, {("t1", 1): 0})]
    emptied = {(ids[6], "/d0")}
    _, leave = empty_log_dirs(dirs, emptied)
    args: dict[str, Any] = {"health": health, "now": 0.0, "mode": "node_add", "evict": leave}
    args["dir_needs"] = dir_needs(dirs, emptied, 0.8)
    plan = plan_rebalance(cluster, held, CONFIG, **args)
    assert [(m.partition, m.source) for m in plan.moves] == [(1, ids[6])]
    assert plan.lower_bound_moves == 1
    assert plan.lower_bound_terms["partition_count_rebalancing"] == 0
