"""How a run ends: its exit code, its reason, and the diff when the cluster changed.

Exit codes of ``trimtab execute``: 0 every action done (or the dry run found every
precondition holding); 2 a user error or a cluster that cannot be reached; 3 a precondition no
longer holds (nothing of that batch started; the diff says what changed); 4 an action failed
in the cluster; 5 the run stopped itself (``abort`` in the control file, or past
``--abort-on``) and cancelled its moves in flight; 130 interrupted by SIGINT or SIGTERM (moves
in flight go on: ``--resume`` or ``--abort``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EXIT_ABORTED",
    "EXIT_CHANGED",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "Diff",
    "Outcome",
]

EXIT_OK = 0
EXIT_CHANGED = 3
EXIT_FAILED = 4
EXIT_ABORTED = 5
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class Diff:
    """One action whose precondition no longer holds: planned versus live."""

    action_id: str
    item: str
    planned: Mapping[str, Any]
    live: Mapping[str, Any]
    why: str

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.action_id,
            "item": self.item,
            "planned": dict(self.planned),
            "live": dict(self.live),
            "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """The end of a run."""

    exit: int
    reason: str
    diffs: tuple[Diff, ...] = ()
    failed: tuple[str, ...] = ()
