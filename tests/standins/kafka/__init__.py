"""A Kafka broker stand-in built from Kafka's message schemas as kafka-python ships them.

:mod:`~tests.standins.kafka.cluster` keeps the state (brokers, partitions, reassignments,
configs, simulated time, fault hooks), :mod:`~tests.standins.kafka.handlers` serves the APIs
``trimtab execute`` calls, :mod:`~tests.standins.kafka.server` the sockets (TLS, SASL), and
``python -m tests.standins.kafka`` runs it as a process.

What tests use: ``Cluster.calls`` (by API), ``reads``/``writes``, ``submissions`` and
``cancels`` (per partition), ``clock.advance(s)``/``clock.set_scale(x)``; the fault hooks
``Cluster.foreign_reassignment``, ``set_replicas``, ``remove_broker``/``restore_broker``,
``stall``, ``refuse_identical`` (Redpanda's answer to a repeat), ``node_rate`` (Redpanda's
recovery rate), and ``KafkaStandin.drop_connections``/``stop_broker``.
"""

from tests.standins.kafka.cluster import Broker, Cluster, Partition, SimClock
from tests.standins.kafka.server import KafkaStandin

__all__ = ["Broker", "Cluster", "KafkaStandin", "Partition", "SimClock"]
