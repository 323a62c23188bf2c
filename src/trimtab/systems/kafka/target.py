"""Kafka (and Redpanda) as a target of ``trimtab execute``: reassignments through the admin API.

Each method is a few admin calls whatever the number of actions, so a batch of 1,000 moves costs
the same handful of round trips as one:

- :meth:`KafkaTarget.observe`: one Metadata (replicas, ISR, live brokers) for the batch's topics
  and one ListPartitionReassignments for its partitions. An action is READY when the replicas
  equal its precondition and nothing moves the partition, MOVING when a reassignment to exactly
  its target is in progress, DONE when the replicas equal its target and nothing moves, CHANGED
  otherwise (someone else's reassignment, replicas changed, a broker it needs is gone) with why;
- :meth:`~KafkaTarget.submit`: one AlterPartitionReassignments; :meth:`~KafkaTarget.cancel` one
  with null replicas (KIP-455);
- :meth:`~KafkaTarget.poll`: ListPartitionReassignments, then Metadata for the ended ones and
  DescribeLogDirs on the brokers still receiving data (bytes copied so far);
- throttles: :class:`~trimtab.systems.kafka.throttle.ConfigThrottle` for Kafka, Redpanda's
  ``raft_learner_recovery_rate`` (:mod:`trimtab.systems.redpanda.throttle`) for Redpanda;
- :meth:`~KafkaTarget.guards`: one Metadata of every topic: partitions whose ISR is short of
  their replicas, beyond the ones moving, and brokers that left.

:attr:`KafkaTarget.calls` counts the admin calls by API (the bench divides by the moves).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from trimtab.errors import TargetError
from trimtab.plans.document import Action
from trimtab.plans.target import Check, Guards, Observation, Progress, Target, ThrottleSet
from trimtab.systems.kafka.admin import AdminConnection, parse_bootstrap
from trimtab.systems.kafka.command_config import read_command_config
from trimtab.systems.kafka.log_dir_moves import (
    LogDirs,
    alter_log_dirs,
    from_dirs,
    pins,
    read_log_dirs,
    refuse,
)
from trimtab.systems.kafka.throttle import ConfigThrottle, partition_of

__all__ = [
    "KafkaTarget",
    "KafkaTargetOptions",
    "Throttle",
    "connect_kafka",
    "live_assignment",
    "option_warnings",
]


@dataclass(frozen=True)
class KafkaTargetOptions:
    """What ``trimtab execute`` is given for a Kafka or Redpanda cluster."""

    bootstrap_servers: str
    command_config: Path | None = None
    system: str = "kafka"
    redpanda_admin: str | None = None
    redpanda_auth_file: Path | None = None
    timeout_s: float = 10.0


class Throttle(Protocol):
    """How a system throttles the copies of a reassignment (and undoes it)."""

    def preview(self, rate: int, actions: Sequence[Action]) -> ThrottleSet: ...

    def set(self, rate: int, actions: Sequence[Action]) -> ThrottleSet: ...

    def clear(self, throttle: ThrottleSet) -> None: ...


def _tp(topic: str, index: int) -> Any:
    from kafka import TopicPartition

    return TopicPartition(topic, index)


class _Part(NamedTuple):
    """One partition as Metadata shows it."""

    replicas: list[int]
    isr: list[int]
    offline: list[int]


def _finishing(replicas: list[int], target: list[int]) -> bool:
    """Replicas shown as the target followed by the leaving ones while no reassignment is
    listed: the controller has ended the move and this broker's metadata has not caught up
    (metadata propagates to the brokers after the controller decides)."""
    return len(replicas) > len(target) and replicas[: len(target)] == target


def _replicas(doc: Mapping[str, Any]) -> list[int]:
    return [int(b) for b in doc.get("replicas", [])]


def _check_dirs(
    action: Action, key: tuple[str, int], seen: Observation, dirs: LogDirs
) -> Observation:
    """The replica check of a pinned action, with its log dirs: DONE only once every pinned
    replica is in its dir; MOVING while a future replica copies; READY when the replicas are
    in place and the dirs can take them; CHANGED when a dir is missing or cordoned, or someone
    moved a replica to a third dir."""
    if seen.check in (Check.CHANGED, Check.MOVING):
        return seen
    pinned = pins(action)
    shown = {
        **seen.live,
        "log_dirs": {str(b): dirs.state(key, b).dir for b in pinned},
    }
    if seen.check is Check.DONE:
        if dirs.met(key, pinned):
            return Observation(action.id, Check.DONE, shown)
        if any(dirs.state(key, b).future == d for b, d in pinned.items()):
            return Observation(action.id, Check.MOVING, shown)
    problem = dirs.problem(key, pinned, from_dirs(action))
    if problem is not None:
        return Observation(action.id, Check.CHANGED, shown, problem)
    return Observation(action.id, Check.READY, shown)


class KafkaTarget:
    """A Kafka or Redpanda cluster reached through :class:`AdminConnection`."""

    #: ``warning:`` lines for the user (a secret file others can read, an unknown key)
    warnings: tuple[str, ...]

    def __init__(self, conn: AdminConnection, system: str, throttle: Throttle | None) -> None:
        self.conn = conn
        self.system = system
        self.throttle = throttle if throttle is not None else ConfigThrottle(conn)
        self.warnings: tuple[str, ...] = ()
        self._seen: dict[tuple[tuple[str, int], int], int] = {}  # (partition, broker) -> bytes

    @property
    def calls(self) -> Counter[str]:
        return self.conn.calls

    def describe(self) -> str:
        return f"{self.system} {self.conn.bootstrap}"

    # -- reading -------------------------------------------------------------------------

    def _state(self, topics: Sequence[str] | None) -> tuple[dict[tuple[str, int], _Part], set[int]]:
        """Partitions (by (topic, index)) and live broker ids, from one Metadata call."""
        meta = self.conn.metadata(None if topics is None else sorted(set(topics)))
        parts: dict[tuple[str, int], _Part] = {}
        for topic in meta.topics:
            if topic.error_code:
                continue  # UNKNOWN_TOPIC_OR_PARTITION: the topic's partitions are absent
            for p in topic.partitions:
                parts[(topic.name, p.partition_index)] = _Part(
                    list(p.replica_nodes), list(p.isr_nodes), list(p.offline_replicas or ())
                )
        return parts, {b.node_id for b in meta.brokers}

    def _ongoing(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[int]]:
        """Partitions moving now, each with the replicas it is moving to."""
        if not keys:
            return {}
        client = self.conn.client
        tps = [_tp(t, i) for t, i in keys]
        found = self.conn.call(
            "ListPartitionReassignments", client.list_partition_reassignments, tps
        )
        return {
            (tp.topic, tp.partition): [
                r for r in r_["replicas"] if r not in r_["removing_replicas"]
            ]
            for tp, r_ in found.items()
        }

    def observe(self, actions: Sequence[Action]) -> Mapping[str, Observation]:
        keys = [partition_of(a) for a in actions]
        parts, live = self._state([t for t, _ in keys])
        moving = self._ongoing(keys)
        seen = {
            a.id: self._check(a, k, parts.get(k), moving.get(k), live)
            for a, k in zip(actions, keys, strict=True)
        }
        pinned = [(a, k) for a, k in zip(actions, keys, strict=True) if pins(a)]
        if pinned:
            dirs = self._log_dirs(pinned)
            for a, k in pinned:
                seen[a.id] = _check_dirs(a, k, seen[a.id], dirs)
        return seen

    def _log_dirs(self, pinned: Sequence[tuple[Action, tuple[str, int]]]) -> LogDirs:
        """DescribeLogDirs of the brokers the pinned actions name (one call per broker)."""
        if self.system != "kafka":
            raise TargetError(
                f"{pinned[0][0].item}: the plan moves a replica between log dirs, but "
                f"{self.system} has one data directory per node"
            )
        wanted: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for a, k in pinned:
            for broker in pins(a):
                wanted[broker].append(k)
        return read_log_dirs(self.conn, wanted)

    def _check(
        self,
        action: Action,
        key: tuple[str, int],
        part: _Part | None,
        moving_to: list[int] | None,
        live: set[int],
    ) -> Observation:
        before, after = _replicas(action.precondition), _replicas(action.target)
        if part is None:
            return Observation(
                action.id, Check.CHANGED, {"replicas": []}, f"{action.item} does not exist"
            )
        replicas = part.replicas
        shown: dict[str, Any] = {"replicas": replicas, "isr": part.isr}
        gone = sorted(b for b in after if b not in live)
        if moving_to is not None:
            shown["moving_to"] = moving_to
            if moving_to == after:
                return Observation(action.id, Check.MOVING, shown)
            return Observation(
                action.id,
                Check.CHANGED,
                shown,
                f"a reassignment to {moving_to} is in progress (not this plan's {after})",
            )
        if replicas == after:  # done, even if a broker of it left since (the guards say so)
            return Observation(action.id, Check.DONE, shown)
        if _finishing(replicas, after):
            return Observation(action.id, Check.MOVING, shown)
        if gone:
            return Observation(
                action.id,
                Check.CHANGED,
                shown,
                f"broker {', '.join(map(str, gone))} of the target is not in the cluster",
            )
        if replicas == before:
            return Observation(action.id, Check.READY, shown)
        return Observation(
            action.id, Check.CHANGED, shown, f"replicas are {replicas}, the plan expects {before}"
        )

    # -- acting ------------------------------------------------------------------------------

    def _alter(
        self, changes: Mapping[tuple[str, int], list[int] | None]
    ) -> dict[tuple[str, int], str]:
        """One AlterPartitionReassignments; the partitions it refused, with upstream's error."""
        client = self.conn.client
        request = {_tp(t, i): r for (t, i), r in changes.items()}
        result = self.conn.call(
            "AlterPartitionReassignments", client.alter_partition_reassignments, request
        )
        return {
            (tp.topic, tp.partition): err.__name__.removesuffix("Error")
            for tp, err in result.items()
            if err is not None
        }

    def _refused(self, refused: Mapping[tuple[str, int], str]) -> None:
        if refused:
            shown = "; ".join(f"{t}/{i}: {err}" for (t, i), err in list(refused.items())[:10])
            raise TargetError(
                f"{self.conn.endpoint} refused {len(refused)} reassignment(s): {shown}"
            )

    def submit(self, actions: Sequence[Action]) -> None:
        """Start ``actions``. A refusal of a partition already moving to its target is none:
        a call repeated after a dropped connection meets its own first attempt, which Redpanda
        answers with ``unknown_server_error``."""
        if not actions:
            return
        # dirs first: a replica the reassignment creates is then made in its dir (no second copy)
        dir_moves = {(partition_of(a), b): d for a in actions for b, d in pins(a).items()}
        refuse(self.conn.endpoint, alter_log_dirs(self.conn, dir_moves))
        actions = [a for a in actions if _replicas(a.target) != _replicas(a.precondition)]
        if not actions:
            return
        refused = self._alter({partition_of(a): _replicas(a.target) for a in actions})
        if refused:
            mine = [a for a in actions if partition_of(a) in refused]
            seen = self.observe(mine)
            for a in mine:
                if seen[a.id].check in (Check.MOVING, Check.DONE):
                    del refused[partition_of(a)]
        self._refused(refused)

    def cancel(self, actions: Sequence[Action]) -> None:
        """Cancel ``actions`` (NO_REASSIGNMENT_IN_PROGRESS: it had ended, nothing to do)."""
        if actions:
            refused = self._alter({partition_of(a): None for a in actions})
            self._refused({k: e for k, e in refused.items() if e != "NoReassignmentInProgress"})

    def poll(self, actions: Sequence[Action]) -> Mapping[str, Progress]:
        keys = [partition_of(a) for a in actions]
        moving = self._ongoing(keys)
        ended = [(a, k) for a, k in zip(actions, keys, strict=True) if k not in moving]
        out: dict[str, Progress] = {}
        if ended:
            parts, _live = self._state([k[0] for _, k in ended])
            for a, k in ended:
                part = parts.get(k)
                replicas = part.replicas if part is not None else []
                if replicas == _replicas(a.target):
                    out[a.id] = Progress(a.id, done=True, bytes_done=a.bytes)
                elif _finishing(replicas, _replicas(a.target)):
                    out[a.id] = Progress(a.id, bytes_done=a.bytes)
                else:
                    why = (
                        f"ended with replicas {replicas}, not {_replicas(a.target)} "
                        "(cancelled or changed by someone else)"
                    )
                    out[a.id] = Progress(a.id, failed=why)
        copying = [(a, k) for a, k in zip(actions, keys, strict=True) if k in moving]
        copied = self._copied(copying)
        for a, _k in copying:
            done = copied.get(a.id, 0)
            out[a.id] = Progress(a.id, bytes_done=min(done, a.bytes) if a.bytes else done)
        placed = [(a, k) for a, k in ended if pins(a) and out[a.id].done]
        if placed:
            self._poll_dirs(placed, out)
        return out

    def _poll_dirs(
        self, placed: Sequence[tuple[Action, tuple[str, int]]], out: dict[str, Progress]
    ) -> None:
        """Pinned actions whose replicas are in place: done once every pinned replica is in
        its dir; a replica in neither dir nor moving (created before its dir was known) is
        asked again, as upstream's tool retries."""
        dirs = self._log_dirs(placed)
        again: dict[tuple[tuple[str, int], int], str] = {}
        for a, k in placed:
            pinned = pins(a)
            if dirs.met(k, pinned):
                continue
            out[a.id] = Progress(a.id, bytes_done=a.bytes)
            for b, d in pinned.items():
                state = dirs.state(k, b)
                if state.dir != d and state.future != d:
                    again[(k, b)] = d
        refuse(self.conn.endpoint, alter_log_dirs(self.conn, again))

    def _copied(self, copying: Sequence[tuple[Action, tuple[str, int]]]) -> dict[str, int]:
        """Bytes each moving action has copied to its new brokers (DescribeLogDirs per broker).
        A broker that does not answer keeps the bytes last read from it: its copies look
        stalled (the executor's stall time-out and guards judge that), not lost."""
        wanted: dict[int, list[tuple[Action, tuple[str, int]]]] = defaultdict(list)
        for a, k in copying:
            for b in _replicas(a.target):
                if b not in _replicas(a.precondition):
                    wanted[b].append((a, k))
        copied: Counter[str] = Counter()
        for broker, items in sorted(wanted.items()):
            try:
                sizes = self._log_sizes(broker, [k for _a, k in items])
            except TargetError:
                sizes = {k: self._seen.get((k, broker), 0) for _a, k in items}
            for a, k in items:
                self._seen[(k, broker)] = sizes.get(k, 0)
                copied[a.id] += sizes.get(k, 0)
        return dict(copied)

    def _log_sizes(
        self, broker: int, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """The size of each partition's log on ``broker`` (one DescribeLogDirs)."""
        topics: dict[str, list[int]] = defaultdict(list)
        for t, i in keys:
            topics[t].append(i)
        client = self.conn.client
        found = self.conn.call("DescribeLogDirs", client.describe_log_dirs, dict(topics), [broker])
        return {
            (t["name"], p["partition_index"]): int(p["partition_size"])
            for entry in found
            for d in entry["log_dirs"]
            for t in d["topics"]
            for p in t["partitions"]
        }

    def preview_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        """What :meth:`set_throttle` would write (ThrottlePreview): the executor journals it
        first, so a kill right after the write still leaves enough to undo it."""
        return self.throttle.preview(rate, actions)

    def set_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        return self.throttle.set(rate, actions)

    def clear_throttle(self, throttle: ThrottleSet) -> None:
        self.throttle.clear(throttle)

    def guards(self, moving: Sequence[Action]) -> Guards:
        parts, live = self._state(None)
        mine = {partition_of(a) for a in moving}
        short = sorted(
            f"{t}/{i}"
            for (t, i), p in parts.items()
            if (t, i) not in mine and len(p.isr) < len(p.replicas)
        )
        needed = {int(b) for a in moving for b in _replicas(a.target) + _replicas(a.precondition)}
        offline = {b for p in parts.values() for b in p.offline}
        missing = sorted((needed | offline) - live)
        return Guards(under_replicated=tuple(short), missing_nodes=tuple(str(b) for b in missing))

    def current_assignment(self) -> dict[str, Any]:
        """The live assignment of every topic (what ``execute --replan`` plans from)."""
        return live_assignment(self)

    def close(self) -> None:
        self.conn.close()


def live_assignment(target: KafkaTarget, topics: Sequence[str] | None = None) -> dict[str, Any]:
    """The current replica assignment as a ``kafka-reassign-partitions`` document (what
    ``--generate`` prints as "Current partition replica assignment")."""
    parts, _live = target._state(topics)
    rows = [
        {
            "topic": t,
            "partition": i,
            "replicas": p.replicas,
            "log_dirs": ["any"] * len(p.replicas),
        }
        for (t, i), p in sorted(parts.items())
    ]
    return {"version": 1, "partitions": rows}


def option_warnings(options: KafkaTargetOptions) -> list[str]:
    """The ``warning:`` lines the options call for (a secret file others can read, an unknown
    ``ssl.*`` key), read before connecting so they show even when the connection fails."""
    warnings = list(read_command_config(options.command_config).warnings)
    if options.system == "redpanda" and options.redpanda_admin is not None:
        from trimtab.systems.redpanda.admin_api import cleartext_warning, read_basic_auth

        auth, more = read_basic_auth(options.redpanda_auth_file)
        warnings += more + cleartext_warning(options.redpanda_admin, auth)
    return warnings


def connect_kafka(options: KafkaTargetOptions) -> Target:
    """Connect to the cluster of ``options`` (a Kafka or Redpanda target); the addresses and the
    ``--command-config`` are checked first, and any failure is one TargetError line."""
    if options.system not in ("kafka", "redpanda"):
        raise TargetError(f"connect_kafka serves kafka and redpanda, not {options.system!r}")
    parse_bootstrap(options.bootstrap_servers)
    if options.system == "kafka" and (options.redpanda_admin or options.redpanda_auth_file):
        raise TargetError(
            "--redpanda-admin and --redpanda-auth-file are for Redpanda plans: a Kafka plan is "
            "throttled through broker and topic configs"
        )
    security = read_command_config(options.command_config)
    throttle_api = None
    warnings = list(security.warnings)
    if options.system == "redpanda":
        from trimtab.systems.redpanda.throttle import RecoveryRateThrottle

        throttle_api = RecoveryRateThrottle.from_options(
            options.redpanda_admin,
            options.redpanda_auth_file,
            options.timeout_s,
            security.truststore,
        )
        warnings += throttle_api.warnings
    conn = AdminConnection(options.bootstrap_servers, security, options.timeout_s)
    target = KafkaTarget(conn, options.system, throttle_api)
    target.warnings = tuple(warnings)
    return target
