"""Redpanda: the Kafka API target with Redpanda's own throttle, through its Admin API.

Redpanda answers the Kafka reassignment APIs (:mod:`trimtab.systems.kafka.target` serves it
with ``system="redpanda"``), but it has no per-broker replication throttle configs: recovery
bandwidth is the cluster config ``raft_learner_recovery_rate``, read and written through the
Admin API (``GET``/``PUT /v1/cluster_config``, port 9644). Import from the modules:

* :mod:`~trimtab.systems.redpanda.admin_api` — the Admin API client (httpx, HTTP Basic auth
  from ``--redpanda-auth-file`` or ``RPK_USER``/``RPK_PASS``);
* :mod:`~trimtab.systems.redpanda.throttle` — the throttle as ``raft_learner_recovery_rate``,
  and its exact undo.
"""

__all__: list[str] = []
