"""Apache Kafka and Redpanda: the current assignment, ``kafka-log-dirs --describe`` and
``kafka-reassign-partitions`` documents.

Import from the modules (the package imports none of them):

* :mod:`~trimtab.systems.kafka.readers` — the current assignment and the log dirs, read into
  the allocator's state (partition sizes, free disk);
* :mod:`~trimtab.systems.kafka.writers` — plans as reassignment JSON, and their rollback;
* :mod:`~trimtab.systems.kafka.ids` — Kafka broker ids of trimtab's nodes, for both;
* :mod:`~trimtab.systems.kafka.target` — the cluster as a target of ``trimtab execute``
  (reassignments through the admin API, kafka-python), and the live assignment;
* :mod:`~trimtab.systems.kafka.admin` — one admin connection, its calls counted and its
  failures as one line; :mod:`~trimtab.systems.kafka.command_config` — ``--command-config``;
* :mod:`~trimtab.systems.kafka.throttle` — the replication throttles of
  ``kafka-reassign-partitions.sh --throttle``, undone exactly.
"""

__all__: list[str] = []
