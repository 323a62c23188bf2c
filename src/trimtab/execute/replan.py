"""``--replan``: plan again with the command that made the plan, on the cluster as it is now.

The plan records its planning command line (``source.argv``, secrets redacted) and where it
ran (``source.cwd``, so relative input paths still resolve). It is run again with ``--plan``
pointing at a new file; for Kafka and Redpanda, when the target can
give the live assignment (a ``current_assignment()`` method returning the reassignment JSON
``kafka-reassign-partitions.sh --generate`` prints), that replaces the ``--assignment`` file.
The new plan is never run here: it is printed with its own digest and needs its own approval.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from trimtab.config.secrets import REDACTED
from trimtab.errors import TrimtabError
from trimtab.plans.document import PlanDocument, load_plan
from trimtab.plans.target import Target

__all__ = ["replan", "replan_argv"]

_ASSIGNMENT = ("--assignment", "-a")


def replan_argv(plan: PlanDocument, out: Path, assignment: Path | None = None) -> list[str]:
    """The planning command of ``plan`` writing ``out`` (and reading ``assignment``)."""
    argv = [str(a) for a in plan.source.get("argv") or []]
    if not argv:
        raise TrimtabError(
            "the plan does not record its planning command (source.argv): plan again by hand"
        )
    if any(REDACTED in a for a in argv):
        raise TrimtabError(
            "the planning command had a secret option (redacted in the plan): plan again by hand"
        )
    if argv[0].endswith("trimtab"):
        argv = argv[1:]
    argv = _replace(argv, ("--plan",), str(out))
    if assignment is not None:
        argv = _replace(argv, _ASSIGNMENT, str(assignment))
    return argv


def _replace(argv: Sequence[str], names: Sequence[str], value: str) -> list[str]:
    out: list[str] = []
    skip = False
    found = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in names:
            found = True
            out += [names[0], value]
            skip = "=" not in arg
            continue
        out.append(arg)
    return out if found else [*out, names[0], value]


def replan(
    plan: PlanDocument, target: Target, out: Path, *, timeout_s: float = 3600
) -> PlanDocument:
    """Run the planning command again; the new plan written to ``out``."""
    assignment = None
    current = getattr(target, "current_assignment", None)
    if plan.system in ("kafka", "redpanda") and callable(current):
        assignment = out.with_name(f"{out.stem}.assignment.json")
        assignment.write_text(json.dumps(current()) + "\n", encoding="utf-8")
    argv = replan_argv(plan, out, assignment)
    code = f"from trimtab.cli import main; main({argv!r})"
    where = plan.source.get("cwd")
    cwd = Path(where) if isinstance(where, str) and Path(where).is_dir() else None
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s, cwd=cwd
        )
    except subprocess.TimeoutExpired:
        raise TrimtabError(f"--replan: the planning command took over {timeout_s:g}s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise TrimtabError(f"--replan: the planning command failed: {last}")
    return load_plan(out)
