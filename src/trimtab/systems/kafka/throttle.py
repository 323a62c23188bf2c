"""Replication throttles as ``kafka-reassign-partitions.sh --throttle`` sets them, and undone.

Upstream (``ReassignPartitionsCommand``): for each moving partition, the *leader* throttle lists
``partition:broker`` for every current replica, the *follower* throttle ``partition:broker`` for
every replica being added (topic configs ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas``), and every broker involved (current or new) gets
``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate`` set to the rate
(bytes/s). All through IncrementalAlterConfigs. A move between the log dirs of one broker
(``log_dirs`` pinned in the target) is throttled by that broker's
``replica.alter.log.dirs.io.max.bytes.per.second`` (upstream's
``--replica-alter-log-dirs-throttle``); trimtab sets it to the same rate.

Unlike the tool, which overwrites the topic lists and deletes everything on ``--verify``, this
adds to what a topic lists already and records the value found before each key, so
:meth:`ConfigThrottle.clear` gives back exactly what was there: a topic list loses only the
items this set added; a broker rate goes back to its old value, or is deleted if it had none.
Sets that overlap (a rate changed mid-run) are undone newest first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trimtab.errors import TargetError
from trimtab.plans.document import Action
from trimtab.plans.target import ThrottleSet
from trimtab.systems.kafka.admin import AdminConnection
from trimtab.systems.kafka.log_dir_moves import pins

__all__ = [
    "BROKER_RATES",
    "DIR_RATE",
    "FOLLOWER_REPLICAS",
    "LEADER_REPLICAS",
    "ConfigThrottle",
    "partition_of",
    "throttled_replicas",
]

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"


def partition_of(action: Action) -> tuple[str, int]:
    """``(topic, partition)`` of a reassignment's ``item`` ``topic/partition``."""
    topic, sep, index = action.item.rpartition("/")
    if not sep or not topic or not index.isdigit():
        raise TargetError(f"action {action.id}: item {action.item!r} is not topic/partition")
    return topic, int(index)


def throttled_replicas(
    actions: Iterable[Action],
) -> tuple[dict[str, list[str]], dict[str, list[str]], list[int]]:
    """Leader and follower ``partition:broker`` lists per topic, and the brokers involved, as
    upstream's ``calculateLeaderThrottles`` / ``calculateFollowerThrottles`` /
    ``calculateReassigningBrokers`` compute them from each action's precondition (current
    replicas) and target."""
    leader: dict[str, list[str]] = defaultdict(list)
    follower: dict[str, list[str]] = defaultdict(list)
    brokers: set[int] = set()
    for action in actions:
        topic, index = partition_of(action)
        sources = [int(b) for b in action.precondition.get("replicas", [])]
        targets = [int(b) for b in action.target.get("replicas", [])]
        added = [b for b in targets if b not in sources]
        brokers.update(sources, targets)
        if not added:
            continue
        leader[topic] += [f"{index}:{b}" for b in sources]
        follower[topic] += [f"{index}:{b}" for b in added]
    return dict(leader), dict(follower), sorted(brokers)


def _resource(kind: str, name: str, configs: Any) -> Any:
    from kafka.admin import ConfigResource, ConfigResourceType

    rtype = ConfigResourceType.TOPIC if kind == "topic" else ConfigResourceType.BROKER
    return ConfigResource(rtype, name, configs)


class ConfigThrottle:
    """Kafka's throttles through broker and topic configs (see the module docstring)."""

    def __init__(self, conn: AdminConnection) -> None:
        self.conn = conn

    def _read(self, wanted: Mapping[tuple[str, str], Sequence[str]]) -> dict[tuple[str, str], Any]:
        """The non-default values of ``wanted`` keys per (kind, name): {(kind, name): {k: v}}."""
        if not wanted:
            return {}
        resources = [_resource(kind, name, list(keys)) for (kind, name), keys in wanted.items()]
        client = self.conn.client
        found = self.conn.call("DescribeConfigs", client.describe_configs, resources)
        out: dict[tuple[str, str], Any] = {}
        for kind, name in wanted:
            configs = found.get(kind, {}).get(name, {})
            out[(kind, name)] = {k: v.get("value") for k, v in configs.items()}
        return out

    def _write(self, changes: Mapping[tuple[str, str], Mapping[str, str | None]]) -> None:
        """IncrementalAlterConfigs: SET each value, DELETE each None."""
        if not changes:
            return
        from kafka.admin import AlterConfigOp

        resources = []
        for (kind, name), values in changes.items():
            ops = {
                k: (AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, v)
                for k, v in values.items()
            }
            resources.append(_resource(kind, name, ops))
        client = self.conn.client
        result = self.conn.call(
            "IncrementalAlterConfigs",
            client.alter_configs,
            resources,
            raise_on_unknown=False,
            incremental=True,
        )
        failed = [
            f"{kind} {name}: {outcome}"
            for kind, names in result.items()
            for name, outcome in names.items()
            if outcome != "OK"
        ]
        if failed:
            raise TargetError(f"{self.conn.endpoint} refused a throttle: {'; '.join(failed)}")

    def preview(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        """What :meth:`set` would write and the values it would replace (reads only)."""
        leader, follower, brokers = throttled_replicas(actions)
        if not brokers or rate <= 0:
            return ThrottleSet(rate)
        dir_brokers = {b for a in actions for b in pins(a)}
        wanted: dict[tuple[str, str], Sequence[str]] = {}
        for topic in sorted(set(leader) | set(follower)):
            wanted[("topic", topic)] = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
        for broker in brokers:
            keys = BROKER_RATES + ((DIR_RATE,) if broker in dir_brokers else ())
            wanted[("broker", str(broker))] = keys
        before = self._read(wanted)
        entries: list[dict[str, Any]] = []
        for topic in sorted(set(leader) | set(follower)):
            found = before[("topic", topic)]
            for key, items in (
                (LEADER_REPLICAS, leader.get(topic, [])),
                (FOLLOWER_REPLICAS, follower.get(topic, [])),
            ):
                had = found.get(key)
                have = [s for s in (had or "").split(",") if s]
                added = [] if "*" in have else [s for s in dict.fromkeys(items) if s not in have]
                if not added:
                    continue
                value = ",".join(have + added)
                entries.append(
                    {
                        "resource": "topic",
                        "name": topic,
                        "key": key,
                        "value": value,
                        "before": had,
                        "added": added,
                    }
                )
        for broker in brokers:
            found = before[("broker", str(broker))]
            for key in wanted[("broker", str(broker))]:
                entries.append(
                    {
                        "resource": "broker",
                        "name": str(broker),
                        "key": key,
                        "value": str(rate),
                        "before": found.get(key),
                    }
                )
        return ThrottleSet(rate, tuple(entries))

    def set(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        """Throttle the moves of ``actions`` at ``rate`` bytes/s (see the module docstring)."""
        throttle = self.preview(rate, actions)
        changes: dict[tuple[str, str], dict[str, str | None]] = defaultdict(dict)
        for e in throttle.entries:
            changes[(str(e["resource"]), str(e["name"]))][str(e["key"])] = str(e["value"])
        self._write(changes)
        return throttle

    def clear(self, throttle: ThrottleSet) -> None:
        """Give back what ``throttle`` found; repeating it is harmless (after a crash)."""
        topics = {("topic", e["name"]) for e in throttle.entries if e["resource"] == "topic"}
        now = self._read(dict.fromkeys(sorted(topics), (LEADER_REPLICAS, FOLLOWER_REPLICAS)))
        changes: dict[tuple[str, str], dict[str, str | None]] = defaultdict(dict)
        for e in throttle.entries:
            where = (str(e["resource"]), str(e["name"]))
            if e["resource"] == "topic":
                current = now.get(where, {}).get(e["key"]) or ""
                added = set(e.get("added", []))
                left = [s for s in current.split(",") if s and s not in added]
                restored = ",".join(left)
                changes[where][e["key"]] = (
                    restored if restored or e.get("before") is not None else None
                )
            elif e["resource"] == "broker":
                changes[where][e["key"]] = e.get("before")
        # the topics in one call, then each broker on its own: a broker that does not answer
        # must not keep the others throttled (a later --abort or --resume retries it)
        groups = [{w: c for w, c in changes.items() if w[0] == "topic"}]
        groups += [{w: c} for w, c in changes.items() if w[0] == "broker"]
        failed = []
        for group in groups:
            try:
                self._write(group)
            except TargetError as exc:
                failed.append(str(exc))
        if failed:
            raise TargetError("; ".join(failed))
