"""Apache BookKeeper: the bookie registry in ZooKeeper, GET_BOOKIE_INFO over gRPC and the
v3 protocol, and the agent a storage node runs.

* :mod:`~trimtab.systems.bookkeeper.registry` — who is in the cluster: the ZooKeeper watcher
  and registrar (BookKeeper's ``/ledgers/available`` layout), ``BookieServiceInfoFormat``, the
  static registry file, and the :class:`~trimtab.systems.bookkeeper.registry.Membership`
  snapshot they hand out;
* :mod:`~trimtab.systems.bookkeeper.bookieinfo` — GetBookieInfo: the wire protocols, the agent,
  the clients, the reader that feeds a :class:`~trimtab.diskinfo.BookieInfoSink`, metrics.

The values they produce for the engines (:class:`~trimtab.diskinfo.BookieInfo`) live in the
model layer, :mod:`trimtab.diskinfo`.
"""

__all__: list[str] = []
