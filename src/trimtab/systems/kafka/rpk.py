"""Redpanda's partition listings as ``rpk`` prints them, read as a current assignment.

* ``rpk cluster partitions list --all`` (Redpanda's admin API ``/v1/cluster/partitions``), a
  table whose replicas are ``NODE-CORE``::

    NAMESPACE  TOPIC   PARTITION  LEADER-ID  REPLICA-CORE     DISABLED
    kafka      orders  0          1          [1-0 2-1 3-0]    false

* the same with ``--format json``: an array of ``{"ns", "topic", "partition_id",
  "leader_id", "replicas": [{"node_id", "core"}], "disabled"}``;
* ``rpk topic describe -a TOPIC...`` (or ``-p`` beside ``-s``): a SUMMARY section naming the
  topic (``NAME  orders``) and a PARTITIONS table whose ``REPLICAS`` are ``[1 2 3]``. rpk
  prints the replicas of this table sorted by id, so the first is not the preferred leader.
* ``rpk topic describe --format json TOPIC...`` (rpk 24.3.2 on; earlier rpk has no
  ``--format`` on this command): one line, an array of ``{"summary": {"name", ...},
  "configs": [...], "partitions": [{"partition", "leader", "epoch", "replicas", ...}]}``, every
  section whatever ``-a``/``-p`` say, replicas sorted as in the table.

Rows of namespaces other than ``kafka`` (Redpanda's ``redpanda`` and ``kafka_internal``) are
not Kafka topics and are left out, as ``kafka-reassign-partitions.sh`` never shows them. The
cores rpk reports are not used: the allocator puts each replica on its node's least-loaded
core, as it does for Kafka.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trimtab.systems.kafka.tool_output import Entry, broker_id

__all__ = [
    "CLUSTER_PARTITIONS_HEADER",
    "parse_rpk",
]

#: The columns of ``rpk cluster partitions list`` (redpanda ``rpk/pkg/cli/cluster/partitions``).
CLUSTER_PARTITIONS_HEADER = ("NAMESPACE", "TOPIC", "PARTITION", "LEADER-ID", "REPLICA-CORE")
_LIST_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+\[([^\]]*)\](?:\s+(\S+))?\s*$")
_DESCRIBE_ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+\[([^\]]*)\]")
_REPLICA_CORE = re.compile(r"^(\d+)-(\d+)$")
_KAFKA_NAMESPACE = "kafka"


def parse_rpk(text: str, where: str) -> list[Entry] | None:
    """The partitions of an rpk listing (see the module docstring), None when ``text`` is
    none; a recognised listing with a bad row is a ``ValueError`` naming it."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            return None
        if isinstance(doc, list) and all(isinstance(d, dict) and "partition_id" in d for d in doc):
            return _cluster_partitions_json(doc, where)
        if doc and isinstance(doc, list) and all(_is_described_topic(d) for d in doc):
            return _topic_describe_json(doc, where)
        return None
    lines = text.splitlines()
    header = next((k for k, line in enumerate(lines) if _is_list_header(line)), None)
    if header is not None:
        return _cluster_partitions_table(lines[header + 1 :], header + 1, where)
    if any(_is_describe_header(line) for line in lines):
        return _topic_describe(lines, where)
    return None


def _is_list_header(line: str) -> bool:
    return tuple(line.split()[:5]) == CLUSTER_PARTITIONS_HEADER


def _is_describe_header(line: str) -> bool:
    return line.split()[:4] == ["PARTITION", "LEADER", "EPOCH", "REPLICAS"]


def _cluster_partitions_json(doc: list[dict[str, Any]], where: str) -> list[Entry]:
    out: list[Entry] = []
    for n, item in enumerate(doc):
        topic, partition = item.get("topic"), broker_id(item.get("partition_id"))
        raw = item.get("replicas")
        nodes = (
            [broker_id(r.get("node_id")) if isinstance(r, dict) else None for r in raw]
            if isinstance(raw, list)
            else None
        )
        if not isinstance(topic, str) or partition is None or nodes is None or None in nodes:
            raise ValueError(
                f"{where}: [{n}] needs a topic, a partition_id and replicas "
                f'[{{"node_id": 1, "core": 0}}], got {item!r}'
            )
        if item.get("ns", _KAFKA_NAMESPACE) == _KAFKA_NAMESPACE:
            out.append((topic, partition, [r for r in nodes if r is not None]))
    return out


def _is_described_topic(item: object) -> bool:
    """An element of ``rpk topic describe --format json`` (its ``describedTopic``)."""
    return isinstance(item, dict) and isinstance(item.get("summary"), dict) and "partitions" in item


def _topic_describe_json(doc: list[dict[str, Any]], where: str) -> list[Entry]:
    out: list[Entry] = []
    for n, item in enumerate(doc):
        topic, rows = item["summary"].get("name"), item.get("partitions") or []
        if not isinstance(topic, str) or not isinstance(rows, list):
            raise ValueError(f"{where}: [{n}] needs summary.name and a partitions list")
        for k, row in enumerate(rows):
            partition = broker_id(row.get("partition")) if isinstance(row, dict) else None
            raw = row.get("replicas") if isinstance(row, dict) else None
            nodes = [broker_id(r) for r in raw] if isinstance(raw, list) else [None]
            if partition is None or None in nodes:
                raise ValueError(
                    f"{where}: [{n}].partitions[{k}] needs a partition and replicas "
                    f"[1, 2, 3], got {row!r}"
                )
            out.append((topic, partition, [r for r in nodes if r is not None]))
    return out


def _cluster_partitions_table(lines: list[str], first: int, where: str) -> list[Entry]:
    out: list[Entry] = []
    for k, line in enumerate(lines, start=first + 1):
        if not line.strip():
            continue
        match = _LIST_ROW.match(line.strip())
        pairs = [_REPLICA_CORE.match(p) for p in match[5].split()] if match else [None]
        if match is None or None in pairs:
            raise ValueError(
                f"{where} line {k}: not a row of rpk cluster partitions list "
                f"(NAMESPACE TOPIC PARTITION LEADER-ID [NODE-CORE ...] DISABLED): {line.strip()!r}"
            )
        if match[1] == _KAFKA_NAMESPACE:
            out.append((match[2], int(match[3]), [int(p[1]) for p in pairs if p is not None]))
    return out


def _topic_describe(lines: list[str], where: str) -> list[Entry]:
    out: list[Entry] = []
    topic: str | None = None
    in_table = False
    for k, line in enumerate(lines, start=1):
        words = line.split()
        if len(words) == 2 and words[0] == "NAME":
            topic, in_table = words[1], False
        elif _is_describe_header(line):
            if topic is None:
                raise ValueError(
                    f"{where}: rpk topic describe -p prints no topic name; save "
                    "`rpk topic describe -a TOPIC` (its SUMMARY names the topic) or "
                    "`rpk cluster partitions list --all`"
                )
            in_table = True
        elif in_table and words:
            match = _DESCRIBE_ROW.match(line.strip())
            if match is None:
                in_table = False
                continue
            replicas = [int(r) for r in match[4].split() if r.isdigit()]
            if len(replicas) != len(match[4].split()):
                raise ValueError(f"{where} line {k}: replicas {match[4]!r} are not broker ids")
            if topic is not None:
                out.append((topic, int(match[1]), replicas))
        elif not words:
            in_table = False
    return out
