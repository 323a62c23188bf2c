"""The allocation_requests table: rows accepted or rejected with a reason, never dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trimtab.allocation import AllocationRequest
from trimtab.readers.allocation_requests import read_requests


def test_rows_become_requests(tmp_path: Path) -> None:
    """CSV rows with optional cluster and size columns; floats like 3.0 are whole numbers."""
    path = tmp_path / "r.csv"
    path.write_text(
        "cluster,topic,partitions,replication_factor,partition_size_bytes\n"
        "prod,orders,12,3,\nprod,clicks,24.0,3,1000\n"
    )
    parsed = read_requests(path)
    assert [r for r, _ in parsed.accepted] == [
        AllocationRequest(topic="orders", partitions=12, replication_factor=3, cluster="prod"),
        AllocationRequest(
            topic="clicks",
            partitions=24,
            replication_factor=3,
            partition_size_bytes=1000,
            cluster="prod",
        ),
    ]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"topic": "", "partitions": 1, "replication_factor": 3}, "missing topic"),
        ({"topic": "a b", "partitions": 1, "replication_factor": 3}, "bad topic name"),
        ({"topic": "t", "partitions": 0, "replication_factor": 3}, "partitions must be"),
        ({"topic": "t", "partitions": 2.5, "replication_factor": 3}, "whole number"),
        ({"topic": "t", "partitions": 1, "replication_factor": None}, "missing replication_factor"),
        (
            {"topic": "t", "partitions": 1, "replication_factor": 3, "partition_size_bytes": -1},
            "0 or more",
        ),
    ],
    ids=[
        "an empty topic",
        "a topic Kafka would refuse",
        "zero partitions",
        "a fractional count",
        "no replication factor",
        "a negative size",
    ],
)
def test_bad_rows_are_rejected_with_the_reason(
    tmp_path: Path, row: dict[str, object], reason: str
) -> None:
    """Each bad row comes back rejected, whole, with its line; the good row still counts."""
    path = tmp_path / "r.jsonl"
    good = {"topic": "ok", "partitions": 1, "replication_factor": 1}
    path.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    parsed = read_requests(path)
    assert len(parsed.accepted) == 1 and parsed.rows_read == 2
    (rejected,) = parsed.rejected
    assert rejected.line == 2 and reason in rejected.reason
