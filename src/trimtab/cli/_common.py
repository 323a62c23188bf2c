"""Shared pieces of the ``trimtab`` command: the app, consoles, error handling, common options,
and the inventory helpers several commands use (choosing a cluster, reporting rejected rows).

Every command prints tables for people and, with ``--json``, one JSON document on stdout for
machines. Work that can take more than a few seconds shows :func:`progress_bar` on stderr (off
with ``--json``). Errors a user can fix are printed as one ``error:`` line and exit with status 2.
Each command lives in its own module of this package and registers itself on :data:`app`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from trimtab import __version__
from trimtab._format import as_text
from trimtab.cluster import ClusterState
from trimtab.config import Config
from trimtab.config.loader import read_config
from trimtab.config.secrets import scrub
from trimtab.config.settings import nearest
from trimtab.contract import RejectedRow
from trimtab.errors import TrimtabError
from trimtab.readers.inventory import Inventory

__all__ = [
    "ClusterOption",
    "ConfOption",
    "ConfigOption",
    "InventoryOption",
    "JsonFlag",
    "MasterOption",
    "app",
    "bounded",
    "dominant_reason",
    "err",
    "figures_table",
    "load_config",
    "one_cluster",
    "one_of",
    "out",
    "owned_output",
    "print_json",
    "print_rejected",
    "print_warnings",
    "printable",
    "progress_bar",
    "report_input_problems",
    "select_clusters",
    "show_error",
    "user_errors",
    "writable_output",
]

app = typer.Typer(
    name="trimtab",
    help="Placement and load balancing for mixed-hardware log-storage clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document for machines.")]
# The Spark commands (pipeline run, sweep): which master, and any Spark setting.
MasterOption = Annotated[
    str | None,
    typer.Option(
        "--master",
        help="Spark master URL; default TRIMTAB_SPARK_MASTER, spark-submit's, or local[*].",
    ),
]
ConfOption = Annotated[
    list[str] | None, typer.Option("--conf", help="Spark setting key=value; repeatable.")
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="A .toml or Java .properties file (bk_server.conf, broker.conf keys accepted).",
        dir_okay=False,
    ),
]


InventoryOption = Annotated[
    Path, typer.Option("--inventory", "-i", help="Inventory file or directory (nodes table).")
]
ClusterOption = Annotated[
    str | None,
    typer.Option("--cluster", help="The cluster to use when the inventory has several."),
]


def _show_version(value: bool) -> None:
    if value:
        out.print(f"trimtab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            help="Let libraries' warnings through (Spark with Java stack traces, kazoo, gRPC).",
        ),
    ] = False,
) -> None:
    """trimtab decides where data and load go in clusters whose machines are not alike."""
    if verbose:
        # Read by the Spark session (its log4j2 file) and by the commands' logging set-up.
        os.environ["TRIMTAB_VERBOSE"] = "1"
        logging.getLogger("kazoo").setLevel(logging.WARNING)


#: Control characters (C0, DEL, C1) in echoed input: shown escaped, never sent to the terminal.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: object) -> str:
    """``text`` safe to echo: control characters as ``\\xNN`` escapes (a binary file cannot
    move the cursor or ring the bell) and Rich markup escaped (``[red]`` in a file stays text)."""
    shown = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))
    return escape(shown)


def show_error(message: object) -> None:
    """The one ``error:`` line of a user error, on stderr (the exit status is the caller's)."""
    shown = printable(scrub(str(message)))  # no secret value on the terminal (issue 41)
    err.print(f"[bold red]error:[/] {shown}", highlight=False, soft_wrap=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn trimtab's own errors, and an option refused while the command runs, into one
    readable line and exit status 2 (see :func:`trimtab.cli.main` for the rest of the contract)."""
    try:
        yield
    except TrimtabError as exc:
        show_error(exc)
        raise typer.Exit(2) from None
    except typer.BadParameter as exc:
        show_error(exc.format_message())
        raise typer.Exit(2) from None


def bounded(option: str, value: float, low: float, high: float, unit: str = "") -> None:
    """Refuse an option's number outside ``low..high`` (NaN and infinities included): every
    number a user gives has a finite, physically plausible range."""
    if not (math.isfinite(value) and low <= value <= high):
        what = f" {unit}" if unit else ""
        raise TrimtabError(f"{option} must be a number{what} from {low:g} to {high:g}, got {value}")


def one_of(option: str, value: str, allowed: Iterable[str], *, what: str = "") -> None:
    """Refuse a value outside ``allowed``, naming the nearest good one for a typo."""
    names = [str(a) for a in allowed]
    if value in names:
        return
    hint = nearest(value, names)
    tip = f"did you mean {hint!r}? " if hint else ""
    kind = f" is not {what}" if what else " is unknown"
    raise TrimtabError(f"{option} {value!r}{kind}: {tip}use one of {', '.join(names)}")


def owned_output(output: str | Path, *, marker: str | None) -> None:
    """Refuse an ``--output`` the command would wrongly replace. A command writing a directory
    (``marker``: the file every one of its outputs holds) replaces only a directory it wrote
    before, or an empty one; a command writing one file (``marker`` None) never replaces a file.
    Only local paths are checked (``hdfs://``, ``s3a://``... are the job's own business)."""
    from trimtab.pipeline.fs import local_directory

    local = local_directory(str(output))
    if local is None:
        return
    path = Path(local)
    if marker is None:
        if path.exists():
            raise TrimtabError(f"--output {path} already exists: remove it or give a new file name")
        return
    if path.exists() and not path.is_dir():
        raise TrimtabError(
            f"--output {path} is an existing file: give a directory (new, empty, or an output "
            "this command wrote before)"
        )
    if path.is_dir() and any(path.iterdir()) and not (path / marker).exists():
        raise TrimtabError(
            f"--output {path} is a directory trimtab did not write (it has no {marker}): give "
            "a new or empty directory, or an output this command wrote before (it is replaced)"
        )


def writable_output(
    option: str, output: str | Path, *, directory: bool, parents: bool, replaced: bool = False
) -> None:
    """Refuse an output the command could not write, before any work starts: a run of minutes
    (or a Spark start) must not end in a crash at its last step (issue 43).

    ``directory``: the command writes a directory there (else one file, written beside it and
    renamed into place); ``parents``: it creates missing parent directories (else the parent
    must exist); ``replaced``: it replaces the whole directory from a sibling, so the parent
    must be writable too. Writability is tried (one empty file made and removed), not read from
    the mode bits, so a read-only file system and root's view count as well. Only local paths
    are checked (``hdfs://``, ``s3a://``... are the job's own business)."""
    from trimtab.pipeline.fs import local_directory

    local = local_directory(str(output))
    if local is None:
        return
    path = Path(local)
    kind = "a directory" if directory else "a file"
    if path.exists():
        if path.is_dir() != directory:
            found = "a directory" if path.is_dir() else "a file"
            raise TrimtabError(f"{option} {path} is {found}, not {kind}: give {kind}")
        if not directory and not os.access(path, os.W_OK):
            raise TrimtabError(f"{option} {path}: cannot write it: permission denied")
        inside = [path] if directory else []
        for where in [*inside, *([path.parent] if replaced or not directory else [])]:
            _try_writing(option, path, where)
        return
    ancestor = path.parent
    while parents and not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.exists():
        raise TrimtabError(f"{option} {path}: the directory {ancestor} does not exist")
    if not ancestor.is_dir():
        raise TrimtabError(f"{option} {path}: {ancestor} is a file, not a directory")
    _try_writing(option, path, ancestor)


def _try_writing(option: str, path: Path, directory: Path) -> None:
    """Create and remove one empty file in ``directory``, naming the reason it fails."""
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".trimtab-probe-")
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise TrimtabError(f"{option} {path}: cannot write in {directory}: {reason}") from None
    os.close(fd)
    Path(probe).unlink(missing_ok=True)


def load_config(path: Path | None) -> Config:
    if path is None:
        return Config()
    return read_config(path).config


def configured_strategy(path: Path | None) -> str | None:
    """The shedder a config file names (``loadBalancerLoadSheddingStrategy``), else None: the
    shedding commands then recommend ``balanced``."""
    if path is None:
        return None
    loaded = read_config(path)
    return str(loaded.config.shedding.strategy) if "shedding.strategy" in loaded.explicit else None


def print_json(doc: Any) -> None:
    """``doc`` as JSON on stdout; a value JSON has no type for (a Parquet row's datetime in a
    rejected row) is written as its text."""
    sys.stdout.write(json.dumps(doc, indent=2, default=as_text) + "\n")


def progress_bar(*columns: str | ProgressColumn, quiet: bool = False) -> Progress:
    """The progress display of every long command: on stderr, so stdout keeps the table or the
    one ``--json`` document; erased when done; drawn only on a terminal; off with ``quiet``
    (pass ``as_json``). Default columns: spinner, description, bar, percentage (blank for a
    task without a total), elapsed time."""
    shown = columns or (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
    )
    # Off the terminal rich would still end the display with an empty line on stderr, in
    # front of an error line or after a successful run.
    return Progress(*shown, console=err, transient=True, disable=quiet or not err.is_terminal)


def figures_table(columns: Sequence[str], *, text: Collection[str], **options: Any) -> Table:
    """A table of figures: every column right-aligned but the ``text`` ones; ``options`` go to
    :class:`rich.table.Table` (``title``...)."""
    table = Table(**options)
    for column in columns:
        table.add_column(column, justify="left" if column in text else "right")
    return table


def select_clusters(inv: Inventory, name: str | None) -> list[ClusterState]:
    """Every cluster of the inventory, or only the one ``--cluster`` names (which must exist).
    An inventory none of whose rows was usable is one error naming the dominant reason with
    an example, never an empty cluster."""
    if not inv.clusters and inv.rejected:
        raise TrimtabError(f"no usable inventory row: {dominant_reason(inv.rejected)}")
    if name is None:
        return list(inv.clusters.values())
    if name not in inv.clusters:
        known = ", ".join(inv.clusters) or "none"
        raise TrimtabError(f"no cluster {name!r} in the inventory; clusters: {known}")
    return [inv.clusters[name]]


def one_cluster(inv: Inventory, name: str | None) -> ClusterState:
    """The one cluster a command works on: the named one, or the inventory's only one."""
    clusters = select_clusters(inv, name)
    if len(clusters) == 1:
        return clusters[0]
    names = ", ".join(c.name for c in clusters) or "none"
    raise TrimtabError(f"the inventory holds clusters {names}: choose one with --cluster")


def dominant_reason(rejected: Sequence[RejectedRow]) -> str:
    """``all N rows were rejected, M of them as RULE (e.g. f:3: reason)``: the rule most rows
    broke, with one example."""
    by_rule = Counter(row.rule or row.reason for row in rejected)
    rule, count = by_rule.most_common(1)[0]
    example = next(row for row in rejected if (row.rule or row.reason) == rule)
    return (
        f"all {len(rejected)} row(s) were rejected, {count} of them as {rule} "
        f"(e.g. {printable(example)})"
    )


def print_warnings(warnings: Iterable[str]) -> None:
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {printable(scrub(warning))}", highlight=False)


def print_rejected(rejected: Iterable[RejectedRow], rows_read: int, table: str) -> None:
    """The rows of one input table that were refused, with where and why, on stderr."""
    rows = list(rejected)
    if not rows:
        return
    shown = Table(title=f"{len(rows)} of {rows_read} {table} rows rejected")
    shown.add_column("where")
    shown.add_column("reason")
    for row in rows:
        shown.add_row(printable(f"{row.source}:{row.line}"), printable(row.reason))
    err.print(shown)


def report_input_problems(inv: Inventory) -> None:
    """The inventory's warnings and rejected rows, on stderr after a command's own output."""
    print_warnings(inv.warnings)
    print_rejected(inv.rejected, inv.rows_read, "inventory")
