"""Moves between the log dirs of one broker (JBOD, KIP-113), as ``trimtab execute`` runs them.

Why a module of its own: a reassign action whose target pins ``log_dirs`` (issue 40 part 7: a
cordoned dir emptied, a full dir relieved inside its broker) is two operations upstream, and
``kafka-reassign-partitions.sh --execute`` sends both: AlterPartitionReassignments for the
replicas, AlterReplicaLogDirs for each pinned replica, per broker. The broker copies the log to
a *future* replica in the new dir (``is_future_key`` in DescribeLogDirs) and swaps it in when
caught up. A replica not yet on its broker gets the dir as its preferred one, and the answer is
NOT_LEADER_OR_FOLLOWER (REPLICA_NOT_AVAILABLE before Kafka 2.7): it is created there when the
reassignment adds it. The tool retries such answers; so does :class:`~.target.KafkaTarget`'s
poll, for a pinned replica that is on its broker but in neither dir.

The state of a pin, read with one DescribeLogDirs per broker named: the dir holding the replica,
the dir of its future replica and the bytes copied there, the broker's dirs and the cordoned
ones (KIP-1066). A pin is *met* when the replica is in its dir and no future replica is left.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trimtab.errors import TargetError
from trimtab.plans.document import Action
from trimtab.systems.kafka.admin import AdminConnection

__all__ = [
    "DirState",
    "LogDirs",
    "alter_log_dirs",
    "from_dirs",
    "pins",
    "read_log_dirs",
    "refuse",
]

Key = tuple[str, int]
#: Answers that mean "the replica is not on that broker yet": the dir is remembered for it.
NOT_THERE_YET = frozenset({"NotLeaderForPartition", "NotLeaderOrFollower", "ReplicaNotAvailable"})


def pins(action: Action) -> dict[int, str]:
    """Broker id -> the dir the action's target asks for (``log_dirs`` other than ``any``)."""
    replicas = [int(b) for b in action.target.get("replicas", [])]
    dirs = action.target.get("log_dirs") or ()
    return {b: str(d) for b, d in zip(replicas, dirs, strict=False) if d != "any"}


def from_dirs(action: Action) -> dict[int, str]:
    """Broker id -> the dir the plan found the replica in (``effect.dir_moves``)."""
    return {int(m["broker"]): str(m["from_dir"]) for m in action.effect.get("dir_moves", ())}


@dataclass(frozen=True)
class DirState:
    """Where one replica of a partition is on its broker."""

    dir: str | None  # None: not on the broker (yet)
    future: str | None = None
    future_bytes: int = 0


@dataclass
class LogDirs:
    """What DescribeLogDirs said of the brokers asked."""

    dirs: dict[int, set[str]] = field(default_factory=dict)
    cordoned: dict[int, set[str]] = field(default_factory=dict)
    where: dict[tuple[Key, int], DirState] = field(default_factory=dict)

    def state(self, key: Key, broker: int) -> DirState:
        return self.where.get((key, broker), DirState(None))

    def met(self, key: Key, pinned: Mapping[int, str]) -> bool:
        return all(
            self.state(key, b).dir == d and self.state(key, b).future is None
            for b, d in pinned.items()
        )

    def problem(self, key: Key, pinned: Mapping[int, str], before: Mapping[int, str]) -> str | None:
        """Why the pins cannot be met as planned: a dir the broker lacks, a cordoned one, a
        replica someone moved to a third dir; None when they can."""
        for broker, target in sorted(pinned.items()):
            known = self.dirs.get(broker, set())
            if target not in known:
                shown = ", ".join(sorted(known)) or "none reported"
                return f"broker {broker} has no log dir {target} (its dirs: {shown})"
            if target in self.cordoned.get(broker, set()):
                return f"log dir {target} of broker {broker} is cordoned (KIP-1066)"
            now = self.state(key, broker)
            planned = before.get(broker)
            if now.dir not in (None, target) and planned is not None and now.dir != planned:
                return (
                    f"the replica on broker {broker} is in {now.dir}, the plan expects "
                    f"{planned} (or {target})"
                )
        return None


def read_log_dirs(conn: AdminConnection, wanted: Mapping[int, Iterable[Key]]) -> LogDirs:
    """One DescribeLogDirs per broker of ``wanted`` (broker -> partitions)."""
    out = LogDirs()
    client = conn.client
    for broker, keys in sorted(wanted.items()):
        topics: dict[str, list[int]] = defaultdict(list)
        for t, i in sorted(set(keys)):
            topics[t].append(i)
        found = conn.call("DescribeLogDirs", client.describe_log_dirs, dict(topics), [broker])
        _fold(out, broker, found)
    return out


def _fold(out: LogDirs, broker: int, found: Sequence[Mapping[str, Any]]) -> None:
    current: dict[Key, str] = {}
    future: dict[Key, tuple[str, int]] = {}
    for entry in found:
        for d in entry["log_dirs"]:
            if d.get("error_code", 0):
                continue  # an offline dir (KAFKA_STORAGE_ERROR): neither a home nor a target
            path = str(d["log_dir"])
            out.dirs.setdefault(broker, set()).add(path)
            if d.get("is_cordoned"):
                out.cordoned.setdefault(broker, set()).add(path)
            for t in d["topics"]:
                for p in t["partitions"]:
                    key = (str(t["name"]), int(p["partition_index"]))
                    if p.get("is_future_key"):
                        future[key] = (path, int(p["partition_size"]))
                    else:
                        current[key] = path
    for key in current.keys() | future.keys():
        there, copied = future.get(key, (None, 0))
        out.where[(key, broker)] = DirState(current.get(key), there, copied)


def alter_log_dirs(conn: AdminConnection, moves: Mapping[tuple[Key, int], str]) -> dict[str, str]:
    """AlterReplicaLogDirs for ``moves`` ((partition, broker) -> dir), one request per broker.
    A replica not on its broker yet is no refusal (its dir is remembered for it); the others are
    returned, ``"topic/partition@broker" -> error``."""
    if not moves:
        return {}
    from kafka.structs import TopicPartitionReplica

    request = {TopicPartitionReplica(t, i, b): d for ((t, i), b), d in moves.items()}
    client = conn.client
    result = conn.call("AlterReplicaLogDirs", client.alter_replica_log_dirs, request)
    refused = {}
    for tpr, err in result.items():
        name = getattr(err, "__name__", str(err)).removesuffix("Error")
        if name in ("No", "NoError") or name in NOT_THERE_YET:
            continue
        refused[f"{tpr.topic}/{tpr.partition}@{tpr.broker_id}"] = name
    return refused


def refuse(endpoint: str, refused: Mapping[str, str]) -> None:
    """One TargetError line for the replicas a broker refused to move between dirs."""
    if refused:
        shown = "; ".join(f"{k}: {e}" for k, e in list(refused.items())[:10])
        raise TargetError(
            f"{endpoint} refused to move {len(refused)} replica(s) between log dirs: {shown}"
        )
