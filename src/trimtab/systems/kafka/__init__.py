"""Apache Kafka and Redpanda: the current assignment, ``kafka-log-dirs --describe`` and
``kafka-reassign-partitions`` documents."""

__all__: list[str] = []
