"""The JSON ``kafka-reassign-partitions.sh --execute --reassignment-json-file`` takes.

Format (Kafka ``ReassignPartitionsCommandOptions``)::

    {"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3],
                                "log_dirs":["any","any","any"]}]}

``replicas`` is ordered and its first broker is the preferred leader; ``log_dirs`` is optional,
as long as ``replicas``, each entry ``"any"`` or an absolute path. Partitions are written by
topic, then partition. A plan is written twice: the partitions it changes as they will be
(the document to execute) and as they are (the rollback), as ``--generate`` prints its
"Proposed" and "Current" documents. Nodes become broker ids through
:func:`~trimtab.systems.kafka.ids.broker_ids`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from trimtab.allocation.model import PartitionAssignment
from trimtab.cluster import NodeId
from trimtab.errors import InputError

__all__ = ["dumps", "reassignment", "reassignment_with_dirs"]


def reassignment(
    assignments: Iterable[PartitionAssignment],
    ids: Mapping[NodeId, int],
    *,
    log_dirs: Mapping[NodeId, str] | None = None,
) -> dict[str, Any]:
    """The reassignment document; ``log_dirs`` (node → directory or ``"any"``) adds the
    optional ``log_dirs`` list to every partition."""
    partitions = []
    for a in sorted(assignments, key=lambda a: (a.topic, a.partition)):
        entry: dict[str, Any] = {
            "topic": a.topic,
            "partition": a.partition,
            "replicas": [ids[r.node] for r in a.replicas],
        }
        if log_dirs is not None:
            dirs = [log_dirs.get(r.node, "any") for r in a.replicas]
            for d in dirs:
                if d != "any" and not d.startswith("/"):
                    raise InputError(f"log dir {d!r} must be 'any' or an absolute path")
            entry["log_dirs"] = dirs
        partitions.append(entry)
    return {"version": 1, "partitions": partitions}


def reassignment_with_dirs(
    assignments: Iterable[PartitionAssignment],
    ids: Mapping[NodeId, int],
    dirs: Mapping[tuple[str, int], Mapping[NodeId, str]],
    unchanged: Iterable[PartitionAssignment] = (),
) -> dict[str, Any]:
    """The reassignment document with ``log_dirs`` pinned where ``dirs`` says ((topic,
    partition) → node → directory; ``"any"`` for every other replica), as
    ``kafka-reassign-partitions.sh`` takes it: a replica given a directory is moved there,
    inside its broker when the broker keeps it. Partitions only in ``unchanged`` (their
    replicas stay, a directory changes) are written with their replicas as they are. With
    no directory at all the document is :func:`reassignment`'s."""
    by_key = {(a.topic, a.partition): a for a in unchanged if (a.topic, a.partition) in dirs}
    by_key.update({(a.topic, a.partition): a for a in assignments})
    if not dirs:
        return reassignment(by_key.values(), ids)
    doc = reassignment(by_key.values(), ids, log_dirs={})
    for entry in doc["partitions"]:
        pinned = dirs.get((entry["topic"], entry["partition"]), {})
        node_of = {ids[n]: n for n in pinned}
        entry["log_dirs"] = [
            pinned[node_of[b]] if b in node_of else "any" for b in entry["replicas"]
        ]
        for d in entry["log_dirs"]:
            if d != "any" and not d.startswith("/"):
                raise InputError(f"log dir {d!r} must be 'any' or an absolute path")
    return doc


def dumps(document: Mapping[str, Any]) -> str:
    """Compact JSON on one line, as ``kafka-reassign-partitions.sh --generate`` prints it."""
    return json.dumps(document, separators=(",", ":")) + "\n"
