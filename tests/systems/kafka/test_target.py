"""The Kafka execute target against the broker stand-in, through the real kafka-python client."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.standins.kafka import Cluster, KafkaStandin
from tests.systems.kafka.helpers import GB, move
from trimtab.errors import TargetError
from trimtab.plans.document import Action
from trimtab.plans.target import Check, Target, ThrottleSet
from trimtab.systems.kafka.target import (
    KafkaTarget,
    KafkaTargetOptions,
    connect_kafka,
    live_assignment,
)

A0 = move(0, [1, 2, 3], [1, 2, 4])
A1 = move(1, [1, 2, 3], [4, 2, 3])


def test_target_satisfies_the_protocol(kafka_target: KafkaTarget) -> None:
    """The Kafka target offers every method of the executor's Target contract."""
    target: Target = kafka_target
    assert target.system == "kafka"
    assert target.describe().startswith("kafka 127.0.0.1:")


def test_untouched_partition_is_ready(kafka_target: KafkaTarget) -> None:
    """Replicas equal to the precondition and no reassignment: READY, live replicas shown."""
    seen = kafka_target.observe([A0])["orders/0"]
    assert seen.check is Check.READY
    assert seen.live["replicas"] == [1, 2, 3]


def test_submitted_move_is_moving_then_done(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """A submitted reassignment is MOVING until its copy ends, then DONE; poll agrees."""
    kafka_target.submit([A0])
    assert kafka_target.observe([A0])["orders/0"].check is Check.MOVING
    assert not kafka_target.poll([A0])["orders/0"].done
    kafka_cluster.clock.advance(10)  # 1 GB at the unthrottled 10 GB/s
    assert kafka_target.observe([A0])["orders/0"].check is Check.DONE
    progress = kafka_target.poll([A0])["orders/0"]
    assert progress.done and progress.bytes_done == GB
    assert kafka_cluster.partitions[("orders", 0)].replicas == [1, 2, 4]
    assert kafka_cluster.partitions[("orders", 0)].isr == [1, 2, 4]


def test_foreign_reassignment_is_changed(kafka_target: KafkaTarget, kafka_cluster: Cluster) -> None:
    """Someone else's reassignment of the partition makes the action CHANGED, saying so."""
    kafka_cluster.foreign_reassignment("orders", 0, [4, 2, 3])
    seen = kafka_target.observe([A0])["orders/0"]
    assert seen.check is Check.CHANGED
    assert "reassignment to [4, 2, 3] is in progress" in seen.why


def test_replicas_changed_by_someone_else(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """Replicas that are neither the precondition nor the target: CHANGED with both shown."""
    kafka_cluster.set_replicas("orders", 1, [3, 2, 1])
    seen = kafka_target.observe([A1])["orders/1"]
    assert seen.check is Check.CHANGED
    assert seen.live["replicas"] == [3, 2, 1]
    assert "[3, 2, 1]" in seen.why and "[1, 2, 3]" in seen.why


def test_missing_target_broker_is_changed(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """A broker the target needs that left the cluster makes the action CHANGED."""
    kafka_cluster.remove_broker(4)
    seen = kafka_target.observe([A0])["orders/0"]
    assert seen.check is Check.CHANGED
    assert "broker 4" in seen.why


def test_unknown_partition_is_changed(kafka_target: KafkaTarget) -> None:
    """A partition the cluster does not have is CHANGED, not an error."""
    seen = kafka_target.observe([move(0, [1], [2], topic="gone")])["gone/0"]
    assert seen.check is Check.CHANGED and "does not exist" in seen.why


def test_refused_reassignment_is_one_error_line(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """The controller's INVALID_REPLICA_ASSIGNMENT becomes one TargetError naming the item."""
    kafka_cluster.remove_broker(4)
    with pytest.raises(TargetError) as err:
        kafka_target.submit([A0])
    assert "orders/0" in str(err.value) and "\n" not in str(err.value)
    assert kafka_cluster.submissions[("orders", 0)] == 0


def test_cancel_puts_the_original_replicas_back(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """cancel is a reassignment to null: the partition keeps its original replicas."""
    kafka_cluster.stall("orders", 0)
    kafka_target.submit([A0])
    kafka_target.cancel([A0, A1])  # A1 was never started: NO_REASSIGNMENT_IN_PROGRESS is fine
    assert kafka_cluster.partitions[("orders", 0)].replicas == [1, 2, 3]
    assert kafka_target.observe([A0])["orders/0"].check is Check.READY
    assert kafka_cluster.cancels[("orders", 0)] == 1


def test_poll_reports_a_move_cancelled_by_someone_else(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """A started move that ends elsewhere than its target is failed, with the replicas."""
    kafka_cluster.stall("orders", 0)
    kafka_target.submit([A0])
    kafka_cluster.reassign("orders", 0, None)
    progress = kafka_target.poll([A0])["orders/0"]
    assert not progress.done and progress.failed and "[1, 2, 3]" in progress.failed


def test_throttle_is_set_as_reassign_partitions_does(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """Leader throttles list every current replica, follower throttles the added ones, and
    every broker involved gets both rates (upstream's ReassignPartitionsCommand)."""
    throttle = kafka_target.set_throttle(5_000_000, [A0, A1])
    topic = kafka_cluster.configs[(2, "orders")]
    assert topic["leader.replication.throttled.replicas"] == "0:1,0:2,0:3,1:1,1:2,1:3"
    assert topic["follower.replication.throttled.replicas"] == "0:4,1:4"
    for broker in ("1", "2", "3", "4"):
        assert kafka_cluster.configs[(4, broker)] == {
            "leader.replication.throttled.rate": "5000000",
            "follower.replication.throttled.rate": "5000000",
        }
    assert ThrottleSet.from_json(throttle.as_json()) == throttle


def test_throttle_is_cleared_to_exactly_what_was_there(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """An operator's own throttle values survive: clear gives back the configs found."""
    kafka_cluster.configs[(2, "orders")]["follower.replication.throttled.replicas"] = "3:2"
    kafka_cluster.configs[(4, "2")]["follower.replication.throttled.rate"] = "777"
    before = {k: dict(v) for k, v in kafka_cluster.configs.items()}
    throttle = kafka_target.set_throttle(5_000_000, [A0])
    topic = kafka_cluster.configs[(2, "orders")]
    assert topic["follower.replication.throttled.replicas"] == "3:2,0:4"
    # a journal stores the set as JSON; the undo works from that copy (after a crash)
    kafka_target.clear_throttle(ThrottleSet.from_json(throttle.as_json()))
    after = {k: v for k, v in kafka_cluster.configs.items() if v or k in before}
    assert after == before


def test_copy_runs_at_the_throttled_rate(kafka_target: KafkaTarget, kafka_cluster: Cluster) -> None:
    """Two throttled copies into broker 4 share its follower rate; bytes_done shows it."""
    kafka_target.set_throttle(1_000_000, [A0, A1])
    kafka_target.submit([A0, A1])
    kafka_cluster.clock.advance(100)
    progress = kafka_target.poll([A0, A1])
    assert progress["orders/0"].bytes_done == 50_000_000
    assert progress["orders/1"].bytes_done == 50_000_000


def test_stalled_move_makes_no_progress(kafka_target: KafkaTarget, kafka_cluster: Cluster) -> None:
    """A stalled move stays MOVING with the same bytes however long it runs."""
    kafka_target.set_throttle(1_000_000, [A0])
    kafka_target.submit([A0])
    kafka_cluster.clock.advance(10)
    first = kafka_target.poll([A0])["orders/0"].bytes_done
    kafka_cluster.stall("orders", 0)
    kafka_cluster.clock.advance(1000)
    assert kafka_target.poll([A0])["orders/0"].bytes_done == first == 10_000_000
    assert kafka_target.observe([A0])["orders/0"].check is Check.MOVING


def test_guards_count_under_replicated_beyond_the_moving_ones(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """A moving partition's short ISR is not harm; a broker going away is, on both counts."""
    kafka_cluster.stall("orders", 0)
    kafka_target.submit([A0])
    assert kafka_target.guards([A0]).under_replicated == ()
    kafka_cluster.remove_broker(3)
    guards = kafka_target.guards([A0])
    assert guards.under_replicated == ("orders/1", "orders/2", "orders/3")
    assert guards.missing_nodes == ("3",)


def test_dropped_connections_are_survived(
    kafka_target: KafkaTarget, kafka_standin: KafkaStandin
) -> None:
    """The client reconnects after the broker drops every connection."""
    assert kafka_target.observe([A0])["orders/0"].check is Check.READY
    assert kafka_standin.drop_connections() > 0
    assert kafka_target.observe([A0])["orders/0"].check is Check.READY


def test_live_assignment_is_a_reassignment_document(kafka_target: KafkaTarget) -> None:
    """The live assignment reads as kafka-reassign-partitions' "current assignment" JSON."""
    doc = live_assignment(kafka_target)
    assert kafka_target.current_assignment() == doc  # what execute --replan plans from
    assert doc["version"] == 1
    assert doc["partitions"][0] == {
        "topic": "orders",
        "partition": 0,
        "replicas": [1, 2, 3],
        "log_dirs": ["any", "any", "any"],
    }


def test_a_batch_costs_a_few_admin_calls(
    kafka_standin: KafkaStandin, kafka_cluster: Cluster
) -> None:
    """Checking and starting 200 moves takes three admin calls, not three per move."""
    for index in range(4, 200):
        kafka_cluster.add_partition("orders", index, [1, 2, 3], size=GB)
    target = connect_kafka(KafkaTargetOptions(kafka_standin.bootstrap))
    assert isinstance(target, KafkaTarget)
    try:
        batch = [move(i, [1, 2, 3], [1, 2, 4]) for i in range(200)]
        target.calls.clear()
        assert {o.check for o in target.observe(batch).values()} == {Check.READY}
        target.submit(batch)
        assert sum(target.calls.values()) == 3
        assert kafka_cluster.submissions.total() == 200
    finally:
        target.close()


def test_a_dry_run_reads_only(kafka_target: KafkaTarget, kafka_cluster: Cluster) -> None:
    """observe, poll and guards make no write call."""
    kafka_cluster.reset_counts()
    kafka_target.observe([A0, A1])
    kafka_target.poll([A0])
    kafka_target.guards([])
    assert kafka_cluster.writes == 0 and kafka_cluster.reads > 0


def test_metadata_lagging_the_controller_is_still_moving(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """A broker whose metadata still shows target + leaving replicas after the controller
    ended the move: the action is moving (not changed, not failed) until it catches up."""
    kafka_cluster.set_replicas("orders", 0, [1, 2, 4, 3])  # the union, no reassignment listed
    assert kafka_target.observe([A0])["orders/0"].check is Check.MOVING
    progress = kafka_target.poll([A0])["orders/0"]
    assert not progress.done and progress.failed is None


@pytest.fixture
def refused_sockets() -> Iterator[None]:
    """kafka-python 3.0.12 leaves the socket of a refused connection open (``sock_connect`` in
    its ``net/inet.py`` raises without closing it); the test closes its client, and the socket
    is collected here (its warnings ignored) rather than in a later test."""
    yield
    gc.collect()


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_destination_broker_gone_stalls_its_move(
    refused_sockets: None,
    kafka_target: KafkaTarget,
    kafka_cluster: Cluster,
    kafka_standin: KafkaStandin,
) -> None:
    """The broker receiving a copy stops answering: poll keeps its last bytes (a stall for the
    executor to judge), the guards name it, and nothing raises."""
    kafka_target.set_throttle(1_000_000, [A0])
    kafka_target.submit([A0])
    kafka_cluster.clock.advance(10)
    assert kafka_target.poll([A0])["orders/0"].bytes_done == 10_000_000
    kafka_standin.stop_broker(4)
    kafka_cluster.clock.advance(10)
    progress = kafka_target.poll([A0])["orders/0"]
    assert progress.bytes_done == 10_000_000 and not progress.done and progress.failed is None
    assert kafka_target.guards([A0]).missing_nodes == ("4",)
    kafka_target.close()


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_clearing_a_throttle_skips_no_broker_for_a_gone_one(
    refused_sockets: None,
    kafka_target: KafkaTarget,
    kafka_cluster: Cluster,
    kafka_standin: KafkaStandin,
) -> None:
    """A broker gone before the throttle is removed: every other broker and the topic are
    cleared, the error names what is left, and clearing again later is harmless."""
    throttle = kafka_target.set_throttle(1_000_000, [A0])
    kafka_standin.stop_broker(4)
    with pytest.raises(TargetError):
        kafka_target.clear_throttle(throttle)
    assert kafka_cluster.configs[(2, "orders")] == {}
    assert all(kafka_cluster.configs[(4, b)] == {} for b in ("1", "2", "3"))
    kafka_target.close()


def test_a_throttle_preview_writes_nothing_and_undoes_the_set(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """preview_throttle reads only and says what set_throttle writes; clearing the preview
    (as after a kill between the write and the journal) restores the configs found."""
    kafka_cluster.configs[(4, "2")]["follower.replication.throttled.rate"] = "777"
    before = {k: dict(v) for k, v in kafka_cluster.configs.items() if v}
    kafka_cluster.reset_counts()
    preview = kafka_target.preview_throttle(5_000_000, [A0, A1])
    assert kafka_cluster.writes == 0
    assert kafka_target.set_throttle(5_000_000, [A0, A1]) == preview
    kafka_target.clear_throttle(preview)
    assert {k: v for k, v in kafka_cluster.configs.items() if v} == before
    kafka_target.clear_throttle(preview)  # again: harmless
    assert {k: v for k, v in kafka_cluster.configs.items() if v} == before


def test_a_reorder_completes_at_once(kafka_target: KafkaTarget, kafka_cluster: Cluster) -> None:
    """A new leader order copies nothing: the move is done as soon as it is submitted."""
    reorder = move(3, [1, 2, 3], [2, 1, 3])
    kafka_target.submit([reorder])
    assert kafka_target.observe([reorder])["orders/3"].check is Check.DONE
    assert kafka_cluster.partitions[("orders", 3)].replicas == [2, 1, 3]


def _jbod(cluster: Cluster) -> None:
    """Every broker gets two log dirs, /data/d1 and /data/d2; the replicas sit in /data/d1."""
    for broker in cluster.brokers.values():
        broker.log_dirs = ["/data/d1", "/data/d2"]


def _pinned(index: int, before: list[int], after: list[int], dirs: dict[int, str]) -> Action:
    """A reassign action pinning ``dirs`` (broker -> dir), as `rebalance --cordon` writes it."""
    base = move(index, before, after)
    target = {**base.target, "log_dirs": [dirs.get(b, "any") for b in after]}
    dir_moves = [
        {"broker": b, "from_dir": "/data/d1", "to_dir": d, "bytes": GB}
        for b, d in dirs.items()
        if b in before
    ]
    return replace(base, target=target, effect={**base.effect, "dir_moves": dir_moves})


def test_a_move_between_log_dirs_runs_through_a_future_replica(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """Replicas unchanged, broker 3's pinned to /data/d2 (issue 40 part 7): READY, then
    AlterReplicaLogDirs; MOVING while the future replica copies; DONE once swapped in."""
    _jbod(kafka_cluster)
    kafka_cluster.fast_rate = GB // 10  # 10 s of simulated time for the 1 GB log
    action = _pinned(0, [1, 2, 3], [1, 2, 3], {3: "/data/d2"})
    assert kafka_target.observe([action])["orders/0"].check is Check.READY
    kafka_target.submit([action])
    assert kafka_cluster.writes == 1  # AlterReplicaLogDirs only: the replicas do not change
    seen = kafka_target.observe([action])["orders/0"]
    assert seen.check is Check.MOVING and seen.live["log_dirs"] == {"3": "/data/d1"}
    assert not kafka_target.poll([action])["orders/0"].done
    kafka_cluster.clock.advance(11)
    assert kafka_target.poll([action])["orders/0"].done
    done = kafka_target.observe([action])["orders/0"]
    assert done.check is Check.DONE and done.live["log_dirs"] == {"3": "/data/d2"}
    assert kafka_cluster.partitions[("orders", 0)].dirs == {3: "/data/d2"}


def test_a_new_replica_is_created_in_its_pinned_dir(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """Replica 3 -> 4 with broker 4's pinned to /data/d2: the dir is sent first (broker 4
    answers NOT_LEADER_OR_FOLLOWER and remembers it), and the copy lands there directly."""
    _jbod(kafka_cluster)
    action = _pinned(1, [1, 2, 3], [1, 2, 4], {4: "/data/d2"})
    kafka_target.submit([action])
    kafka_cluster.clock.advance(60)
    assert kafka_target.poll([action])["orders/1"].done
    assert kafka_target.observe([action])["orders/1"].check is Check.DONE
    assert kafka_cluster.partitions[("orders", 1)].dirs[4] == "/data/d2"


def test_a_missing_or_cordoned_dir_is_a_changed_precondition(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """The dir a pin names must exist on its broker and be open (KIP-1066): otherwise the
    check is CHANGED, saying which dir and broker, and nothing is sent."""
    _jbod(kafka_cluster)
    missing = _pinned(0, [1, 2, 3], [1, 2, 3], {3: "/data/d3"})
    seen = kafka_target.observe([missing])["orders/0"]
    assert seen.check is Check.CHANGED
    assert seen.why == "broker 3 has no log dir /data/d3 (its dirs: /data/d1, /data/d2)"
    kafka_cluster.brokers[3].log_dirs = ["/data/d2", "/data/d1"]  # d2 first: the cordoned one
    kafka_cluster.brokers[3].cordoned = True
    kafka_cluster.partitions[("orders", 0)].dirs[3] = "/data/d1"
    cordoned = _pinned(0, [1, 2, 3], [1, 2, 3], {3: "/data/d2"})
    seen = kafka_target.observe([cordoned])["orders/0"]
    assert seen.check is Check.CHANGED and "cordoned" in seen.why
    with pytest.raises(TargetError, match="LogDirNotFound"):
        kafka_target.submit([missing])
    assert kafka_cluster.partitions[("orders", 0)].future == {}


def test_a_dir_throttle_is_set_and_given_back(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """A throttled run sets replica.alter.log.dirs.io.max.bytes.per.second on the brokers of
    the pinned replicas (upstream's --replica-alter-log-dirs-throttle), and clears it."""
    _jbod(kafka_cluster)
    action = _pinned(0, [1, 2, 3], [1, 2, 3], {3: "/data/d2"})
    throttle = kafka_target.set_throttle(50_000_000, [action])
    assert kafka_cluster.configs[(4, "3")]["replica.alter.log.dirs.io.max.bytes.per.second"] == (
        "50000000"
    )
    kafka_target.clear_throttle(throttle)
    assert not any(kafka_cluster.configs.values())
