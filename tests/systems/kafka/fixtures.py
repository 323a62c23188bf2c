"""Fixtures: the Kafka broker stand-in (tests/standins/kafka) and a target connected to it.

``kafka_cluster`` is four brokers on two racks and a topic ``orders`` of four 1 GB partitions
on brokers 1, 2, 3; its clock is frozen (scale 0), so a test moves simulated time with
``kafka_cluster.clock.advance(seconds)`` and never waits on the wall clock.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.standins.kafka import Cluster, KafkaStandin
from tests.systems.kafka.helpers import GB
from trimtab.systems.kafka.target import KafkaTarget, KafkaTargetOptions, connect_kafka

__all__ = ["kafka_cluster", "kafka_standin", "kafka_target"]


@pytest.fixture
def kafka_cluster() -> Cluster:
    cluster = Cluster(scale=0.0)
    for broker in (1, 2, 3, 4):
        cluster.add_broker(broker, f"rack-{broker % 2}")
    for index in range(4):
        cluster.add_partition("orders", index, [1, 2, 3], size=GB)
    return cluster


@pytest.fixture
def kafka_standin(kafka_cluster: Cluster) -> Iterator[KafkaStandin]:
    with KafkaStandin(kafka_cluster) as standin:
        yield standin


@pytest.fixture
def kafka_target(kafka_standin: KafkaStandin) -> Iterator[KafkaTarget]:
    target = connect_kafka(KafkaTargetOptions(kafka_standin.bootstrap, timeout_s=5.0))
    assert isinstance(target, KafkaTarget)
    yield target
    target.close()
