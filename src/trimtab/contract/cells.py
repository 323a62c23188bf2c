"""Cell parsers shared by every reader: text, exact whole numbers, numbers, timestamps, and
bundle names as pulsar-admin takes them."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

from trimtab.contract.declarations import BUNDLE_PATTERN, EPOCH_S_MAX, LONG_MAX, RowError

__all__ = [
    "blank",
    "number",
    "split_bundle",
    "text",
    "timestamp",
    "whole",
]

_BUNDLE = re.compile(BUNDLE_PATTERN)


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


def blank(value: Any) -> bool:
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
    """UTC epoch seconds from epoch seconds, ISO 8601 text or a datetime; None if neither
    (epoch seconds from year 5138 on, :data:`EPOCH_S_MAX`, are none either)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, bool):
        return None
    seconds = number(value)
    if seconds is not None:
        return seconds if math.isfinite(seconds) and abs(seconds) < EPOCH_S_MAX else None
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
