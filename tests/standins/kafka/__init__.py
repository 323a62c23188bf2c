"""A Kafka broker stand-in built from Kafka's message schemas as kafka-python ships them.

:mod:`~tests.standins.kafka.cluster` keeps the state (brokers, partitions, reassignments,
configs, simulated time, fault hooks), :mod:`~tests.standins.kafka.handlers` serves the APIs
``trimtab execute`` calls, :mod:`~tests.standins.kafka.server` the sockets (TLS, SASL), and
``python -m tests.standins.kafka`` runs it as a process.
"""

from tests.standins.kafka.cluster import Broker, Cluster, Partition, SimClock
from tests.standins.kafka.server import KafkaStandin

__all__ = ["Broker", "Cluster", "KafkaStandin", "Partition", "SimClock"]
