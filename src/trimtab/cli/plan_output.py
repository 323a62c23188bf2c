"""``--plan FILE``: where ``trimtab rebalance`` and ``trimtab shed`` write the plan document.

One place for the two steps every planning command takes: refuse an unusable path before any
work (an existing file is never replaced: a plan someone approved must not change under its
digest), then write the document atomically and print its digest, the value ``trimtab execute
--approve`` takes.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from trimtab._format import plural
from trimtab.cli._common import err, owned_output, writable_output
from trimtab.cli.allocate import write_atomically
from trimtab.plans.document import PlanDocument

__all__ = ["PlanOption", "check_plan_output", "command_argv", "write_plan_document"]

#: ``--plan FILE``, as every planning command declares it.
PlanOption = Annotated[
    Path | None,
    typer.Option(
        "--plan", help="Write the plan document here (for trimtab execute).", dir_okay=False
    ),
]


def command_argv(ctx: typer.Context) -> list[str]:
    """The running command's arguments as a user would type them again (each option given
    with a value other than its default), for the plan's ``source.argv``: ``trimtab execute
    --replan`` re-runs it. Rebuilt from the parsed options, so it is the same however the
    command was started (a shell, a test, a script)."""
    words = [ctx.info_name or ""]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if value is None or value == param.default or value in ((), []):
            continue
        if param.param_type_name == "argument":
            words.append(_word(value))
        elif isinstance(value, bool):
            words.append(param.opts[0] if value else param.secondary_opts[0])
        elif isinstance(value, list | tuple):  # a repeatable option: once per value
            for item in value:
                words += [param.opts[0], _word(item)]
        else:
            words += [param.opts[0], _word(value)]
    return words


def _word(value: object) -> str:
    return str(value.value) if isinstance(value, Enum) else str(value)


def check_plan_output(path: Path | None) -> None:
    """Refuse a ``--plan`` path that exists or cannot be written (before planning)."""
    if path is not None:
        owned_output(path, marker=None)
        writable_output("--plan", path, directory=False, parents=False)


def write_plan_document(path: Path, document: PlanDocument) -> None:
    """Write ``document`` to ``path`` and say its digest on stderr."""
    write_atomically(path, document.dumps())
    err.print(
        f"wrote the plan to {path}: {plural(len(document.actions), 'action')}, "
        f"digest {document.digest}",
        highlight=False,
        soft_wrap=True,
    )
