"""The exceptions trimtab raises, one tree so callers can catch broadly or narrowly.

::

    TrimtabError
     ├── ConfigError                      (also a ValueError)
     │    ├── UnknownConfigKeyError        a key no setting answers to; carries a suggestion
     │    └── ConfigValueError             a known key with a value outside what it allows
     ├── InputError                       an input table that cannot be used at all
     │    └── ReportError                  a Pulsar load report refused, with its file or znode
     ├── InvalidTopologyError             (also a ValueError) mixed depths, bad rack names
     ├── ResolverError                    a DNS-to-switch resolver that cannot start
     ├── MembershipError                  ZooKeeper or a registry file that cannot be used
     ├── ZooKeeperAccessError             ZooKeeper refused us: authentication, TLS or an ACL
 ├── PlanError                        a plan document that cannot be used or approved
 ├── TargetError                      a cluster an executor cannot reach or that refused a call
     ├── AgentError                       a GetBookieInfo agent that cannot start or register
     ├── InvalidQuorumError               (also a ValueError) E/W/A sizes that cannot work together
     ├── NotEnoughNodesError              a placement the cluster cannot satisfy, with the numbers
     └── AllocationError                  a partition request the cluster cannot meet (rolled back)
          ├── InvalidReplicationFactorError  more replicas per partition than usable nodes
          ├── CapacityExhaustedError         no eligible node left for a replica, with the numbers
          ├── ClusterLimitError              over a cluster-wide limit (memory or fds per partition)
          └── TopicExistsError               the topic exists and partitions were not to be added

Row-level problems in input files are not exceptions: they are reported as rejected rows
(see :mod:`trimtab.readers.table_files`) so that one bad line never hides the good ones.
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "AllocationError",
    "CapacityExhaustedError",
    "ClusterLimitError",
    "ConfigError",
    "ConfigValueError",
    "InputError",
    "InvalidQuorumError",
    "InvalidReplicationFactorError",
    "InvalidTopologyError",
    "MembershipError",
    "NotEnoughNodesError",
    "PlanError",
    "ReportError",
    "ResolverError",
    "TargetError",
    "TopicExistsError",
    "TrimtabError",
    "UnknownConfigKeyError",
    "ZooKeeperAccessError",
]


class TrimtabError(Exception):
    """Base of every error trimtab raises on purpose."""


class ConfigError(TrimtabError, ValueError):
    """A configuration that cannot be used."""


class UnknownConfigKeyError(ConfigError):
    """A key that no setting answers to."""

    def __init__(self, key: str, suggestion: str | None, source: str | None = None) -> None:
        self.key = key
        self.suggestion = suggestion
        self.source = source
        where = f" in {source}" if source else ""
        hint = f"; did you mean '{suggestion}'?" if suggestion else ""
        super().__init__(f"unknown config key '{key}'{where}{hint}")


class ConfigValueError(ConfigError):
    """A known key whose value is outside what it allows."""

    def __init__(self, key: str, value: object, allowed: str, source: str | None = None) -> None:
        self.key = key
        self.value = value
        self.allowed = allowed
        self.source = source
        where = f" in {source}" if source else ""
        super().__init__(f"bad value {value!r} for config key '{key}'{where}: {allowed}")


class InputError(TrimtabError):
    """An input table that cannot be read at all (missing file, missing column, no rows)."""


class ReportError(InputError):
    """A Pulsar load report (``LocalBrokerData`` JSON) refused: ``source`` names the file or
    znode, the message says why."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


class InvalidTopologyError(TrimtabError, ValueError):
    """A network location that does not fit the topology (mixed depths, empty or '/' names)."""


class ResolverError(TrimtabError):
    """A DNS-to-switch resolver that cannot start (e.g. its script fails validation)."""


class MembershipError(TrimtabError):
    """A membership source that cannot be read: ZooKeeper unreachable within the time-out, a bad
    registry root, or a static registry file that is missing or holds no usable row."""


class ZooKeeperAccessError(TrimtabError):
    """A ZooKeeper that refuses trimtab (issue 41): authentication failed, the TLS handshake
    failed, or an ACL forbids a write; the message names the ensemble and what to fix."""


class AgentError(TrimtabError):
    """A GetBookieInfo agent that cannot start: a ledger directory missing, its address taken, or
    its registration still held by another live ZooKeeper session (a second agent, same id)."""


class InvalidQuorumError(TrimtabError, ValueError):
    """Ensemble, write-quorum and ack-quorum sizes that no placement can honour.

    For example a write quorum larger than the ensemble, an ack quorum larger than the write
    quorum, or (region-aware) an ack quorum too small to survive losing all but the minimum
    number of regions. Raised before any node is chosen: it is a request error, not a cluster
    shortage, so it is never retried with relaxed rules.
    """


class NotEnoughNodesError(TrimtabError):
    """Fewer eligible nodes than a placement asks for (BookKeeper's BKNotEnoughBookiesException).

    Carries the numbers so that the message explains itself: how many were asked for, how many
    nodes the cluster has that could serve, and how many of those were excluded.
    """

    def __init__(
        self, *, requested: int, available: int, excluded: int = 0, detail: str = ""
    ) -> None:
        self.requested = requested
        self.available = available
        self.excluded = excluded
        self.detail = detail
        msg = (
            f"not enough nodes: asked for {requested}, {available} available ({excluded} excluded)"
        )
        super().__init__(f"{msg}: {detail}" if detail else msg)


class AllocationError(TrimtabError):
    """A partition allocation request the cluster cannot meet; nothing of it stays allocated.

    ``topic`` names the request; subclasses say why, with the numbers.
    """

    def __init__(self, topic: str, message: str) -> None:
        self.topic = topic
        self.request_index: int | None = None  # set by batch callers: which request failed
        super().__init__(f"cannot allocate topic {topic!r}: {message}; nothing was allocated")


class InvalidReplicationFactorError(AllocationError):
    """More replicas per partition than there are nodes able to take one (Redpanda's
    ``topic_invalid_replication_factor``): no assignment can keep replicas on distinct nodes."""

    def __init__(
        self, topic: str, *, replication_factor: int, nodes: int, excluded: int = 0
    ) -> None:
        self.replication_factor = replication_factor
        self.nodes = nodes
        self.excluded = excluded
        detail = f", {excluded} more excluded" if excluded else ""
        super().__init__(
            topic,
            f"replication factor {replication_factor} is above the {nodes} node(s) that can take "
            f"replicas{detail}",
        )


class CapacityExhaustedError(AllocationError):
    """No eligible node was left for some replica: partition slots (or disk) ran out, or the
    nodes with room could not keep the partition's replicas on distinct machines."""

    def __init__(
        self,
        topic: str,
        *,
        needed: int,
        placed: int,
        free_slots: int,
        nodes_with_room: int,
        reason: str = "",
    ) -> None:
        self.needed = needed
        self.placed = placed
        self.free_slots = free_slots
        self.nodes_with_room = nodes_with_room
        self.reason = reason
        msg = (
            f"capacity exhausted: {needed} replica(s) needed, {free_slots} free partition slot(s) "
            f"on {nodes_with_room} node(s)"
        )
        if placed:
            msg += f"; no eligible node was left after placing {placed}"
        super().__init__(topic, f"{msg} ({reason})" if reason else msg)


class ClusterLimitError(AllocationError):
    """The cluster's replicas would exceed a resource limit (Redpanda's
    ``topic_invalid_partitions_memory_limit`` / ``…_fd_limit``): ``limit`` is ``memory`` or
    ``fds``; ``allowed`` replicas fit, ``proposed`` would exist."""

    def __init__(self, topic: str, *, limit: str, proposed: int, allowed: int, why: str) -> None:
        self.limit = limit
        self.proposed = proposed
        self.allowed = allowed
        super().__init__(
            topic,
            f"{proposed} partition replicas would exceed the {limit} limit of {allowed} ({why})",
        )


class TopicExistsError(AllocationError):
    """The topic already has partitions (Kafka's and Redpanda's ``topic already exists``);
    adding partitions to it must be asked for."""

    def __init__(self, topic: str, partitions: int) -> None:
        self.partitions = partitions
        super().__init__(
            topic,
            f"topic already exists (it has {partitions} partition(s)); to add partitions to it, "
            "ask for that (--add-partitions)",
        )


class PlanError(TrimtabError):
    """A plan document that cannot be used: not one, from a newer trimtab, edited after it
    was written, or an approval that does not name it."""


class TargetError(TrimtabError):
    """A cluster ``trimtab execute`` cannot reach, or a call it refused (one line naming the
    endpoint and what to fix)."""
