"""Read the ``node_health`` table: each broker's health, for the partition balancer.

Columns and row rules are :data:`trimtab.contract.TABLES` (``node, state`` and optionally
``down_since`` and ``cluster``; see :mod:`trimtab.allocation.health` for what the states mean).
A bad row is rejected with its file, line and reason; a node named twice is refused
(``duplicate``/``conflict``, :mod:`trimtab.contract.repeats`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trimtab.allocation.health import NodeStatus
from trimtab.cluster import NodeId
from trimtab.contract import TABLES, check_row
from trimtab.readers.table_files import Parsed, TableSpec, parse_table, refuse_repeats

__all__ = ["HEALTH", "parse_health", "read_health"]

_HEALTH = TABLES["node_health"]
HEALTH = TableSpec.of(_HEALTH)


def read_health(path: str | Path) -> Parsed[NodeStatus]:
    """Every row of the health table at ``path``, parsed or rejected with its rule and reason;
    a node named twice is refused (``duplicate``/``conflict``)."""
    return refuse_repeats(
        parse_table(path, HEALTH, parse_health),
        lambda s: (s.cluster, s.node),
        lambda key: f"node {key[1]}",
    )


def parse_health(row: Mapping[str, Any]) -> NodeStatus:
    """One row as a :class:`~trimtab.allocation.health.NodeStatus`;
    :class:`~trimtab.contract.RowError` (the row's rule and reason) if it is not one."""
    values = check_row(_HEALTH, row)
    return NodeStatus(
        node=NodeId(values["node"]),
        health=values["state"],
        down_since=values["down_since"],
        cluster=values["cluster"],
    )
