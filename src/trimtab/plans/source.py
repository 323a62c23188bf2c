"""Where a plan came from: the command line (secrets redacted), the inputs and their hashes.

Why: a reviewer approving a plan must see from what it was computed, and ``trimtab execute
--replan`` re-runs exactly that command. Input files are hashed (SHA-256) so a plan can be
matched to the files it read; directories and addresses are named only.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trimtab.config.secrets import redact_argv

__all__ = ["created_now", "plan_source"]

_CHUNK = 1 << 20


def created_now() -> str:
    """The time a plan is written, ISO 8601 in UTC to the second."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash(path: Path) -> str | None:
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def plan_source(
    command: str,
    inputs: Mapping[str, Path | str | None],
    settings: Mapping[str, Any],
    argv: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The ``source`` object of a plan: ``command``, ``argv`` (redacted) and the directory it
    ran in (``cwd``: relative paths in ``argv`` are relative to it), each given input
    (a file with its ``sha256``; a directory or an address as given) and the settings that
    shaped the plan (mode, strategy, seed...)."""
    given = {}
    for name, value in inputs.items():
        if value is None:
            continue
        if isinstance(value, Path):
            given[name] = {"path": str(value), "sha256": _hash(value)}
        else:
            given[name] = {"address": value}
    args = list(sys.argv[1:] if argv is None else argv)
    return {
        "command": command,
        "argv": redact_argv(args),
        "cwd": str(Path.cwd()),
        "inputs": given,
        "settings": dict(settings),
    }
