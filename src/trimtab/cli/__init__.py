"""The ``trimtab`` command: thin wrappers that read files, call the engines and print.

One module per command; importing it registers the command on the shared Typer ``app``.

The error contract is kept here, in :func:`main`, for every command: a user error (a
:class:`~trimtab.errors.TrimtabError`, or an option the parser refuses) is one ``error:`` line
on stderr and exit status 2; a bug is one line naming the failure and the file holding its full
report, and exit status 1, never a bare traceback.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Sequence

# gRPC's core logs each failed TLS handshake on stderr at info level, before any of our code can
# say it in one line; only its errors reach the user (GRPC_VERBOSITY set by the user wins). It
# must be set before gRPC is first imported, which the command modules below do.
# ``trimtab --verbose CMD`` lets gRPC's own warnings through too (its global options come before
# the command's name).
os.environ.setdefault(
    "GRPC_VERBOSITY",
    "INFO"
    if "--verbose"
    in sys.argv[
        1 : next((i for i, a in enumerate(sys.argv) if i and not a.startswith("-")), len(sys.argv))
    ]
    else "ERROR",
)

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

from trimtab.cli._common import app, err, printable, show_error
from trimtab.cli._crash import write_crash_report
from trimtab.cli._spark import Interrupted
from trimtab.config.secrets import scrub
from trimtab.errors import TrimtabError

__all__ = ["app", "main"]

#: The command modules, imported here for their registration side effect.
_COMMANDS = (
    "agent",
    "allocate",
    "bookieinfo",
    "config",
    "execute",
    "inventory",
    "pipeline",
    "place",
    "rebalance",
    "report",
    "shed",
    "simulate",
    "sweep",
    "topology",
)
for _module in _COMMANDS:
    importlib.import_module(f"{__name__}.{_module}")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``trimtab`` script: run the command and exit 0, 2 or 1 (see above)."""
    args = list(argv) if argv is not None else None
    raise SystemExit(_run(args))


class _WarningLines(logging.Handler):
    """trimtab's own log records (a resolver that fell back to the default rack, a registry
    entry skipped...) as the commands' other warnings: one ``warning:`` line on stderr each,
    where Python's last-resort handler printed the bare message."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text = f"{text}: {type(exc).__name__}: {exc}"
        shown = printable(scrub(text))  # no secret value in a log line (issue 41)
        err.print(f"[yellow]warning:[/] {shown}", highlight=False, soft_wrap=True)


def _run(args: list[str] | None) -> int:
    # Client libraries' retry chatter (kazoo logs each failed connection) is not for users:
    # the command says what failed in its own error line.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    ours = logging.getLogger("trimtab")
    if not any(isinstance(h, _WarningLines) for h in ours.handlers):
        ours.addHandler(_WarningLines())
    command = typer.main.get_command(app)
    try:
        status = command.main(args=args, prog_name="trimtab", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        err.print(printable(exc.format_message()), highlight=False)
        return 2
    except UsageError as exc:
        where = f"; see '{exc.ctx.command_path} --help'" if exc.ctx is not None else ""
        show_error(f"{exc.format_message().rstrip('.')}{where}")
        return 2
    except ClickException as exc:
        show_error(exc.format_message())
        return exc.exit_code
    except Interrupted as exc:  # Ctrl-C during a Spark command: a stop, not a bug
        err.print(f"interrupted: {exc}; nothing was published", highlight=False)
        return 130
    except typer.Abort:  # end of input at a prompt
        err.print("aborted", highlight=False)
        return 1
    except TrimtabError as exc:  # raised outside a command's user_errors block
        show_error(exc)
        return 2
    except Exception as exc:
        if (reason := _spark_failure(exc)) is not None:
            return _spark_failed(reason, exc, args)
        return _crashed(exc, args)
    return status if isinstance(status, int) else 0


def _spark_failure(exc: BaseException) -> str | None:
    """Spark's own reason for a failure of the JVM or of a job (the first line of the Java
    exception, without its stack trace), or None when ``exc`` is not Spark's."""
    if not type(exc).__module__.startswith(("py4j", "pyspark")):
        return None
    java = getattr(exc, "java_exception", None)
    text = str(java) if java is not None else str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("An error occurred while calling")]
    return (lines[0] if lines else type(exc).__name__)[:500]


def _spark_failed(reason: str, exc: Exception, args: list[str] | None) -> int:
    """One line for a Spark failure: Spark's reason and where the full report is (issue 43:
    never a page of Java stack traces); exit status 1."""
    path, _ = write_crash_report(exc, sys.argv[1:] if args is None else args)
    where = f"; the full report is in {path}" if path else ""
    show_error(f"Spark failed: {reason}{where} (trimtab --verbose also shows Spark's log)")
    return 1


def _crashed(exc: Exception, args: list[str] | None) -> int:
    path, summary = write_crash_report(exc, sys.argv[1:] if args is None else args)
    where = f"the full report is in {path}" if path else "no report could be written"
    err.print(
        f"[bold red]internal error[/] (a bug in trimtab, not in your input): "
        f"{printable(summary)}; {where}: please attach it to an issue",
        highlight=False,
        soft_wrap=True,
    )
    return 1
