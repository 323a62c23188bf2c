"""Apache BookKeeper: the bookie registry in ZooKeeper, GET_BOOKIE_INFO over gRPC and the
v3 protocol, and the agent a storage node runs."""

__all__: list[str] = []
