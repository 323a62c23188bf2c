"""The ``trimtab`` command: thin wrappers that read files, call the engines and print.

One module per command; importing it registers the command on the shared Typer ``app``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import typer

from trimtab.cli._common import app

__all__ = ["app", "main"]

#: The command modules, imported here for their registration side effect.
_COMMANDS = (
    "agent",
    "allocate",
    "bookieinfo",
    "config",
    "pipeline",
    "place",
    "report",
    "shed",
    "simulate",
    "sweep",
    "topology",
)
for _module in _COMMANDS:
    importlib.import_module(f"{__name__}.{_module}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``trimtab`` script."""
    command: Callable[..., Any] = typer.main.get_command(app)
    command(args=argv, prog_name="trimtab")
