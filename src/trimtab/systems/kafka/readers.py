"""What a Kafka or Redpanda cluster's own tools print, read into the allocator's state.

* The current assignment (:func:`read_current_assignment`, :func:`read_reassignment`): a
  reassignment JSON (the format :mod:`~trimtab.systems.kafka.writers` writes), or the whole
  saved output of ``kafka-reassign-partitions.sh --generate``/``--execute``
  (:mod:`~trimtab.systems.kafka.tool_output`), or an rpk partition listing
  (:mod:`~trimtab.systems.kafka.rpk`); broker ids turned back into nodes by
  :func:`~trimtab.systems.kafka.ids.broker_ids`.
* The sizes of partitions from ``kafka-log-dirs.sh --describe`` (:func:`read_log_dirs`), whose
  output is::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2,3
    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/var/lib/kafka","error":null,
      "partitions":[{"partition":"orders-0","size":1024,"offsetLag":0,"isFuture":false}]}]}]}

  and the free disk it implies for the nodes the inventory gives none for
  (:func:`free_space_from_log_dirs`). Each log dir is kept too (:class:`DirReport`: its
  replicas and bytes), with its capacity and cordon where the document carries them:
  ``totalBytes``, ``usableBytes`` (KIP-827) and ``isCordoned`` (KIP-1066, Kafka 4.3), named
  after the admin client's ``LogDirDescription`` accessors. Upstream's
  ``LogDirsCommand`` (apache/kafka tools/src/main/java/org/apache/kafka/tools/
  LogDirsCommand.java, as read on 2026-11-28) prints only ``logDir``, ``error`` and
  ``partitions``, so from its output every dir is open and of unknown capacity; a document
  written from DescribeLogDirs v4/v5 (``trimtab inventory``, a script) may carry them.

Redpanda answers the same admin API (``DescribeLogDirs``), so the tool reads it too. A
document of another shape is an :class:`~trimtab.errors.InputError` naming the file, what it
seems to be (:mod:`~trimtab.readers.sniff`) and the command that makes the expected one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

from trimtab.allocation.model import PartitionAssignment
from trimtab.allocation.plan import assignments_from_nodes
from trimtab.cluster import ClusterState, NodeId
from trimtab.config import AllocationConfig
from trimtab.errors import InputError
from trimtab.readers.sniff import read_text, refusal
from trimtab.readers.special_files import refuse_special
from trimtab.systems.kafka.ids import broker_ids
from trimtab.systems.kafka.rpk import parse_rpk
from trimtab.systems.kafka.tool_output import broker_id, json_documents, parse_reassign_output

__all__ = [
    "ASSIGNMENT_COMMAND",
    "LOG_DIRS_COMMAND",
    "DirReport",
    "LogDirs",
    "free_space_from_log_dirs",
    "read_current_assignment",
    "read_log_dirs",
    "read_reassignment",
]


def _text_file(source: Path, what: str, expected: str, command: str) -> str:
    """The text of ``source``; a missing, special, empty, binary or UTF-16 file, or a
    directory, is an error naming it, what was expected and the command that makes it."""
    refuse_special(f"{what} file", source)
    return read_text(source, expected, command)


#: The command that prints a current assignment trimtab reads, for refusals.
ASSIGNMENT_COMMAND = (
    "kafka-reassign-partitions.sh --bootstrap-server HOST:9092 --generate "
    "--topics-to-move-json-file topics.json --broker-list 1,2,3 > current.txt "
    "(its whole output), or rpk cluster partitions list --all --format json"
)
_ASSIGNMENT = (
    "a current partition assignment (Kafka reassignment JSON, "
    "kafka-reassign-partitions.sh --generate/--execute output, or an rpk listing)"
)


def read_reassignment(path: str | Path) -> list[tuple[str, int, list[int]]]:
    """(topic, partition, broker ids) of a current assignment as the tools print it: a
    reassignment JSON, the whole output of ``kafka-reassign-partitions.sh --generate`` (its
    "Current partition replica assignment") or ``--execute`` (the assignment before it, the
    rollback), or an rpk partition listing (:mod:`~trimtab.systems.kafka.rpk`). Anything else
    (``--verify`` output included, which holds no replica lists) is an error that says what
    the file seems to be and how to make the expected one."""
    source = Path(path)
    text = _text_file(source, "assignment", _ASSIGNMENT, ASSIGNMENT_COMMAND)
    try:
        output = parse_reassign_output(text, str(source))
        entries = output.current if output is not None else parse_rpk(text, str(source))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if output is not None and output.kind == "verify":
        raise InputError(
            f"{source} is the output of kafka-reassign-partitions.sh --verify: it says how far "
            "a reassignment got, not where the replicas are. Give the current assignment; "
            f"make one with: {ASSIGNMENT_COMMAND}"
        )
    if entries is None:
        raise InputError(
            refusal(
                source,
                _ASSIGNMENT,
                ASSIGNMENT_COMMAND,
                text,
            )
        )
    return entries


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
class DirReport:
    """One log dir of one broker as reported: path, capacity and usable bytes when given,
    cordon, and its replicas' bytes (future replicas left out)."""

    broker: int
    path: str
    total_bytes: int | None = None
    usable_bytes: int | None = None
    cordoned: bool = False
    replicas: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def used_bytes(self) -> int:
        return sum(self.replicas.values())


@dataclass(frozen=True, slots=True)
class LogDirs:
    """What ``kafka-log-dirs.sh --describe`` reports: each partition's size on each broker
    (future replicas, the copies of a move under way, left out), bytes per broker, each
    log dir, and the log dirs that answered with an error."""

    sizes: dict[tuple[str, int], dict[int, int]] = field(default_factory=dict)
    used: dict[int, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    dirs: tuple[DirReport, ...] = ()

    def size(self, topic: str, partition: int) -> int:
        """The partition's size: its largest replica (0 when unknown)."""
        return max(self.sizes.get((topic, partition), {}).values(), default=0)


#: The command that prints the log dirs trimtab reads, for refusals.
LOG_DIRS_COMMAND = "kafka-log-dirs.sh --bootstrap-server HOST:9092 --describe > log-dirs.txt"
_LOG_DIRS = "kafka-log-dirs.sh --describe output"


def read_log_dirs(path: str | Path) -> LogDirs:
    """The ``--describe`` output at ``path`` (its leading status lines skipped; broker ids
    as numbers or strings of digits); a document of another shape is an error saying what it
    seems to be."""
    source = Path(path)
    text = _text_file(source, "log dirs", _LOG_DIRS, LOG_DIRS_COMMAND)
    docs = [doc for _, doc in json_documents(text)]
    doc = next((d for d in docs if isinstance(d, dict) and "brokers" in d), None)
    if doc is None or not isinstance(doc.get("brokers"), list):
        raise InputError(refusal(source, _LOG_DIRS, LOG_DIRS_COMMAND, text))
    out = LogDirs()
    errors: list[str] = []
    reports: list[DirReport] = []
    for b, broker in enumerate(doc["brokers"]):
        number = broker_id(broker.get("broker")) if isinstance(broker, dict) else None
        if number is None:
            raise InputError(f"{source}: brokers[{b}] needs a broker id, got {broker!r}")
        out.used.setdefault(number, 0)
        for d, log_dir in enumerate(broker.get("logDirs") or []):
            where = f"{source}: brokers[{b}].logDirs[{d}]"
            if not isinstance(log_dir, dict):
                raise InputError(f"{where} is not an object")
            if log_dir.get("error"):
                errors.append(f"broker {number} {log_dir.get('logDir')}: {log_dir['error']}")
                continue
            report = _dir_report(number, log_dir, where)
            for entry in log_dir.get("partitions") or []:
                _add_partition(out, number, entry, where, report.replicas)
            reports.append(report)
    return LogDirs(out.sizes, out.used, tuple(errors), tuple(reports))


def _dir_report(broker: int, log_dir: dict[str, Any], where: str) -> DirReport:
    """The dir's path, capacity and cordon (absent fields: unknown, open)."""
    path = log_dir.get("logDir")
    if not isinstance(path, str) or not path:
        raise InputError(f'{where} needs "logDir": the directory\'s path, got {path!r}')
    sizes = {}
    for key in ("totalBytes", "usableBytes"):
        value = log_dir.get(key)
        if value is not None and not (_whole(value) or value == -1):
            raise InputError(f"{where}: {key} must be a number of bytes, got {value!r}")
        sizes[key] = value if _whole(value) else None  # -1: the broker did not say
    cordoned = log_dir.get("isCordoned", False)
    if not isinstance(cordoned, bool):
        raise InputError(f"{where}: isCordoned must be true or false, got {cordoned!r}")
    return DirReport(broker, path, sizes["totalBytes"], sizes["usableBytes"], cordoned)


def _add_partition(
    out: LogDirs, broker: int, entry: Any, where: str, replicas: dict[tuple[str, int], int]
) -> None:
    name = entry.get("partition") if isinstance(entry, dict) else None
    size = entry.get("size") if isinstance(entry, dict) else None
    topic, _, number = str(name).rpartition("-")
    if not isinstance(name, str) or not topic or not number.isdigit() or not _whole(size):
        raise InputError(
            f'{where}: a partition needs "partition": "topic-N" and a size in bytes, got {entry!r}'
        )
    if entry.get("isFuture"):
        return
    replicas[(topic, int(number))] = size
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
