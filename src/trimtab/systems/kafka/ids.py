"""Kafka broker ids of trimtab's nodes, both ways of every Kafka document.

Kafka names brokers by integer id, trimtab names nodes ``host[:port]``: :func:`broker_ids`
maps them. A node whose host is a whole number (``3``, ``3:9092``) is that broker; any other
node needs an explicit mapping (a table with columns ``node, broker_id``,
:func:`read_broker_ids`). The readers (:mod:`~trimtab.systems.kafka.readers`) turn ids back
into nodes with it, the writers (:mod:`~trimtab.systems.kafka.writers`) nodes into ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from trimtab.cluster import NodeId
from trimtab.errors import InputError
from trimtab.readers.table_files import TableSpec, parse_table

__all__ = ["BROKER_IDS", "broker_ids", "read_broker_ids"]

BROKER_IDS = TableSpec("broker ids", required=("node", "broker_id"))


def broker_ids(nodes: Iterable[str], mapping: Mapping[str, int] | None = None) -> dict[NodeId, int]:
    """Kafka broker id of each node: from ``mapping``, else the node's numeric host.

    Raises :class:`~trimtab.errors.InputError` naming the nodes left without an id, or two
    nodes given one id.
    """
    given = {NodeId(node): broker for node, broker in (mapping or {}).items()}
    out: dict[NodeId, int] = {}
    missing: list[str] = []
    for raw in nodes:
        node = NodeId(raw)
        if node in given:
            out[node] = given[node]
        elif node.host.isdigit():
            out[node] = int(node.host)
        else:
            missing.append(node)
    if missing:
        missing.sort()  # the same message whatever order the nodes came in (a set, say)
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise InputError(
            f"Kafka needs integer broker ids and {len(missing)} node(s) have none: {shown}. "
            "Name nodes by broker id in the inventory (node '3' or '3:9092'), or give a table "
            "with columns node, broker_id"
        )
    seen: dict[int, NodeId] = {}
    for node, broker in sorted(out.items()):
        if broker < 0:
            raise InputError(f"node {node}: broker id {broker} is negative")
        if broker in seen:
            raise InputError(f"nodes {seen[broker]} and {node} both have broker id {broker}")
        seen[broker] = node
    return out


def read_broker_ids(path: str | Path) -> dict[str, int]:
    """A ``node, broker_id`` table; a file with bad rows is refused whole, naming them."""
    parsed = parse_table(path, BROKER_IDS, _parse_broker_row)
    if parsed.rejected:
        shown = "; ".join(str(r) for r in parsed.rejected[:3])
        raise InputError(f"broker ids {path}: {len(parsed.rejected)} bad row(s): {shown}")
    return dict(row for row, _ in parsed.accepted)


def _parse_broker_row(row: Mapping[str, Any]) -> tuple[str, int]:
    node = str(row.get("node") or "").strip()
    if not node:
        raise ValueError("missing node")
    text = str(row.get("broker_id") if row.get("broker_id") is not None else "").strip()
    if not text.isdigit():
        raise ValueError(f"broker_id must be a whole number of 0 or more, got {text!r}")
    return str(NodeId(node)), int(text)
