"""Running a command as a user types it, and the error contract every run must keep.

The contract (docs/errors.md, "The error contract"): exit status 0 or 2; no traceback
and no uncaught exception; on exit 2 exactly one ``error:`` line on stderr and nothing written
to the output path; no raw control character of the input echoed to the terminal.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from hypothesis import HealthCheck, Phase, settings
from typer.testing import CliRunner, Result

from tests.robustness.strategies import FileCase

__all__ = [
    "CAMPAIGN",
    "Run",
    "campaign_settings",
    "check_contract",
    "dead_ports",
    "fresh_dir",
    "invoke",
    "violations",
    "write_case",
]

#: Examples per campaign test; ``TRIMTAB_CAMPAIGN_EXAMPLES`` raises it for a longer hunt.
EXAMPLES = int(os.environ.get("TRIMTAB_CAMPAIGN_EXAMPLES", "40"))
#: Longest a command may take on a campaign input before the run counts as a hang: a backstop
#: so a hang fails the campaign instead of stopping it (inputs known to hang are left out).
WATCHDOG_S = 60

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def campaign_settings(examples: int = EXAMPLES) -> settings:
    """Fixed examples (derandomized: the same every run, so no example database, in CI or
    not), no deadline (commands do I/O), no shrinking: a failing example is reported as found,
    its :class:`~tests.robustness.strategies.FileCase` naming its faults, and a test that
    fails costs no more than one that passes."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=False,
    )


CAMPAIGN = campaign_settings()


@dataclass(frozen=True)
class Run:
    """One command run: what was typed, and what came back."""

    args: tuple[str, ...]
    result: Result

    @property
    def stderr(self) -> str:
        return self.result.stderr

    def describe(self) -> str:
        exc = self.result.exception
        shown = "" if exc is None or isinstance(exc, SystemExit) else f" raised {exc!r}"
        return (
            f"trimtab {' '.join(self.args)}\n  exit {self.result.exit_code}{shown}\n"
            f"  stderr: {self.stderr[-1500:]!r}"
        )


class HangError(Exception):
    """A command ran longer than :data:`WATCHDOG_S` on one campaign input."""


@contextmanager
def _watchdog(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise HangError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def invoke(args: Sequence[str], *, watchdog: int = WATCHDOG_S) -> Run:
    """Run ``trimtab ARGS`` in-process as the ``trimtab`` script does (:func:`trimtab.cli.main`,
    where the error contract is kept), its streams captured by typer's CliRunner."""
    from trimtab.cli import main

    runner = CliRunner()
    exit_code, exception = 0, None
    with _watchdog(watchdog), runner.isolation(env={"COLUMNS": "120"}) as streams:
        try:
            main(list(args))
        except SystemExit as exc:
            exit_code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except Exception as exc:  # what a user would see as a traceback
            exit_code, exception = 1, exc
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            stdout, stderr, output = (stream.getvalue() for stream in streams)
    result = Result(
        runner=runner,
        stdout_bytes=stdout,
        stderr_bytes=stderr,
        output_bytes=output,
        return_value=None,
        exit_code=exit_code,
        exception=exception,
    )
    return Run(tuple(args), result)


def violations(run: Run, *, outputs: Sequence[Path] = ()) -> list[str]:
    """The ways ``run`` broke the error contract, each a short class name (empty: kept it)."""
    result = run.result
    exc = result.exception
    found = []
    if exc is not None and not isinstance(exc, SystemExit):
        where = traceback.extract_tb(exc.__traceback__)[-1]
        found.append(f"crash {type(exc).__name__} at {Path(where.filename).name}:{where.lineno}")
    elif result.exit_code not in (0, 2):
        found.append(f"exit {result.exit_code}")
    if "Traceback" in run.stderr:
        found.append("traceback on stderr")
    if result.exit_code == 2:
        errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
        if len(errors) != 1:
            usage = "Usage:" in run.stderr
            found.append("usage box, no error: line" if usage else f"{len(errors)} error: lines")
        if any(not line.strip() for line in run.stderr.splitlines()):
            found.append("blank line on stderr")  # a progress display ended off the terminal
        if any(p.exists() for p in outputs):
            found.append("output written on exit 2")
    shown = _CONTROL.search(result.stdout + run.stderr)
    if shown is not None:
        found.append(f"raw control character {shown.group()!r} echoed")
    return found


def check_contract(run: Run, *, outputs: Sequence[Path] = ()) -> None:
    """Fail unless ``run`` kept the error contract; ``outputs`` must not exist after exit 2.

    With ``TRIMTAB_CAMPAIGN_RECORD=FILE`` a broken contract is appended to FILE as one JSON
    line instead (command, violations, input), so one run lists every class it finds.
    """
    found = violations(run, outputs=outputs)
    record = os.environ.get("TRIMTAB_CAMPAIGN_RECORD")
    if found and record:
        entry = {"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0], "found": found}
        entry["run"] = run.describe()
        with Path(record).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        return
    assert not found, f"{'; '.join(found)}: {run.describe()}"


@contextmanager
def fresh_dir() -> Iterator[Path]:
    """A new directory per example (a function-scoped ``tmp_path`` is shared by all of them)."""
    with tempfile.TemporaryDirectory(prefix="campaign-") as name:
        yield Path(name)


def write_case(directory: Path, case: FileCase) -> Path:
    path = directory / case.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(case.data)
    return path


def dead_ports(count: int) -> list[int]:
    """Loopback ports nobody listens on (bound once to learn a free port, then closed)."""
    ports = []
    for _ in range(count):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    return ports
