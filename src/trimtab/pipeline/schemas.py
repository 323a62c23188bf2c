"""The pipeline's input tables: columns, types, keys and the value rules each column obeys.

These are DESIGN.md's data contracts written as data, so that reading (explicit schemas),
validation (rules per column kind) and the docs all come from one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["INPUT_TABLES", "Column", "InputTable"]

Kind = Literal["key", "text", "fraction", "count", "rate", "timestamp", "state", "role"]


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its Spark type and the rule family its values obey.

    ``fraction`` is a usage in 0..1; ``count``/``rate`` must not be negative; ``key`` must
    be present; ``timestamp`` must parse and not lie in the future beyond the tolerance;
    ``role`` is ``bookie``, ``broker`` or empty (both).
    """

    name: str
    type: Literal["string", "double", "long", "timestamp"]
    kind: Kind
    required: bool = True


@dataclass(frozen=True, slots=True)
class InputTable:
    name: str
    columns: tuple[Column, ...]
    optional: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.required)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.kind in ("key", "timestamp"))


def _c(name: str, type_: Literal["string", "double", "long", "timestamp"], kind: Kind) -> Column:
    return Column(name, type_, kind)


_METRIC_RATES = (
    _c("msg_in_per_s", "double", "rate"),
    _c("msg_out_per_s", "double", "rate"),
    _c("throughput_in_bytes_per_s", "double", "rate"),
    _c("throughput_out_bytes_per_s", "double", "rate"),
)

INPUT_TABLES: dict[str, InputTable] = {
    "nodes": InputTable(
        "nodes",
        (
            _c("cluster", "string", "key"),
            _c("node", "string", "key"),
            Column("region", "string", "text", required=False),
            Column("rack", "string", "text", required=False),
            _c("cores", "long", "count"),
            _c("memory_bytes", "long", "count"),
            _c("disk_total_bytes", "long", "count"),
            Column("disk_free_bytes", "long", "count", required=False),
            _c("nic_bps", "long", "count"),
            _c("state", "string", "state"),
            Column("role", "string", "role", required=False),
        ),
    ),
    "node_metrics": InputTable(
        "node_metrics",
        (
            _c("ts", "timestamp", "timestamp"),
            _c("cluster", "string", "key"),
            _c("node", "string", "key"),
            _c("cpu", "double", "fraction"),
            _c("memory", "double", "fraction"),
            _c("direct_memory", "double", "fraction"),
            _c("net_in_bps", "double", "rate"),
            _c("net_out_bps", "double", "rate"),
            *_METRIC_RATES,
            _c("disk_free_bytes", "long", "count"),
            _c("disk_total_bytes", "long", "count"),
        ),
    ),
    "bundle_metrics": InputTable(
        "bundle_metrics",
        (
            _c("ts", "timestamp", "timestamp"),
            _c("cluster", "string", "key"),
            _c("bundle", "string", "key"),
            _c("broker", "string", "key"),
            *_METRIC_RATES,
            _c("storage_bytes", "long", "count"),
        ),
    ),
    "allocation_requests": InputTable(
        "allocation_requests",
        (
            _c("cluster", "string", "key"),
            _c("topic", "string", "key"),
            _c("partitions", "long", "count"),
            _c("replication_factor", "long", "count"),
        ),
        optional=True,
    ),
}
