"""Plain-Python readers of the input tables' files: a path in, parsed values and refused rows out.

The engines (:mod:`trimtab.placement`, :mod:`trimtab.shedding`, :mod:`trimtab.allocation` and
:mod:`trimtab.topology`) take parsed values and never import this package; the callers (the
CLI, the pipeline, the simulators and :mod:`trimtab.systems`) read the files:

* :mod:`~trimtab.readers.table_files` — CSV, JSON-lines and Parquet files (or a directory of
  them) row by row with their origin, each row parsed or refused, repeats settled;
* :mod:`~trimtab.readers.inventory` — ``nodes`` into a :class:`~trimtab.cluster.ClusterState`
  per cluster;
* :mod:`~trimtab.readers.metrics` — ``node_metrics`` and ``bundle_metrics`` into the
  shedder's rows;
* :mod:`~trimtab.readers.allocation_requests` — ``allocation_requests`` into the allocator's
  requests;
* :mod:`~trimtab.readers.node_health` — ``node_health`` into the partition balancer's statuses.

Every table's columns and row rules are :data:`trimtab.contract.TABLES`, stated once; the
Spark ingest derives its own from the same declarations.
"""

__all__: list[str] = []
