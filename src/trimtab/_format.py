"""Small formatting helpers shared by the CLI, the report and the documents trimtab prints."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trimtab.contract import RejectedRow

__all__ = ["as_text", "human_bps", "human_bytes", "rejected_json"]

_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")
_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_bytes(n: int | float | None, *, binary: bool = False) -> str:
    """Base-1000 units, as disks are sold and ``bookkeeper shell bookieinfo`` prints them;
    ``binary=True`` gives base-1024 units, as memory is sized.

    >>> human_bytes(4_000_000_000_000), human_bytes(2**35, binary=True), human_bytes(None)
    ('4.00 TB', '32.00 GiB', '-')
    """
    if n is None:
        return "-"
    value, step = float(n), (1024 if binary else 1000)
    units = _BINARY_UNITS if binary else _UNITS
    for unit in units:
        if abs(value) < step or unit == units[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= step
    raise AssertionError("unreachable")  # pragma: no cover


def human_bps(n: int | float) -> str:
    """Bits per second in NIC units: ``25 Gb/s``."""
    value = float(n)
    for unit in ("b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s"):
        if abs(value) < 1000 or unit == "Tb/s":
            return f"{value:g} {unit}"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def plural(n: int, word: str) -> str:
    """``plural(1, "region")`` -> ``'1 region'``; ``plural(2, "rack")`` -> ``'2 racks'``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def as_text(value: Any) -> str:
    """A value JSON has no type for (a Parquet row's datetime) as its text."""
    isoformat = getattr(value, "isoformat", None)
    return str(isoformat()) if callable(isoformat) else str(value)


def rejected_json(row: RejectedRow) -> dict[str, Any]:
    """A rejected row as every ``--json`` document and JSON line lists it."""
    values = {str(k): _json_value(v) for k, v in row.row.items()}
    return {"source": row.source, "line": row.line, "reason": row.reason, "row": values}


def _json_value(value: Any) -> Any:
    """A rejected cell as JSON can hold it: a Parquet timestamp or NaN becomes its text."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return as_text(value)
