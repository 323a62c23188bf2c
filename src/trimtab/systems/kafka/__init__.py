"""Apache Kafka and Redpanda: the current assignment, ``kafka-log-dirs --describe`` and
``kafka-reassign-partitions`` documents.

Import from the modules (the package imports none of them):

* :mod:`~trimtab.systems.kafka.readers` — the current assignment and the log dirs, read into
  the allocator's state (partition sizes, free disk);
* :mod:`~trimtab.systems.kafka.writers` — plans as reassignment JSON, and their rollback;
* :mod:`~trimtab.systems.kafka.ids` — Kafka broker ids of trimtab's nodes, for both.
"""

__all__: list[str] = []
