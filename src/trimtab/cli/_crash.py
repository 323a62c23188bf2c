"""What the ``trimtab`` command does when trimtab itself fails: a bug is never shown as a bare
traceback. The traceback goes to a report file in the system's temporary directory, and the
terminal gets one line naming the failure and the file, with exit status 1.

The report never holds a secret (issue 41): the command line is redacted by name (every option
and ``key=value`` that holds a secret, :mod:`trimtab.config.secrets`), and every secret value
read in this process is scrubbed from the whole text, the traceback's messages included."""

from __future__ import annotations

import platform
import tempfile
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from trimtab import __version__
from trimtab.config.secrets import redact_argv, scrub

__all__ = ["write_crash_report"]

#: The longest exception message echoed on the terminal (the report keeps it whole).
_SHOWN = 200


def write_crash_report(exc: BaseException, argv: Sequence[str]) -> tuple[Path | None, str]:
    """Write ``exc``'s full report; return its path (None if it could not be written) and a
    one-line summary of the failure."""
    message = " ".join(scrub(str(exc)).split())
    if len(message) > _SHOWN:
        message = message[: _SHOWN - 1] + "…"
    summary = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    now = datetime.now(UTC)
    text = (
        f"trimtab {__version__} on Python {platform.python_version()} ({platform.platform()})\n"
        f"time: {now.isoformat()}\n"
        f"command: trimtab {' '.join(redact_argv(argv))}\n\n"
        + "".join(traceback.format_exception(exc))
    )
    text = scrub(text)
    name = f"trimtab-crash-{now:%Y%m%dT%H%M%S}-{now.microsecond:06d}.txt"
    path = Path(tempfile.gettempdir()) / name
    try:
        path.write_text(text, encoding="utf-8")
    except OSError:
        return None, summary
    return path, summary
