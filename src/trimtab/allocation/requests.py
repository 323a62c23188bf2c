"""Read the ``allocation_requests`` table: one row per topic to create (or to extend).

Columns (DESIGN.md): ``topic, partitions, replication_factor`` and optionally ``cluster`` (may
be left out when the inventory has one cluster) and ``partition_size_bytes`` (the expected
size of one replica, for the disk rules; 0 when unknown). CSV, JSON-lines or Parquet, read by
:func:`trimtab.tables.parse_table`: a bad row is rejected with its file, line and reason,
never dropped. A topic named twice gets the partitions of both rows, numbered on.

Example (``examples/allocation/requests.csv``)::

    topic,partitions,replication_factor
    orders,12,3
    clicks,24,3
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trimtab.allocation.model import AllocationRequest
from trimtab.tables import Parsed, TableSpec, parse_table

__all__ = ["REQUESTS", "parse_request", "read_requests"]

REQUESTS = TableSpec(
    "allocation requests",
    required=("topic", "partitions", "replication_factor"),
    optional=("cluster", "partition_size_bytes"),
)


def read_requests(path: str | Path) -> Parsed[AllocationRequest]:
    """Every row of the requests table at ``path``, parsed or rejected with a reason."""
    return parse_table(path, REQUESTS, parse_request)


def parse_request(row: Mapping[str, Any]) -> AllocationRequest:
    """One row as a request; ``ValueError`` (the row's rejection reason) if it is not one."""
    if row.get("_extra"):
        raise ValueError("more fields than the header has columns")
    topic = _text(row.get("topic"))
    if topic is None:
        raise ValueError("missing topic")
    size = _whole(row, "partition_size_bytes", required=False)
    return AllocationRequest(
        topic=topic,
        partitions=_whole(row, "partitions", required=True) or 0,
        replication_factor=_whole(row, "replication_factor", required=True) or 0,
        partition_size_bytes=size or 0,
        cluster=_text(row.get("cluster")),
    )


def _text(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    return text or None


def _whole(row: Mapping[str, Any], column: str, *, required: bool) -> int | None:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ValueError(f"missing {column}")
        return None
    if isinstance(value, bool):
        raise ValueError(f"{column} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{column} must be a whole number, got {value!r}") from None
    if not number.is_integer():
        raise ValueError(f"{column} must be a whole number, got {value!r}")
    return int(number)
