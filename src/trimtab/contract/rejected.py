"""A refused input row, whole, with its origin, its reason and the rule it broke.

Every reader (the table files, load reports, the registry file) and the snapshot builders
answer with these, so a bad row is reported the same way wherever it was refused and never
dropped (``rows read = accepted + rejected``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RejectedRow"]


@dataclass(frozen=True, slots=True)
class RejectedRow:
    """An input row that was not accepted, whole, with where it came from, why and the rule
    of :mod:`trimtab.contract` it broke (empty for rules of a reader's own)."""

    source: str
    line: int
    reason: str
    row: Mapping[str, Any]
    rule: str = ""

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"
