"""The Kafka broker stand-in answers kafka-python's admin client as a broker does: upstream's
error codes, reassignment states, config validation, and its process mode."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from tests.standins.kafka import Cluster, KafkaStandin


@pytest.fixture
def admin(kafka_standin: KafkaStandin) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=kafka_standin.bootstrap, request_timeout_ms=5000)
    yield client
    client.close()


def test_reassignment_errors_are_upstreams(admin: KafkaAdminClient) -> None:
    """Cancel without a move, an unknown partition, an unknown broker: Kafka's error codes."""
    result = admin.alter_partition_reassignments(
        {
            TopicPartition("orders", 0): None,
            TopicPartition("nope", 0): [1, 2, 3],
            TopicPartition("orders", 1): [1, 2, 9],
            TopicPartition("orders", 2): [1, 1, 2],
        }
    )
    assert result == {
        TopicPartition("orders", 0): NoReassignmentInProgressError,
        TopicPartition("nope", 0): UnknownTopicOrPartitionError,
        TopicPartition("orders", 1): InvalidReplicationAssignmentError,
        TopicPartition("orders", 2): InvalidReplicationAssignmentError,
    }


def test_an_ongoing_move_lists_adding_and_removing(
    admin: KafkaAdminClient, kafka_cluster: Cluster
) -> None:
    """KIP-455: replicas = target then the leaving ones; adding and removing listed."""
    kafka_cluster.stall("orders", 3)
    admin.alter_partition_reassignments({TopicPartition("orders", 3): [4, 2, 3]})
    listed = admin.list_partition_reassignments()
    assert listed == {
        TopicPartition("orders", 3): {
            "replicas": [4, 2, 3, 1],
            "adding_replicas": [4],
            "removing_replicas": [1],
        }
    }


def test_bad_throttle_values_are_invalid_config(
    admin: KafkaAdminClient, kafka_cluster: Cluster
) -> None:
    """A throttled-replicas list not in partition:broker form is refused, nothing applied."""
    bad = ConfigResource(
        ConfigResourceType.TOPIC, "orders", {"follower.replication.throttled.replicas": "0-4"}
    )
    result = admin.alter_configs([bad], raise_on_unknown=False, incremental=True)
    assert "InvalidConfigurationError" in result["topic"]["orders"]
    assert kafka_cluster.configs[(2, "orders")] == {}


@pytest.mark.subprocess
def test_the_process_loads_a_reassignment_document(tmp_path: Path) -> None:
    """python -m tests.standins.kafka serves a --state-file and dumps the counts on SIGTERM."""
    state = tmp_path / "current.json"
    state.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}
        )
    )
    dump = tmp_path / "dump.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.standins.kafka", "--brokers", "2", "--state-file",
         str(state), "--dump", str(dump)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().split()[1]
        client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        assert client.describe_topics(["t"])[0]["partitions"][0]["replica_nodes"] == [1, 2]
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()
    report = json.loads(dump.read_text())
    assert report["assignment"]["partitions"] == [
        {"topic": "t", "partition": 0, "replicas": [1, 2]}
    ]
    assert report["calls"]["Metadata"] >= 1
    assert report["writes"] == 0 and report["configs"] == {} and report["cancels"] == {}
