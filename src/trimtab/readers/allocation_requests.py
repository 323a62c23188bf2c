"""Read the ``allocation_requests`` table: one row per topic to create (or to extend).

Columns (DESIGN.md): ``topic, partitions, replication_factor`` and optionally ``cluster`` (may
be left out when the inventory has one cluster) and ``partition_size_bytes`` (the expected
size of one replica, for the disk rules; 0 when unknown). CSV, JSON-lines or Parquet, read by
:func:`trimtab.readers.table_files.parse_table` with the rules of :data:`trimtab.contract.TABLES`
(the pipeline's too): a bad row is rejected with its file, line and reason,
never dropped. A topic is named once: an exact copy of a row is refused as ``duplicate`` (the
first is kept), two different rows for one topic are both refused as ``conflict``
(:mod:`trimtab.contract.repeats`), never merged.

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
from trimtab.contract import TABLES, check_row
from trimtab.readers.table_files import Parsed, TableSpec, parse_table, refuse_repeats

__all__ = ["REQUESTS", "parse_request", "read_requests"]

_REQUESTS = TABLES["allocation_requests"]
REQUESTS = TableSpec.of(_REQUESTS)


def read_requests(path: str | Path) -> Parsed[AllocationRequest]:
    """Every row of the requests table at ``path``, parsed or rejected with a reason."""
    return refuse_repeats(
        parse_table(path, REQUESTS, parse_request),
        lambda r: (r.cluster, r.topic),
        lambda key: f"topic {key[1]}" + (f" of cluster {key[0]!r}" if key[0] else ""),
    )


def parse_request(row: Mapping[str, Any]) -> AllocationRequest:
    """One row as a request; :class:`~trimtab.contract.RowError` (the row's rule and
    rejection reason) if it is not one."""
    values = check_row(_REQUESTS, row)
    return AllocationRequest(
        topic=values["topic"],
        partitions=values["partitions"],
        replication_factor=values["replication_factor"],
        partition_size_bytes=values["partition_size_bytes"] or 0,
        cluster=values["cluster"],
    )
