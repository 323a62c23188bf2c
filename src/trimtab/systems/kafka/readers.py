"""What a Kafka or Redpanda cluster's own tools print, read into the allocator's state.

* The current assignment (:func:`read_current_assignment`, :func:`read_reassignment`): the
  reassignment format ``kafka-reassign-partitions.sh --generate`` prints as "Current partition
  replica assignment" (the format :mod:`~trimtab.systems.kafka.writers` writes), broker ids
  turned back into nodes by :func:`~trimtab.systems.kafka.ids.broker_ids`.
* The sizes of partitions from ``kafka-log-dirs.sh --describe`` (:func:`read_log_dirs`), whose
  output is::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2,3
    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/var/lib/kafka","error":null,
      "partitions":[{"partition":"orders-0","size":1024,"offsetLag":0,"isFuture":false}]}]}]}

  and the free disk it implies for the nodes the inventory gives none for
  (:func:`free_space_from_log_dirs`).

Redpanda answers the same admin API (``DescribeLogDirs``), so the tool reads it too. A
document of another shape is an :class:`~trimtab.errors.InputError` naming the file and what
is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

from trimtab.allocation.model import PartitionAssignment
from trimtab.allocation.plan import assignments_from_nodes
from trimtab.cluster import ClusterState, NodeId
from trimtab.config import AllocationConfig
from trimtab.errors import InputError
from trimtab.readers.special_files import refuse_special
from trimtab.systems.kafka.ids import broker_ids

__all__ = [
    "LogDirs",
    "free_space_from_log_dirs",
    "read_current_assignment",
    "read_log_dirs",
    "read_reassignment",
]


def _json_file(source: Path, what: str, *, after_status: bool = False) -> Any:
    """The JSON document in ``source``; with ``after_status``, the text from the first line
    that opens a JSON object (Kafka's tools print status lines first)."""
    refuse_special(f"{what} file", source)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} file {source} does not exist") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} file {source} is not UTF-8 text: give a JSON file") from None
    except OSError as exc:
        raise InputError(f"{what} file {source} cannot be read: {exc.strerror}") from None
    if after_status:
        lines = text.splitlines(keepends=True)
        start = next((k for k, line in enumerate(lines) if line.lstrip().startswith("{")), None)
        if start is None:
            raise InputError(f"{what} file {source} holds no JSON document")
        text = "".join(lines[start:])
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{what} file {source} is not JSON: {exc}") from None


def read_reassignment(path: str | Path) -> list[tuple[str, int, list[int]]]:
    """(topic, partition, broker ids) of a reassignment-format file, such as the "Current
    partition replica assignment" that ``--generate`` prints; a malformed entry is an error
    naming it."""
    source = Path(path)
    doc = _json_file(source, "assignment", after_status=True)
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("partitions"), list)
    ):
        raise InputError(f'{source}: expected {{"version": 1, "partitions": [...]}}')
    out = []
    for n, entry in enumerate(doc["partitions"]):
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        replicas = entry.get("replicas") if isinstance(entry, dict) else None
        if (
            not isinstance(topic, str)
            or not isinstance(partition, int)
            or not isinstance(replicas, list)
            or not all(isinstance(r, int) and not isinstance(r, bool) for r in replicas)
        ):
            raise InputError(
                f"{source}: partitions[{n}] needs a topic (string), a partition (integer) and "
                f"replicas (broker ids), got {entry!r}"
            )
        out.append((topic, partition, list(replicas)))
    return out


def read_current_assignment(
    path: str | Path,
    cluster: ClusterState,
    mapping: Mapping[str, int] | None = None,
    config: AllocationConfig | None = None,
) -> tuple[PartitionAssignment, ...]:
    """The current assignment of ``cluster``: broker ids turned back into nodes, replicas on
    least-loaded cores (Kafka does not record cores). A broker the cluster lacks is an error."""
    ids = broker_ids([n.id for n in cluster], mapping)
    nodes = {broker: node for node, broker in ids.items()}
    rows = []
    for topic, partition, replicas in read_reassignment(path):
        unknown = [b for b in replicas if b not in nodes]
        if unknown:
            raise InputError(
                f"{path}: {topic}/{partition} names broker(s) {unknown} that cluster "
                f"{cluster.name!r} does not have"
            )
        rows.append((topic, partition, [nodes[b] for b in replicas]))
    try:
        return assignments_from_nodes(cluster, rows, config)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None


@dataclass(frozen=True, slots=True)
class LogDirs:
    """What ``kafka-log-dirs.sh --describe`` reports: each partition's size on each broker
    (future replicas, the copies of a move under way, left out), bytes per broker, and the
    log dirs that answered with an error."""

    sizes: dict[tuple[str, int], dict[int, int]] = field(default_factory=dict)
    used: dict[int, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()

    def size(self, topic: str, partition: int) -> int:
        """The partition's size: its largest replica (0 when unknown)."""
        return max(self.sizes.get((topic, partition), {}).values(), default=0)


def read_log_dirs(path: str | Path) -> LogDirs:
    """The ``--describe`` output at ``path`` (its leading status lines skipped); a document
    of another shape is an error naming what is wrong."""
    source = Path(path)
    doc = _json_file(source, "log dirs", after_status=True)
    if not isinstance(doc, dict) or not isinstance(doc.get("brokers"), list):
        raise InputError(
            f'{source}: expected kafka-log-dirs.sh --describe output, {{"version": 1, '
            '"brokers": [{"broker": 1, "logDirs": [...]}]}'
        )
    out = LogDirs()
    errors: list[str] = []
    for b, broker in enumerate(doc["brokers"]):
        if not isinstance(broker, dict) or not _whole(broker.get("broker")):
            raise InputError(f"{source}: brokers[{b}] needs a broker id, got {broker!r}")
        broker_id = broker["broker"]
        out.used.setdefault(broker_id, 0)
        for d, log_dir in enumerate(broker.get("logDirs") or []):
            where = f"{source}: brokers[{b}].logDirs[{d}]"
            if not isinstance(log_dir, dict):
                raise InputError(f"{where} is not an object")
            if log_dir.get("error"):
                errors.append(f"broker {broker_id} {log_dir.get('logDir')}: {log_dir['error']}")
                continue
            for entry in log_dir.get("partitions") or []:
                _add_partition(out, broker_id, entry, where)
    return LogDirs(out.sizes, out.used, tuple(errors))


def _add_partition(out: LogDirs, broker: int, entry: Any, where: str) -> None:
    name = entry.get("partition") if isinstance(entry, dict) else None
    size = entry.get("size") if isinstance(entry, dict) else None
    topic, _, number = str(name).rpartition("-")
    if not isinstance(name, str) or not topic or not number.isdigit() or not _whole(size):
        raise InputError(
            f'{where}: a partition needs "partition": "topic-N" and a size in bytes, got {entry!r}'
        )
    if entry.get("isFuture"):
        return
    per_broker = out.sizes.setdefault((topic, int(number)), {})
    per_broker[broker] = per_broker.get(broker, 0) + size
    out.used[broker] = out.used.get(broker, 0) + size


def _whole(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def free_space_from_log_dirs(
    state: ClusterState, ids: Mapping[NodeId, int], dirs: LogDirs
) -> ClusterState:
    """``state`` with a free disk for every node the inventory gives none for: its total disk
    less the bytes its log dirs hold (never below 0). A node with a free disk already, no
    total disk, or no answer in the log dirs keeps its capacity."""
    nodes = []
    for node in state:
        cap = node.capacity
        used = dirs.used.get(ids[node.id])
        if cap.disk_free_bytes is None and used is not None and cap.disk_total_bytes:
            free = max(0, cap.disk_total_bytes - used)
            node = replace(node, capacity=replace(cap, disk_free_bytes=free))
        nodes.append(node)
    return ClusterState.of(state.name, nodes)
