"""Where trimtab meets a real cluster: one package per upstream system.

The engines (:mod:`trimtab.placement`, :mod:`trimtab.shedding`, :mod:`trimtab.allocation` and
the pure tree of :mod:`trimtab.topology`) decide on snapshots and import no I/O library. Every
line that speaks a real system's protocol, reads the state it publishes or writes what its own
tools take lives here, beside the thing it adapts (as httpx keeps the network behind its
transports):

* :mod:`~trimtab.systems.zookeeper` — sessions, targets and chroots, znode encodings;
* :mod:`~trimtab.systems.bookkeeper` — the bookie registry, GET_BOOKIE_INFO over gRPC and
  BookKeeper's v3 protocol, the agent;
* :mod:`~trimtab.systems.pulsar` — load reports, the follow loop's watcher, the ``/bookies`` rack
  map, isolation policies, pulsar-admin commands;
* :mod:`~trimtab.systems.kafka` — assignment, log-dirs and reassignment documents (Kafka and
  Redpanda);
* :mod:`~trimtab.systems.prometheus` — the ``/metrics`` endpoint every command serves, secured
  as exporters are by a web configuration file.

Readers turn what a system publishes into the engines' snapshots; writers turn plans into what
the system's tools take. An import-linter contract in ``pyproject.toml`` keeps the layers.
"""

__all__: list[str] = []
