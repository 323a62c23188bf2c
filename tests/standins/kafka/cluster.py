"""The Kafka stand-in's cluster: brokers, partitions, reassignments, configs, simulated time.

What a controller keeps, reduced to what ``trimtab execute`` touches (KIP-455 reassignments):

- a reassignment of a partition from ``original`` to ``target`` shows ``replicas`` = target
  followed by the original replicas not in it, ``adding`` = target - original, ``removing``
  = original - target; the adding replicas copy the partition's bytes in simulated time, join
  the ISR when caught up, and then the controller drops the removing ones (replicas = target);
- a cancel (replicas null) puts ``original`` back; a new target replaces the ongoing one;
- JBOD (KIP-113): a broker may have several log dirs (``log_dirs``); each replica lives in one
  (``Partition.dirs``, else the broker's first), and AlterReplicaLogDirs moves it to another
  of its broker's dirs through a *future* replica that copies the log at the broker's
  ``replica.alter.log.dirs.io.max.bytes.per.second`` (shared by its dir copies; unset: fast)
  and then replaces the current one. A replica not on the broker yet gets the dir as its
  preferred one, created there when a reassignment adds it (and the answer is
  NOT_LEADER_OR_FOLLOWER, as upstream's ReplicaManager.alterReplicaLogDirs);
- copying runs at the broker's ``follower.replication.throttled.rate`` (shared by the throttled
  replicas it is fetching) when ``follower.replication.throttled.replicas`` of the topic lists
  ``partition:broker`` (or ``*``), and likewise the leader side; otherwise at
  :attr:`Cluster.fast_rate`; as Redpanda, at :attr:`Cluster.node_rate` shared by a node's
  copies (``raft_learner_recovery_rate``, from the Admin API stand-in).

Partitions live in dicts keyed by (topic, partition), and only moving ones are visited when time
advances, so a 10,000-partition cluster costs O(1) per partition named in a call. Every method
takes the cluster's lock: the server calls it from one thread per connection.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Broker", "Cluster", "Partition", "SimClock"]

#: Kafka's default of an unset throttle rate (``Long.MAX_VALUE``: no throttle).
NO_RATE = 9223372036854775807
BROKER_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
TOPIC_KEYS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "retention.ms",
)
WRITE_APIS = frozenset(
    {
        "AlterPartitionReassignments",
        "IncrementalAlterConfigs",
        "AlterConfigs",
        "AlterReplicaLogDirs",
    }
)


class SimClock:
    """Simulated seconds: ``scale`` per real second, plus whatever :meth:`advance` adds."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self._t0 = time.monotonic()
        self._base = 0.0
        self._offset = 0.0

    def now(self) -> float:
        return self._base + (time.monotonic() - self._t0) * self.scale + self._offset

    def set_scale(self, scale: float) -> None:
        self._base = self.now() - self._offset
        self._t0 = time.monotonic()
        self.scale = scale

    def advance(self, seconds: float) -> None:
        self._offset += seconds


@dataclass
class Broker:
    id: int
    rack: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    alive: bool = True
    disk_total: int = 4 * 10**12
    log_dir: str = "/var/lib/kafka/data"
    cordoned: bool = False  # KIP-1066: DescribeLogDirs v5 IsCordoned of its first log dir
    log_dirs: list[str] = field(default_factory=list)  # JBOD: several dirs ([] = log_dir only)

    @property
    def dirs(self) -> list[str]:
        return self.log_dirs or [self.log_dir]


@dataclass
class Partition:
    topic: str
    index: int
    replicas: list[int]
    isr: list[int]
    leader: int
    size: int = 0
    original: list[int] | None = None  # set while a reassignment is in progress
    target: list[int] | None = None
    copied: dict[int, float] = field(default_factory=dict)  # adding replica -> bytes
    stalled: bool = False
    epoch: int = 0
    dirs: dict[int, str] = field(default_factory=dict)  # broker -> log dir (else its first)
    future: dict[int, list[Any]] = field(default_factory=dict)  # broker -> [dir, bytes copied]

    @property
    def moving(self) -> bool:
        return self.target is not None

    @property
    def adding(self) -> list[int]:
        if self.target is None or self.original is None:
            return []
        return [r for r in self.target if r not in self.original]

    @property
    def removing(self) -> list[int]:
        if self.target is None or self.original is None:
            return []
        return [r for r in self.original if r not in self.target]


class ReassignError(Exception):
    """A partition-level error of AlterPartitionReassignments: upstream's code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Cluster:
    """The state every broker of the stand-in serves (see the module docstring)."""

    def __init__(self, *, cluster_id: str = "trimtab-standin", scale: float = 1.0) -> None:
        self.lock = threading.RLock()
        self.cluster_id = cluster_id
        self.clock = SimClock(scale)
        self.brokers: dict[int, Broker] = {}
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.topics: dict[str, list[int]] = {}  # topic -> its partition indexes, in order
        self.configs: dict[tuple[int, str], dict[str, str]] = defaultdict(dict)
        self.fast_rate = 10 * 10**9  # bytes/s of an unthrottled copy
        self.calls: Counter[str] = Counter()  # API name -> calls
        self.reads = 0
        self.writes = 0
        self.submissions: Counter[tuple[str, int]] = Counter()  # reassignments started
        self.cancels: Counter[tuple[str, int]] = Counter()
        self.write_log: list[tuple[str, Any]] = []
        self.refuse_identical = False  # Redpanda: an identical repeat is unknown_server_error
        #: Redpanda: the recovery bandwidth of a node (bytes/s), read at each step of time
        self.node_rate: Callable[[], float] | None = None
        self._moving: set[tuple[str, int]] = set()
        self._dir_moving: set[tuple[str, int]] = set()  # partitions with a future replica
        self.preferred: dict[tuple[str, int, int], str] = {}  # (topic, index, broker) -> dir
        self._parsed: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}
        self._last = self.clock.now()

    # -- building ------------------------------------------------------------------------

    def add_broker(self, broker_id: int, rack: str | None = None) -> Broker:
        with self.lock:
            broker = self.brokers[broker_id] = Broker(broker_id, rack)
            return broker

    def add_partition(self, topic: str, index: int, replicas: list[int], size: int = 0) -> None:
        with self.lock:
            live = [r for r in replicas if self._alive(r)]
            self.partitions[(topic, index)] = Partition(
                topic, index, list(replicas), live, live[0] if live else -1, size
            )
            self.topics.setdefault(topic, []).append(index)

    def load_assignment(self, doc: Mapping[str, Any], *, size: int = 0) -> None:
        """Partitions from a ``kafka-reassign-partitions`` document (``{"version": 1,
        "partitions": [{"topic", "partition", "replicas"}]}``); an optional ``"size"`` per
        entry gives its bytes, optional ``"log_dirs"`` each replica's dir (``"any"``: the
        broker's first), optional ``"brokers"`` ``[{"id", "rack", "log_dirs"}]`` the brokers."""
        with self.lock:
            for b in doc.get("brokers", []):
                if int(b["id"]) not in self.brokers:
                    self.add_broker(int(b["id"]), b.get("rack"))
                self.brokers[int(b["id"])].log_dirs = list(b.get("log_dirs", []))
            for p in doc["partitions"]:
                for r in p["replicas"]:
                    if int(r) not in self.brokers:
                        self.add_broker(int(r))
                self.add_partition(
                    str(p["topic"]),
                    int(p["partition"]),
                    [int(r) for r in p["replicas"]],
                    int(p.get("size", size)),
                )
                made = self.partitions[(str(p["topic"]), int(p["partition"]))]
                for r, d in zip(p["replicas"], p.get("log_dirs") or (), strict=False):
                    if d != "any":
                        made.dirs[int(r)] = str(d)

    def load_log_dirs(self, text: str) -> None:
        """Brokers' dirs, and each replica's dir and size, from ``kafka-log-dirs.sh --describe``
        output as the tool prints it (two lines of prose, then the JSON)."""
        doc = json.loads(text[text.index("{") :])
        with self.lock:
            for b in doc["brokers"]:
                broker = self.brokers.get(int(b["broker"])) or self.add_broker(int(b["broker"]))
                broker.log_dirs = [str(d["logDir"]) for d in b["logDirs"]]
                for d in b["logDirs"]:
                    for p in d["partitions"]:
                        topic, _, index = str(p["partition"]).rpartition("-")
                        part = self.partitions.get((topic, int(index)))
                        if part is not None and broker.id in part.replicas:
                            part.dirs[broker.id] = str(d["logDir"])
                            part.size = max(part.size, int(p["size"]))

    def assignment(self) -> dict[str, Any]:
        """The current replicas as a ``kafka-reassign-partitions`` document."""
        with self.lock:
            self.tick()
            parts = [
                {"topic": p.topic, "partition": p.index, "replicas": list(p.replicas)}
                for p in self.partitions.values()
            ]
            return {"version": 1, "partitions": parts}

    # -- bookkeeping -----------------------------------------------------------------------

    def count(self, api: str) -> None:
        with self.lock:
            self.calls[api] += 1
            if api in WRITE_APIS:
                self.writes += 1
            else:
                self.reads += 1

    def _alive(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and b.alive

    def live_brokers(self) -> list[Broker]:
        with self.lock:
            return [b for b in sorted(self.brokers.values(), key=lambda b: b.id) if b.alive]

    def controller(self) -> int:
        live = self.live_brokers()
        return live[0].id if live else -1

    # -- simulated time ----------------------------------------------------------------------

    def tick(self) -> None:
        """Move every in-progress copy forward to the clock's now."""
        with self.lock:
            now = self.clock.now()
            dt, self._last = max(0.0, now - self._last), now
            if dt > 0 and self._dir_moving:
                self._tick_dirs(dt)
            if not self._moving or dt <= 0:
                return
            rates = self._rates()
            for key in list(self._moving):
                p = self.partitions[key]
                for r in p.adding:
                    if r in p.isr:
                        continue
                    p.copied[r] = min(float(p.size), p.copied.get(r, 0.0) + rates[(key, r)] * dt)
                    if p.copied[r] >= p.size and self._alive(r):
                        p.isr.append(r)
                if all(r in p.isr for r in p.adding):
                    self._complete(p)

    def _throttled(self, p: Partition, key: str, broker: int) -> bool:
        listed = self.configs[(2, p.topic)].get(key, "")
        if not listed:
            return False
        cached = self._parsed.get((p.topic, key))
        if cached is None or cached[0] != listed:  # parse a list once per value, not per copy
            cached = (listed, frozenset(s.strip() for s in listed.split(",")))
            self._parsed[(p.topic, key)] = cached
        items = cached[1]
        return "*" in items or f"{p.index}:{broker}" in items

    def _rates(self) -> dict[tuple[tuple[str, int], int], float]:
        """Bytes/s of each copying replica: a broker's throttle shared by its throttled copies."""
        follower_users: Counter[int] = Counter()
        leader_users: Counter[int] = Counter()
        receiving: Counter[int] = Counter()
        copies = []
        for key in self._moving:
            p = self.partitions[key]
            if p.stalled:
                continue
            for r in p.adding:
                if r in p.isr or not self._alive(r) or not self._alive(p.leader):
                    continue
                f = self._throttled(p, "follower.replication.throttled.replicas", r)
                ld = self._throttled(p, "leader.replication.throttled.replicas", p.leader)
                follower_users[r] += f
                leader_users[p.leader] += ld
                receiving[r] += 1
                copies.append((key, p, r, f, ld))
        rates: dict[tuple[tuple[str, int], int], float] = defaultdict(float)
        for key, p, r, f, ld in copies:
            rate = float(self.fast_rate)
            if f:
                cap = self._rate(r, "follower.replication.throttled.rate")
                rate = min(rate, cap / follower_users[r])
            if ld:
                cap = self._rate(p.leader, "leader.replication.throttled.rate")
                rate = min(rate, cap / leader_users[p.leader])
            if self.node_rate is not None:  # Redpanda: raft_learner_recovery_rate per node
                rate = min(rate, self.node_rate() / receiving[r])
            rates[(key, r)] = rate
        return rates

    def _rate(self, broker: int, key: str) -> int:
        return int(self.configs[(4, str(broker))].get(key, NO_RATE))

    def _complete(self, p: Partition) -> None:
        assert p.target is not None
        for r in p.adding:  # created in its preferred dir (AlterReplicaLogDirs before the move)
            if (p.topic, p.index, r) in self.preferred:
                p.dirs[r] = self.preferred.pop((p.topic, p.index, r))
        for r in p.removing:
            p.dirs.pop(r, None)
            p.future.pop(r, None)
        p.replicas = list(p.target)
        p.isr = [r for r in p.target if r in p.isr]
        self._finish(p)

    def _finish(self, p: Partition) -> None:
        """The reassignment is over: a leader outside the ISR gives way to its first member."""
        if p.leader not in p.isr:
            p.leader = p.isr[0] if p.isr else -1
        p.original = p.target = None
        p.copied = {}
        p.epoch += 1
        self._moving.discard((p.topic, p.index))

    # -- log dirs (JBOD, KIP-113) -------------------------------------------------------------

    def dir_of(self, p: Partition, broker_id: int) -> str:
        """The log dir of ``p``'s replica on ``broker_id``."""
        found = p.dirs.get(broker_id)
        if found is None:
            found = self.preferred.get((p.topic, p.index, broker_id))
        return found or self.brokers[broker_id].dirs[0]

    def alter_log_dir(self, broker_id: int, path: str, topic: str, index: int) -> int:
        """One replica of AlterReplicaLogDirs; upstream's error code (0 when accepted)."""
        with self.lock:
            self.tick()
            broker = self.brokers[broker_id]
            p = self.partitions.get((topic, index))
            if p is None:
                return 3  # UNKNOWN_TOPIC_OR_PARTITION
            if path not in broker.dirs:
                return 57  # LOG_DIR_NOT_FOUND: "Log dir ... is not found in the config."
            if broker_id not in p.replicas:
                self.preferred[(topic, index, broker_id)] = path
                return 6  # NOT_LEADER_OR_FOLLOWER: created there when the replica is added
            current = self.dir_of(p, broker_id)
            if current == path:
                p.future.pop(broker_id, None)  # a move elsewhere under way is abandoned
                return 0
            if p.future.get(broker_id, [None])[0] != path:
                p.future[broker_id] = [path, 0.0]
            self._dir_moving.add((topic, index))
            if p.size == 0:
                self._tick_dirs(0.0)
            return 0

    def _tick_dirs(self, dt: float) -> None:
        moving = [self.partitions[k] for k in self._dir_moving]
        users: Counter[int] = Counter(b for p in moving for b in p.future)
        for key in list(self._dir_moving):
            p = self.partitions[key]
            for b, entry in list(p.future.items()):
                rate = min(self.fast_rate, self._rate(b, BROKER_KEYS[2])) / max(1, users[b])
                entry[1] = min(float(p.size), entry[1] + rate * dt)
                if entry[1] >= p.size:
                    p.dirs[b] = entry[0]
                    del p.future[b]
            if not p.future:
                self._dir_moving.discard(key)

    # -- AlterPartitionReassignments / ListPartitionReassignments ---------------------------

    def reassign(self, topic: str, index: int, replicas: list[int] | None) -> None:
        """Start, replace or (``None``) cancel one reassignment; raises :class:`ReassignError`
        with upstream's error code (Errors.java) when the controller would refuse it."""
        with self.lock:
            self.tick()
            p = self.partitions.get((topic, index))
            if p is None:
                raise ReassignError(3, f"Unable to find partition {topic}-{index}.")
            if replicas is None:
                if not p.moving:
                    raise ReassignError(85, f"No ongoing reassignment for {topic}-{index}.")
                self.cancels[(topic, index)] += 1
                assert p.original is not None
                p.replicas = list(p.original)
                p.isr = [r for r in p.isr if r in p.original]
                self._finish(p)
                return
            self._validate(topic, index, replicas)
            if self.refuse_identical and p.moving and p.target == replicas:
                raise ReassignError(-1, "reassignment already in progress to these replicas")
            self.submissions[(topic, index)] += 1
            original = p.original if p.moving else list(p.replicas)
            assert original is not None
            if replicas == original:
                if p.moving:
                    self.reassign(topic, index, None)
                return
            p.original, p.target = original, list(replicas)
            p.replicas = list(replicas) + [r for r in original if r not in replicas]
            p.copied = {r: p.copied.get(r, 0.0) for r in p.adding}
            self._moving.add((topic, index))
            if p.size == 0 or not p.adding:  # nothing to copy: a reorder or an empty log
                for r in p.adding:
                    if self._alive(r) and r not in p.isr:
                        p.isr.append(r)
                self._complete(p)

    def _validate(self, topic: str, index: int, replicas: list[int]) -> None:
        where = f"{topic}-{index}"
        if not replicas:
            raise ReassignError(39, f"The manual partition assignment of {where} is empty.")
        if len(set(replicas)) != len(replicas):
            raise ReassignError(
                39, f"The manual partition assignment of {where} includes a broker more than once."
            )
        for r in replicas:
            if not self._alive(r):
                raise ReassignError(
                    39,
                    f"The manual partition assignment includes broker {r}, but no such broker "
                    "is registered.",
                )

    def ongoing(self, wanted: Iterable[tuple[str, int]] | None) -> list[Partition]:
        with self.lock:
            self.tick()
            keys = self._moving if wanted is None else [k for k in wanted if k in self._moving]
            return [self.partitions[k] for k in sorted(keys)]

    # -- configs ----------------------------------------------------------------------------

    def config_keys(self, resource_type: int) -> tuple[str, ...]:
        return BROKER_KEYS if resource_type == 4 else TOPIC_KEYS

    # -- fault hooks for tests ---------------------------------------------------------------

    def foreign_reassignment(self, topic: str, index: int, replicas: list[int]) -> None:
        """Someone else starts a reassignment (not counted as our submission)."""
        with self.lock:
            before = self.submissions[(topic, index)]
            self.reassign(topic, index, replicas)
            self.submissions[(topic, index)] = before

    def set_replicas(self, topic: str, index: int, replicas: list[int]) -> None:
        """Someone else changed a partition's replicas outright (a completed move)."""
        with self.lock:
            p = self.partitions[(topic, index)]
            if p.moving:
                self._finish(p)
            p.replicas = list(replicas)
            p.isr = [r for r in replicas if self._alive(r)]
            p.leader = p.isr[0] if p.isr else -1
            p.epoch += 1

    def remove_broker(self, broker_id: int) -> None:
        """A broker goes away: it leaves the metadata, every ISR and leadership."""
        with self.lock:
            self.tick()
            self.brokers[broker_id].alive = False
            for p in self.partitions.values():
                if broker_id in p.isr:
                    p.isr.remove(broker_id)
                    if p.leader == broker_id:
                        p.leader = p.isr[0] if p.isr else -1

    def restore_broker(self, broker_id: int) -> None:
        with self.lock:
            self.brokers[broker_id].alive = True
            for p in self.partitions.values():
                if broker_id in p.replicas and broker_id not in p.isr and broker_id not in p.adding:
                    p.isr.append(broker_id)

    def stall(self, topic: str, index: int, stalled: bool = True) -> None:
        """The move of one partition makes no progress (or resumes)."""
        with self.lock:
            self.tick()
            self.partitions[(topic, index)].stalled = stalled

    def reset_counts(self) -> None:
        with self.lock:
            self.calls.clear()
            self.reads = self.writes = 0
            self.submissions.clear()
            self.cancels.clear()
            self.write_log.clear()
