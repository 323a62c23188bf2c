"""Inventory rows built from what a cluster publishes, completed from a hand table.

``trimtab inventory`` (issue 42) writes the ``nodes`` table from live sources. No source
publishes every column (a Kafka broker does not say its cores), so each row is merged with
``--defaults``: a small CSV whose row with an empty ``node`` (or ``*``) gives every node's
default and whose other rows give one node's values. A measured value wins over a default; a
value given for one node wins over both. Every cell remembers where it came from (``measured``
or ``given``) because the contract's ``nodes`` table has no column for it: the command shows it
in its summary and in ``--json``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trimtab.cluster import NodeId
from trimtab.errors import InputError
from trimtab.readers.sniff import read_text, seems_to_be

__all__ = ["COLUMNS", "NodeRow", "merge_defaults", "read_defaults", "split_location", "to_csv"]

#: The ``nodes`` columns, in the order ``examples/*/inventory.csv`` write them.
COLUMNS = (
    "cluster",
    "node",
    "region",
    "rack",
    "cores",
    "memory_bytes",
    "disk_total_bytes",
    "disk_free_bytes",
    "nic_bps",
    "state",
    "role",
)
#: Columns a value is required in for the contract to take the row.
_REQUIRED = ("cores", "memory_bytes", "disk_total_bytes", "nic_bps")


@dataclass
class NodeRow:
    """One node: its cells and, per cell, ``measured`` or ``given``."""

    cluster: str
    node: str
    cells: dict[str, object] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    #: why a value the source should have given is not there ("GET_BOOKIE_INFO: timeout ...")
    problems: list[str] = field(default_factory=list)

    def measured(self, column: str, value: object) -> None:
        """Record a value the cluster published (``None``: not published)."""
        if value is not None and value != "":
            self.cells[column] = value
            self.sources[column] = "measured"

    def located(self, location: str | None) -> None:
        """Record a measured ``/region/rack`` (or ``/rack``) as the region and rack columns."""
        parts = split_location(location)
        if parts is not None:
            self.measured("region", parts[0])
            self.measured("rack", parts[1])

    @property
    def missing(self) -> list[str]:
        """Required capacities neither measured nor given."""
        return [c for c in _REQUIRED if c not in self.cells]

    def as_dict(self) -> dict[str, object]:
        return {"cluster": self.cluster, "node": self.node, **self.cells}


def split_location(location: str | None) -> tuple[str | None, str] | None:
    """``/dc1/r1`` -> (dc1, r1); ``/r1`` -> (None, r1): the inventory's two columns. None for
    no location and for one of more than two levels, which the two columns cannot hold.

    >>> split_location("/dc1/r1"), split_location("/r1"), split_location("/a/b/c")
    (('dc1', 'r1'), (None, 'r1'), None)
    """
    parts = [p for p in (location or "").split("/") if p]
    if len(parts) == 1:
        return None, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def read_defaults(path: Path) -> dict[str, dict[str, object]]:
    """``--defaults``: node (``""`` for every node) -> column -> value, columns of the contract."""
    expected = f"a CSV with columns among {', '.join(COLUMNS)} (an empty node: every node)"
    make = "cp examples/inventory/kafka-defaults.csv defaults.csv (then edit it)"
    text = read_text(path, f"a --defaults table, {expected}", make)
    reader = csv.DictReader(io.StringIO(text))
    header = list(reader.fieldnames or [])
    unknown = [c for c in header if c not in COLUMNS]
    if unknown or not header:
        guess = seems_to_be(text)
        seems = f" (it seems to be {guess})" if guess and not guess.startswith("a CSV") else ""
        raise InputError(
            f"--defaults {path}: unknown column(s) {', '.join(unknown) or '(none)'}{seems}; "
            f"expected {expected}. Make one with: {make}"
        )
    table: dict[str, dict[str, object]] = {}
    for row in reader:
        node = (row.get("node") or "").strip()
        key = "" if node in ("", "*") else str(NodeId(node))
        values = {
            k: _number(v.strip()) for k, v in row.items() if k not in ("node", "cluster") and v
        }
        table.setdefault(key, {}).update(values)
    return table


def _number(text: str) -> object:
    """A whole number as an int (JSON then shows 8, not "8"); anything else as written."""
    return int(text) if text.isdigit() else text


def merge_defaults(rows: Iterable[NodeRow], defaults: Mapping[str, Mapping[str, object]]) -> None:
    """Fill each row's empty cells from ``defaults`` (the node's own row first, then ``""``);
    a value given for one node replaces a measured one (the hand table is the operator's
    correction)."""
    common = defaults.get("", {})
    for row in rows:
        own = defaults.get(str(NodeId(row.node)), {})
        for column, value in common.items():
            if column not in row.cells:
                row.cells[column] = value
                row.sources[column] = "given"
        for column, value in own.items():
            row.cells[column] = value
            row.sources[column] = "given"


def to_csv(rows: Iterable[NodeRow]) -> str:
    """The rows as the contract's ``nodes`` CSV (columns nobody filled are left out)."""
    listed = list(rows)
    used = [c for c in COLUMNS if c in ("cluster", "node") or any(c in r.cells for r in listed)]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=used, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in listed:
        writer.writerow(row.as_dict())
    return buf.getvalue()
