"""What ``kafka-reassign-partitions.sh`` prints, read whole as the operator saved it.

The tool (``ReassignPartitionsCommand`` in Kafka's ``tools`` module) prints its JSON between
status lines, so a saved stdout is not one JSON document:

``--generate``::

    Current partition replica assignment
    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}

    Proposed partition reassignment configuration
    {"version":1,"partitions":[...]}

``--execute`` (the current assignment of the partitions it moves: the rollback)::

    Current partition replica assignment

    {"version":1,"partitions":[...]}

    Save this to use as the --reassignment-json-file option during rollback
    Successfully started partition reassignments for t-0,t-1

``--verify`` (states only, no replica lists)::

    Status of partition reassignment:
    Reassignment of partition t-0 is completed.
    Reassignment of partition t-1 is still in progress.
    There is no active reassignment of partition t-2, but replica set is 1,2 rather than 2,3.

:func:`parse_reassign_output` tells them apart by these lines and returns the documents they
hold; broker ids may be written as numbers or as strings of digits (``"3"``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CURRENT_HEADER",
    "PROPOSED_HEADER",
    "ROLLBACK_LINE",
    "STARTED_PREFIX",
    "STATUS_HEADER",
    "Entry",
    "ReassignOutput",
    "broker_id",
    "json_documents",
    "parse_reassign_output",
    "partition_entries",
]

CURRENT_HEADER = "Current partition replica assignment"
PROPOSED_HEADER = "Proposed partition reassignment configuration"
ROLLBACK_LINE = "Save this to use as the --reassignment-json-file option during rollback"
STARTED_PREFIX = "Successfully started partition reassignment"
STATUS_HEADER = "Status of partition reassignment:"

#: (topic, partition, broker ids) of one partition.
Entry = tuple[str, int, list[int]]

_COMPLETED = re.compile(r"^Reassignment of partition (?P<tp>\S+) is completed\.?$")
_IN_PROGRESS = re.compile(r"^Reassignment of partition (?P<tp>\S+) is still in progress\.?$")
_MISMATCH = re.compile(
    r"^There is no active reassignment of partition (?P<tp>\S+), but replica set is "
    r"(?P<current>[\d,]*) rather than (?P<target>[\d,]*)\.?$"
)

Kind = Literal["json", "generate", "execute", "verify"]


@dataclass(frozen=True, slots=True)
class ReassignOutput:
    """What one saved output holds: which action printed it, the current assignment (from
    ``--generate``/``--execute``, or a bare document), the proposal (``--generate``), and the
    state of each partition (``--verify``: ``completed``, ``in_progress`` or ``mismatch``)."""

    kind: Kind
    current: list[Entry] = field(default_factory=list)
    proposed: list[Entry] = field(default_factory=list)
    states: dict[tuple[str, int], str] = field(default_factory=dict)


def json_documents(text: str) -> list[tuple[int, Any]]:
    """Every JSON object or array that starts a line of ``text`` (its line number, 1-based,
    and the value), spread over as many lines as it takes; other lines are skipped."""
    decoder = json.JSONDecoder()
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    found: list[tuple[int, Any]] = []
    end = 0
    for number, line in enumerate(lines):
        start = offsets[number] + len(line) - len(line.lstrip())
        if start < end or line.lstrip()[:1] not in ("{", "["):
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        found.append((number + 1, value))
    return found


def _split_partition(name: str) -> tuple[str, int] | None:
    topic, _, number = name.rpartition("-")
    return (topic, int(number)) if topic and number.isdigit() else None


def broker_id(value: Any) -> int | None:
    """A broker id written as a number (``3``) or as a string of digits (``"3"``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def partition_entries(doc: Any, where: str) -> list[Entry]:
    """The entries of a reassignment document ``{"version": 1, "partitions": [...]}``;
    ``ValueError`` naming ``where`` and the first bad entry otherwise."""
    if not isinstance(doc, dict) or not isinstance(doc.get("partitions"), list):
        raise ValueError(f'{where}: expected {{"version": 1, "partitions": [...]}}')
    if doc.get("version", 1) not in (1, "1"):
        raise ValueError(f"{where}: version {doc.get('version')!r}; Kafka's tool writes 1")
    out: list[Entry] = []
    for n, entry in enumerate(doc["partitions"]):
        item = entry if isinstance(entry, dict) else {}
        topic, partition = item.get("topic"), broker_id(item.get("partition"))
        raw = item.get("replicas")
        replicas = [broker_id(r) for r in raw] if isinstance(raw, list) else None
        if (
            not isinstance(topic, str)
            or partition is None
            or replicas is None
            or any(r is None for r in replicas)
        ):
            raise ValueError(
                f"{where}: partitions[{n}] needs a topic (string), a partition (integer) and "
                f"replicas (broker ids, numbers or strings of digits), got {entry!r}"
            )
        out.append((topic, partition, [r for r in replicas if r is not None]))
    return out


def _verify_states(lines: list[str]) -> dict[tuple[str, int], str]:
    states: dict[tuple[str, int], str] = {}
    for line in lines:
        text = line.strip()
        for pattern, state in (
            (_COMPLETED, "completed"),
            (_IN_PROGRESS, "in_progress"),
            (_MISMATCH, "mismatch"),
        ):
            match = pattern.match(text)
            part = _split_partition(match["tp"]) if match else None
            if part is not None:
                states[part] = state
    return states


def _after(header: str, lines: list[str], docs: list[tuple[int, Any]]) -> Any:
    """The first JSON document after the line ``header`` (None when there is none)."""
    at = next((k + 1 for k, line in enumerate(lines) if line.strip() == header), None)
    if at is None:
        return None
    return next((doc for number, doc in docs if number > at), None)


def parse_reassign_output(text: str, where: str) -> ReassignOutput | None:
    """The documents of a saved ``kafka-reassign-partitions.sh`` output or of a bare
    reassignment JSON; None when ``text`` is neither. A recognised output whose JSON is
    malformed is a ``ValueError`` naming ``where`` and the section."""
    lines = text.splitlines()
    stripped = {line.strip() for line in lines}
    if STATUS_HEADER in stripped:
        return ReassignOutput("verify", states=_verify_states(lines))
    docs = json_documents(text)
    if CURRENT_HEADER in stripped:
        current = _after(CURRENT_HEADER, lines, docs)
        if current is None:
            raise ValueError(f"{where}: no JSON after '{CURRENT_HEADER}'")
        entries = partition_entries(current, f"{where} ({CURRENT_HEADER})")
        if PROPOSED_HEADER in stripped:
            proposed_doc = _after(PROPOSED_HEADER, lines, docs)
            proposed = (
                partition_entries(proposed_doc, f"{where} ({PROPOSED_HEADER})")
                if proposed_doc is not None
                else []
            )
            return ReassignOutput("generate", current=entries, proposed=proposed)
        return ReassignOutput("execute", current=entries)
    shaped = [doc for _, doc in docs if isinstance(doc, dict) and "partitions" in doc]
    if len(docs) == 1 and shaped:
        return ReassignOutput("json", current=partition_entries(shaped[0], where))
    return None
