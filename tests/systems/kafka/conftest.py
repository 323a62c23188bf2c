"""The Kafka stand-in fixtures (tests/systems/kafka/fixtures.py) for these tests."""

from tests.systems.kafka.fixtures import kafka_cluster, kafka_standin, kafka_target

__all__ = ["kafka_cluster", "kafka_standin", "kafka_target"]
