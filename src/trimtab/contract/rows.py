"""Check one row against its table: the plain-Python side of every rule of
:data:`~trimtab.contract.declarations.ROW_RULES` (the Spark side is ``pipeline/rules.py``)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trimtab.cluster import NodeHealth, NodeId, NodeState, Role, location_of
from trimtab.contract.cells import blank, number, split_bundle, text, timestamp, whole
from trimtab.contract.declarations import (
    EPOCH_MS_MAX,
    EPOCH_S_MAX,
    FUTURE_TOLERANCE_S,
    MS_HINT,
    PERCENT_HINT,
    REPLACEMENT,
    ROW_RULES,
    TOPIC_PATTERN,
    Kind,
    Row,
    RowError,
    Table,
    not_utf8,
)

__all__ = [
    "PYTHON_CHECKS",
    "check_row",
]

_TOPIC = re.compile(TOPIC_PATTERN)
_NUMBERS = (Kind.FRACTION, Kind.RATE)


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
    if cells.raw.get("_short"):
        raise RowError("malformed", "fewer fields than the header has columns")
    for column in cells.table.columns:
        value = cells.raw.get(column.name)
        if isinstance(value, str) and REPLACEMENT in value:
            raise RowError("malformed", not_utf8(column.name))


def _missing_key(cells: _Cells) -> None:
    for column in cells.table.columns:
        if column.key and column.required and blank(cells.raw.get(column.name)):
            raise RowError("missing_key", f"missing {column.name}")


def _bad_timestamp(cells: _Cells) -> None:
    for column in cells.table.of(Kind.TIMESTAMP):
        value = cells.raw.get(column.name)
        if not column.required and blank(value):
            cells.values[column.name] = None
            continue
        stamp = timestamp(value)
        if stamp is None:
            raise RowError("bad_timestamp", _bad_time_reason(column.name, value))
        cells.values[column.name] = stamp


def _bad_time_reason(name: str, value: Any) -> str:
    """Why ``value`` is no timestamp; one in epoch milliseconds says what to write."""
    seconds = number(value)
    if seconds is not None and EPOCH_S_MAX <= abs(seconds) < EPOCH_MS_MAX:
        instead = f"{seconds / 1000:.3f}".rstrip("0").rstrip(".")
        return MS_HINT.format(name=name, v=str(value).strip(), x=instead)
    return f"{name} {value!r} is neither epoch seconds nor ISO 8601"


def _wrong_type(cells: _Cells) -> None:
    for column in cells.table.of(Kind.COUNT, *_NUMBERS):
        value = cells.raw.get(column.name)
        if blank(value):
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
        if column.required and not column.key and blank(value):
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
            shown = _shown(raw)
            instead = _shown(round(value * PERCENT_HINT.factor, 12))
            raise RowError("out_of_range", PERCENT_HINT.format(column.name, shown, instead))
        if value is not None and value < 0:
            raise RowError("out_of_range", f"{column.name} {raw!r} is outside 0..1")


def _shown(value: Any) -> str:
    """A cell as a reason shows it: the text as given, a whole float without ``.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value).strip()


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


def _implausible(cells: _Cells) -> None:
    for column in cells.table.columns:
        value = cells.values.get(column.name)
        if value is None:
            continue
        if column.most is not None and value > column.most:
            raise RowError(
                "implausible",
                f"{column.name} {cells.raw.get(column.name)!r} is above {column.most:,}, the "
                "plausible most: check the unit",
            )
        if column.least is not None and column.hint is not None and 0 < value < column.least:
            instead = _shown(int(value * column.hint.factor))
            raise RowError("implausible", column.hint.format(column.name, _shown(value), instead))


def _free_above_total(cells: _Cells) -> None:
    free = cells.values.get("disk_free_bytes")
    total = cells.values.get("disk_total_bytes")
    if free is not None and total is not None and free > total:
        raise RowError(
            "free_above_total", f"disk_free_bytes {free} is above disk_total_bytes {total}"
        )


def _bad_state(cells: _Cells) -> None:
    for column in cells.table.of(Kind.STATE, Kind.HEALTH):
        parse = NodeState.parse if column.kind is Kind.STATE else NodeHealth.parse
        try:
            cells.values[column.name] = parse(cells.values[column.name] or "")
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
        if stamp is not None and stamp > cells.now + cells.tolerance:
            moment = datetime.fromtimestamp(stamp, UTC).isoformat()
            raise RowError("future_timestamp", f"{column.name} {moment} is in the future")


def _bad_bundle(cells: _Cells) -> None:
    for column in cells.table.of(Kind.BUNDLE):
        split_bundle(cells.values[column.name])


#: The Python check of each row rule (the Spark ones are in ``pipeline/ingest/``).
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
    "implausible": _implausible,
    "free_above_total": _free_above_total,
    "bad_state": _bad_state,
    "bad_role": _bad_role,
    "bad_node_id": _bad_node_id,
    "bad_location": _bad_location,
    "bad_topic": _bad_topic,
    "future_timestamp": _future_timestamp,
    "bad_bundle": _bad_bundle,
}
