"""The input tables, stated once: columns, types, required or optional, and the row rules.

Every input of trimtab — ``nodes`` (the inventory), ``node_metrics``, ``bundle_metrics`` and
``allocation_requests`` — is described here and nowhere else. The plain-Python readers
(``trimtab place``/``topology``/``shed``/``allocate``, through :func:`check_row`) and the Spark
ingest (``pipeline/ingest.py``, which derives its schema and rule expressions from
:data:`TABLES` and :data:`ROW_RULES`) refuse the same rows under the same rule names, so a rule
added here applies to every command and to ``pipeline run`` alike.

Rules
    :data:`ROW_RULES` are checked in order and the first one a row breaks is its verdict.
    Rules with ``scope="key"`` read only a row's key columns; the pipeline decides them once
    per key on its small summary (never per telemetry row), the Python readers per row. Rules
    needing other rows (:data:`MEMBERSHIP_RULES`: unknown cluster or node, duplicates) come
    after every row rule.

Cells
    Whole numbers (``count``) are exact (disk bytes exceed a float's 53 bits) and must fit a
    signed 64-bit long: ``8``, ``"8"``, ``8.0`` and ``"1e3"`` are whole, ``8.5`` is not.
    Numbers (``fraction``, ``rate``) must be finite. ``ts`` is UTC epoch seconds or ISO 8601.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from trimtab.cluster import NodeId, NodeState, Role, location_of

__all__ = [
    "BUNDLE_PATTERN",
    "FUTURE_TOLERANCE_S",
    "LONG_MAX",
    "MEMBERSHIP_RULES",
    "NODE_ID_PATTERN",
    "PYTHON_CHECKS",
    "ROW_RULES",
    "TABLES",
    "TOPIC_PATTERN",
    "Column",
    "Kind",
    "Row",
    "RowError",
    "Rule",
    "Table",
    "check_row",
    "number",
    "split_bundle",
    "text",
    "timestamp",
    "whole",
]

ColumnType = Literal["string", "double", "long", "timestamp"]
Row = dict[str, Any]

#: How far in the future a sample's ``ts`` may lie before it is refused (clock skew).
FUTURE_TOLERANCE_S = 300.0
#: The largest whole number a ``count`` column holds (Spark's ``long``).
LONG_MAX = 2**63 - 1
#: ``tenant/namespace/0xLOWER_0xUPPER``, what pulsar-admin takes (Java and Python regex alike).
BUNDLE_PATTERN = r"^[^/]+/[^/]+/0x[0-9a-fA-F]{1,16}_0x[0-9a-fA-F]{1,16}$"
#: host[:port] as :class:`~trimtab.cluster.NodeId` accepts it (bracketed IPv6 allowed).
NODE_ID_PATTERN = r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)(:([1-9][0-9]{0,4}))?$"
#: A topic name Kafka accepts (besides ``.`` and ``..``).
TOPIC_PATTERN = r"^[A-Za-z0-9._-]{1,249}$"

_BUNDLE = re.compile(BUNDLE_PATTERN)
_TOPIC = re.compile(TOPIC_PATTERN)


class Kind(StrEnum):
    """The family of values a column holds, which decides the rules it obeys."""

    TEXT = "text"  # free text
    NODE_ID = "node_id"  # an inventory node's id: host[:port]
    NODE_REF = "node_ref"  # a telemetry row's node or broker: must be in the inventory
    LOCATION = "location"  # a region or rack name: no '/'
    FRACTION = "fraction"  # a usage in 0..1
    COUNT = "count"  # a whole number >= 0 within a long
    RATE = "rate"  # a finite number >= 0
    TIMESTAMP = "timestamp"
    STATE = "state"  # writable, readonly or down
    ROLE = "role"  # bookie, broker or empty (both)
    BUNDLE = "bundle"  # tenant/namespace/0xLOWER_0xUPPER
    TOPIC = "topic"  # a Kafka topic name


_NUMBERS = (Kind.FRACTION, Kind.RATE)


@dataclass(frozen=True, slots=True)
class Column:
    """One column. ``required``: the column must be in every file and its value not blank
    (an optional column may be absent; a blank value is then unknown). ``key``: the column
    names the row (blank -> ``missing_key``). ``positive``: a count that must be above 0."""

    name: str
    type: ColumnType
    kind: Kind
    required: bool = True
    key: bool = False
    positive: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """One input table; ``label`` names it in messages, ``optional`` tables may be absent."""

    name: str
    label: str
    columns: tuple[Column, ...]
    optional: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.required)

    @property
    def optional_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if not c.required)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.key)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def of(self, *kinds: Kind) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind in kinds)


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule's name (as the quarantine and the readers report it) and what it refuses."""

    name: str
    meaning: str
    scope: Literal["row", "key"] = "row"


class RowError(ValueError):
    """A row refused by ``rule``; the message is the reason."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule


def _c(
    name: str,
    type_: ColumnType,
    kind: Kind,
    *,
    required: bool = True,
    key: bool = False,
    positive: bool = False,
) -> Column:
    return Column(name, type_, kind, required, key, positive)


_TS = _c("ts", "timestamp", Kind.TIMESTAMP, key=True)
_CLUSTER = _c("cluster", "string", Kind.TEXT, key=True)
_RATES = tuple(
    _c(n, "double", Kind.RATE)
    for n in (
        "msg_in_per_s",
        "msg_out_per_s",
        "throughput_in_bytes_per_s",
        "throughput_out_bytes_per_s",
    )
)

#: Every input table, by the name of its directory under the pipeline's input.
TABLES: dict[str, Table] = {
    "nodes": Table(
        "nodes",
        "inventory",
        (
            _CLUSTER,
            _c("node", "string", Kind.NODE_ID, key=True),
            _c("region", "string", Kind.LOCATION, required=False),
            _c("rack", "string", Kind.LOCATION, required=False),
            _c("cores", "long", Kind.COUNT, positive=True),
            _c("memory_bytes", "long", Kind.COUNT),
            _c("disk_total_bytes", "long", Kind.COUNT),
            _c("disk_free_bytes", "long", Kind.COUNT, required=False),
            _c("nic_bps", "long", Kind.COUNT, positive=True),
            _c("state", "string", Kind.STATE),
            _c("role", "string", Kind.ROLE, required=False),
        ),
    ),
    "node_metrics": Table(
        "node_metrics",
        "node_metrics",
        (
            _TS,
            _CLUSTER,
            _c("node", "string", Kind.NODE_REF, key=True),
            _c("cpu", "double", Kind.FRACTION),
            _c("memory", "double", Kind.FRACTION),
            _c("direct_memory", "double", Kind.FRACTION),
            _c("net_in_bps", "double", Kind.RATE),
            _c("net_out_bps", "double", Kind.RATE),
            *_RATES,
            _c("disk_free_bytes", "long", Kind.COUNT, required=False),
            _c("disk_total_bytes", "long", Kind.COUNT, required=False),
        ),
    ),
    "bundle_metrics": Table(
        "bundle_metrics",
        "bundle_metrics",
        (
            _TS,
            _CLUSTER,
            _c("bundle", "string", Kind.BUNDLE, key=True),
            _c("broker", "string", Kind.NODE_REF, key=True),
            *_RATES,
            _c("storage_bytes", "long", Kind.COUNT, required=False),
        ),
    ),
    "allocation_requests": Table(
        "allocation_requests",
        "allocation requests",
        (
            # Blank: the inventory's only cluster (or the one the command names).
            _c("cluster", "string", Kind.TEXT, required=False, key=True),
            _c("topic", "string", Kind.TOPIC, key=True),
            _c("partitions", "long", Kind.COUNT, positive=True),
            _c("replication_factor", "long", Kind.COUNT, positive=True),
            _c("partition_size_bytes", "long", Kind.COUNT, required=False),
        ),
        optional=True,
    ),
}

#: The row rules in the order they are checked; the first one broken is the row's verdict.
ROW_RULES: tuple[Rule, ...] = (
    Rule("malformed", "the line is not a row of the table (not JSON, more fields than columns)"),
    Rule("missing_key", "a column naming the row (cluster, node, bundle, topic, ts) is blank"),
    Rule("bad_timestamp", "ts is neither epoch seconds nor ISO 8601"),
    Rule("wrong_type", "a number column holds no number, or a whole-number column no long"),
    Rule("missing_value", "a required value (cores, state, cpu, partitions...) is blank"),
    Rule("not_finite", "a number is NaN or infinite"),
    Rule("out_of_range", "a usage (cpu, memory, direct_memory) lies outside 0..1"),
    Rule("negative", "a count or rate is below 0"),
    Rule("not_positive", "cores, nic_bps, partitions or replication_factor is 0"),
    Rule("free_above_total", "disk_free_bytes is above disk_total_bytes"),
    Rule("bad_state", "state is not writable, readonly or down"),
    Rule("bad_role", "role is not bookie, broker or empty (both)"),
    Rule("bad_node_id", "an inventory node is not host[:port]"),
    Rule("bad_location", "region or rack contains '/'"),
    Rule("bad_topic", "a topic name Kafka would refuse"),
    Rule("future_timestamp", "ts lies in the future beyond the tolerance (300 s by default)"),
    Rule("bad_bundle", "a bundle is not tenant/namespace/0xLOWER_0xUPPER", scope="key"),
)
#: Rules that need other rows, checked after the row rules.
MEMBERSHIP_RULES: tuple[Rule, ...] = (
    Rule("unknown_cluster", "the row's cluster is not in the accepted inventory"),
    Rule("unknown_node", "the row's node or broker is not a node of its cluster"),
    Rule("duplicate", "a second row for the same inventory node, or an exact copy of a sample"),
)


def split_bundle(name: str) -> tuple[str, str]:
    """``'tenant/ns/0x00000000_0x40000000'`` -> ``('tenant/ns', '0x00000000_0x40000000')``."""
    text = name.strip()
    if not _BUNDLE.match(text):
        raise RowError(
            "bad_bundle",
            f"bad bundle name {name!r}: expected tenant/namespace/0xLOWER_0xUPPER, "
            "e.g. 'public/default/0x00000000_0x40000000'",
        )
    namespace, _, hash_range = text.rpartition("/")
    return namespace, hash_range


# ----------------------------------------------------------------------------- cells


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def text(value: Any) -> str | None:
    """The value as stripped text, None when blank."""
    result = "" if value is None else str(value).strip()
    return result or None


def whole(value: Any) -> int | None:
    """Exact for big integers; None if not a whole number within a long (booleans are not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number: int | None = value
    else:
        number = _whole_text(str(value).strip())
    return number if number is not None and -LONG_MAX - 1 <= number <= LONG_MAX else None


def _whole_text(text_: str) -> int | None:
    try:
        return int(text_)
    except ValueError:
        pass
    try:
        number = float(text_)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def number(value: Any) -> float | None:
    """The value as a float (NaN and infinities included); None if it is no number."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def timestamp(value: Any) -> float | None:
    """UTC epoch seconds from epoch seconds, ISO 8601 text or a datetime; None if neither."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, bool):
        return None
    seconds = number(value)
    if seconds is not None:
        return seconds if math.isfinite(seconds) else None
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


# ----------------------------------------------------------------------------- rows


@dataclass(slots=True)
class _Cells:
    """One row while it is checked: the raw values and the typed ones parsed so far."""

    table: Table
    raw: Mapping[str, Any]
    values: Row
    now: float | None
    tolerance: float


Check = Callable[[_Cells], None]


def check_row(
    table: Table,
    raw: Mapping[str, Any],
    *,
    now: datetime | None = None,
    future_tolerance_s: float = FUTURE_TOLERANCE_S,
) -> Row:
    """The row's typed values by column (None where an optional value is blank), or
    :class:`RowError` naming the first of :data:`ROW_RULES` it breaks. Without ``now`` no
    timestamp counts as in the future."""
    cells = _Cells(table, raw, {}, None if now is None else now.timestamp(), future_tolerance_s)
    for rule in ROW_RULES:
        PYTHON_CHECKS[rule.name](cells)
    return cells.values


def _malformed(cells: _Cells) -> None:
    if cells.raw.get("_extra"):
        raise RowError("malformed", "more fields than the header has columns")


def _missing_key(cells: _Cells) -> None:
    for column in cells.table.columns:
        if column.key and column.required and _blank(cells.raw.get(column.name)):
            raise RowError("missing_key", f"missing {column.name}")


def _bad_timestamp(cells: _Cells) -> None:
    for column in cells.table.of(Kind.TIMESTAMP):
        value = cells.raw.get(column.name)
        stamp = timestamp(value)
        if stamp is None:
            raise RowError(
                "bad_timestamp",
                f"{column.name} {value!r} is neither epoch seconds nor ISO 8601",
            )
        cells.values[column.name] = stamp


def _wrong_type(cells: _Cells) -> None:
    for column in cells.table.of(Kind.COUNT, *_NUMBERS):
        value = cells.raw.get(column.name)
        if _blank(value):
            cells.values[column.name] = None
            continue
        if column.kind is Kind.COUNT:
            parsed: float | None = whole(value)
            what = "a whole number (within a signed 64-bit long)"
        else:
            parsed, what = number(value), "a number"
        if parsed is None:
            raise RowError("wrong_type", f"{column.name} must be {what}, got {value!r}")
        cells.values[column.name] = parsed


def _missing_value(cells: _Cells) -> None:
    for column in cells.table.columns:
        value = cells.raw.get(column.name)
        if column.required and not column.key and _blank(value):
            raise RowError("missing_value", f"missing {column.name}")
        if column.kind not in (Kind.COUNT, *_NUMBERS, Kind.TIMESTAMP):
            cells.values[column.name] = text(value)


def _not_finite(cells: _Cells) -> None:
    for column in cells.table.of(*_NUMBERS):
        value = cells.values.get(column.name)
        if value is not None and not math.isfinite(value):
            raise RowError(
                "not_finite",
                f"{column.name} must be a finite number >= 0, got {cells.raw.get(column.name)!r}",
            )


def _out_of_range(cells: _Cells) -> None:
    for column in cells.table.of(Kind.FRACTION):
        value = cells.values.get(column.name)
        raw = cells.raw.get(column.name)
        if value is not None and value > 1:
            raise RowError(
                "out_of_range",
                f"{column.name} {raw!r} is above 1: usages are fractions (0.85 = 85 %)",
            )
        if value is not None and value < 0:
            raise RowError("out_of_range", f"{column.name} {raw!r} is outside 0..1")


def _negative(cells: _Cells) -> None:
    for column in cells.table.of(Kind.COUNT, Kind.RATE):
        value = cells.values.get(column.name)
        if value is None or value >= 0:
            continue
        raw = cells.raw.get(column.name)
        if column.kind is Kind.RATE:
            reason = f"{column.name} must be a finite number >= 0, got {raw!r}"
        else:
            bound = "above 0" if column.positive else "0 or more"
            reason = f"{column.name} must be {bound}, got {raw!r}"
        raise RowError("negative", reason)


def _not_positive(cells: _Cells) -> None:
    for column in cells.table.columns:
        if column.positive and cells.values.get(column.name) == 0:
            raw = cells.raw.get(column.name)
            raise RowError("not_positive", f"{column.name} must be above 0, got {raw!r}")


def _free_above_total(cells: _Cells) -> None:
    free = cells.values.get("disk_free_bytes")
    total = cells.values.get("disk_total_bytes")
    if free is not None and total is not None and free > total:
        raise RowError(
            "free_above_total", f"disk_free_bytes {free} is above disk_total_bytes {total}"
        )


def _bad_state(cells: _Cells) -> None:
    for column in cells.table.of(Kind.STATE):
        try:
            cells.values[column.name] = NodeState.parse(cells.values[column.name] or "")
        except ValueError as exc:
            raise RowError("bad_state", str(exc)) from None


def _bad_role(cells: _Cells) -> None:
    for column in cells.table.of(Kind.ROLE):
        try:
            cells.values[column.name] = Role.parse(cells.values.get(column.name))
        except ValueError as exc:
            raise RowError("bad_role", str(exc)) from None


def _bad_node_id(cells: _Cells) -> None:
    for column in cells.table.of(Kind.NODE_ID):
        try:
            cells.values[column.name] = NodeId(cells.values[column.name])
        except ValueError as exc:
            raise RowError("bad_node_id", str(exc)) from None


def _bad_location(cells: _Cells) -> None:
    if cells.table.of(Kind.LOCATION):
        try:
            location_of(cells.values.get("region"), cells.values.get("rack"))
        except ValueError as exc:
            raise RowError("bad_location", str(exc)) from None


def _bad_topic(cells: _Cells) -> None:
    for column in cells.table.of(Kind.TOPIC):
        topic = cells.values[column.name]
        if not _TOPIC.match(topic) or topic in (".", ".."):
            raise RowError(
                "bad_topic",
                f"bad topic name {topic!r}: use 1 to 249 characters from a-z, A-Z, 0-9, "
                "'.', '_', '-'",
            )


def _future_timestamp(cells: _Cells) -> None:
    if cells.now is None:
        return
    for column in cells.table.of(Kind.TIMESTAMP):
        stamp = cells.values[column.name]
        if stamp > cells.now + cells.tolerance:
            moment = datetime.fromtimestamp(stamp, UTC).isoformat()
            raise RowError("future_timestamp", f"{column.name} {moment} is in the future")


def _bad_bundle(cells: _Cells) -> None:
    for column in cells.table.of(Kind.BUNDLE):
        split_bundle(cells.values[column.name])


#: The Python check of each row rule (the Spark ones are in ``pipeline/ingest.py``).
PYTHON_CHECKS: Mapping[str, Check] = {
    "malformed": _malformed,
    "missing_key": _missing_key,
    "bad_timestamp": _bad_timestamp,
    "wrong_type": _wrong_type,
    "missing_value": _missing_value,
    "not_finite": _not_finite,
    "out_of_range": _out_of_range,
    "negative": _negative,
    "not_positive": _not_positive,
    "free_above_total": _free_above_total,
    "bad_state": _bad_state,
    "bad_role": _bad_role,
    "bad_node_id": _bad_node_id,
    "bad_location": _bad_location,
    "bad_topic": _bad_topic,
    "future_timestamp": _future_timestamp,
    "bad_bundle": _bad_bundle,
}
