"""The key columns a table's rules group by, and the one way a rule refuses rows.

Why a module of its own
    Every rule that needs more than one row (membership, repeats, the summary's screen)
    reads a table's key the same way: its time column apart from the others. And every such
    rule refuses a row the same way, its raw row rendered from the typed values. Both are
    written once, below those rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from trimtab.pipeline.rules import Sql, q
from trimtab.pipeline.schemas import InputTable

__all__ = ["all_present", "other_keys", "refuse", "stamp_columns", "typed_json"]


def stamp_columns(table: InputTable) -> list[str]:
    return [c.name for c in table.columns if c.kind == "timestamp"]


def other_keys(table: InputTable) -> list[str]:
    """The key columns besides the time: what the summary groups by."""
    return [k for k in table.keys if k not in stamp_columns(table)]


def all_present(columns: Sequence[str]) -> Sql:
    """True where none of ``columns`` is null."""
    return "(" + " AND ".join(["true", *(f"{q(c)} IS NOT NULL" for c in columns)]) + ")"


def refuse(frame: DataFrame, flag: str, rule: Sql, reason: Sql, table: InputTable) -> DataFrame:
    """``frame`` with ``rule`` and ``reason`` set where column ``flag`` is true, and the raw
    row rendered from the typed values (a row refused by a rule needing other rows parsed
    cleanly). Elsewhere the verdict stays; all three are computed from the frame as it was."""
    hit = q(flag)
    changed = {
        "_raw": f"CASE WHEN {hit} THEN {typed_json(table)} ELSE `_raw` END",
        "_reason": f"CASE WHEN {hit} THEN {reason} ELSE `_reason` END",
        "_rule": f"CASE WHEN {hit} THEN {rule} ELSE `_rule` END",
    }
    return frame.selectExpr(
        *(f"{changed[c]} AS {q(c)}" if c in changed else q(c) for c in frame.columns)
    )


def typed_json(table: InputTable) -> Sql:
    return f"to_json(struct({', '.join(q(c.name) for c in table.columns)}))"
