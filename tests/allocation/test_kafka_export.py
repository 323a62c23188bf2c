"""The reassignment JSON kafka-reassign-partitions.sh --execute takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trimtab.allocation import PartitionAssignment, Replica
from trimtab.cluster import NodeId
from trimtab.errors import InputError
from trimtab.systems.kafka.ids import broker_ids, read_broker_ids
from trimtab.systems.kafka.writers import dumps, reassignment

PLAN = (
    PartitionAssignment("orders", 1, (Replica(NodeId("2"), 0), Replica(NodeId("1"), 3))),
    PartitionAssignment("clicks", 0, (Replica(NodeId("1:9092"), 0),)),
    PartitionAssignment("orders", 0, (Replica(NodeId("1"), 1), Replica(NodeId("3"), 0))),
)


def test_the_document_has_kafkas_shape_in_topic_partition_order() -> None:
    """version 1, partitions by topic then partition, replicas as ordered broker ids."""
    ids = broker_ids(["1", "2", "3", "1:9092"], {"1:9092": 7})
    doc = reassignment(PLAN, ids)
    assert doc == {
        "version": 1,
        "partitions": [
            {"topic": "clicks", "partition": 0, "replicas": [7]},
            {"topic": "orders", "partition": 0, "replicas": [1, 3]},
            {"topic": "orders", "partition": 1, "replicas": [2, 1]},
        ],
    }
    text = dumps(doc)
    assert text.endswith("\n") and "\n" not in text[:-1] and json.loads(text) == doc


def test_log_dirs_are_any_or_absolute_paths() -> None:
    """log_dirs has one entry per replica; relative paths are refused."""
    ids = broker_ids(["1", "2", "3"])
    doc = reassignment(PLAN[:1], ids, log_dirs={NodeId("2"): "/data/kafka-1"})
    assert doc["partitions"][0]["log_dirs"] == ["/data/kafka-1", "any"]
    with pytest.raises(InputError, match="absolute path"):
        reassignment(PLAN[:1], ids, log_dirs={NodeId("2"): "data"})


def test_nodes_without_a_broker_id_are_named() -> None:
    """Host names that are not numbers need a mapping; the error says how to give one."""
    with pytest.raises(InputError, match=r"2 node\(s\) have none: a\.example:9092, b"):
        broker_ids(["a.example:9092", "b", "3"])
    with pytest.raises(InputError, match="both have broker id 3"):
        broker_ids(["3", "x"], {"x": 3})


def test_a_broker_id_table_is_read_whole_or_refused(tmp_path: Path) -> None:
    """node,broker_id rows map names to ids; a bad row refuses the file with its line."""
    good = tmp_path / "ids.csv"
    good.write_text("node,broker_id\nkafka-a.example:9092,1\nkafka-b.example:9092,2\n")
    assert read_broker_ids(good) == {"kafka-a.example:9092": 1, "kafka-b.example:9092": 2}
    bad = tmp_path / "bad.csv"
    bad.write_text("node,broker_id\nkafka-a.example:9092,one\n")
    with pytest.raises(InputError, match=r"bad\.csv:2"):
        read_broker_ids(bad)
