"""``trimtab inventory``: the ``nodes`` table from what a live cluster publishes (issue 42).

Each source gives what it knows (a Pulsar load report its limits, Kafka's DescribeLogDirs and
BookKeeper's GET_BOOKIE_INFO the disks, the registry which bookies are read-only, ``/bookies``
the racks); ``--defaults`` gives the rest. The contract's ``nodes`` table has no place for
where a value came from, so the summary and ``--json`` say it per cell: ``measured`` or
``given``, and what is still missing with the reason a source gave none.

Sources (exactly one): ``--zk`` (BookKeeper's registry and Pulsar's ``/loadbalance/brokers``:
:mod:`~trimtab.cli._inventory_zk`), ``--pulsar-admin`` (:mod:`~trimtab.cli._inventory_admin`),
``--load-reports`` (saved Pulsar reports), ``--bootstrap-servers`` (Kafka, Redpanda).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from trimtab._format import human_bps, human_bytes, plural
from trimtab.cli._common import (
    ConfigOption,
    JsonFlag,
    app,
    err,
    load_config,
    one_of,
    out,
    print_json,
    printable,
    progress_bar,
    user_errors,
    writable_output,
)
from trimtab.cli._execute_options import InsecureOption, PulsarTokenOption
from trimtab.cli._inventory_admin import AdminOptions, admin_inventory
from trimtab.cli._inventory_zk import Found, System, ZkOptions, zk_inventory
from trimtab.cli._resolver_options import PulsarRacksOption, ResolverScriptOption
from trimtab.cli._tls import TlsCaOption, TlsCertOption, TlsKeyOption
from trimtab.errors import TrimtabError
from trimtab.systems.inventory_rows import (
    COLUMNS,
    NodeRow,
    merge_defaults,
    read_defaults,
    to_csv,
)

__all__ = ["inventory"]

_SOURCES = ("--zk", "--pulsar-admin", "--load-reports", "--bootstrap-servers")


@app.command()
def inventory(
    zk: Annotated[
        str | None,
        typer.Option(
            "--zk",
            metavar="HOST:PORT[/chroot]",
            help="ZooKeeper: BookKeeper's registry and Pulsar's /loadbalance/brokers.",
        ),
    ] = None,
    ledgers_root: Annotated[
        str | None,
        typer.Option("--ledgers-root", help="BookKeeper registry root (zkLedgersRootPath)."),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option("--system", help="With --zk: bookkeeper, pulsar or both (default: found)."),
    ] = None,
    pulsar_admin: Annotated[
        str | None, typer.Option("--pulsar-admin", metavar="URL", help="Pulsar admin REST URL.")
    ] = None,
    load_reports: Annotated[
        Path | None,
        typer.Option("--load-reports", help="Directory of Pulsar load reports (one per broker)."),
    ] = None,
    bootstrap_servers: Annotated[
        str | None,
        typer.Option("--bootstrap-servers", metavar="HOST:PORT", help="Kafka or Redpanda brokers."),
    ] = None,
    command_config: Annotated[
        Path | None,
        typer.Option("--command-config", help="Kafka client properties (SASL/SSL)."),
    ] = None,
    cluster: Annotated[
        str | None, typer.Option("--cluster", help="Cluster name of the rows.")
    ] = None,
    defaults: Annotated[
        Path | None,
        typer.Option("--defaults", help="CSV of values no API publishes (empty node: every node)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the CSV here (else stdout).")
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per call.")] = 10.0,
    tls_ca: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
    pulsar_token_file: PulsarTokenOption = None,
    allow_insecure: InsecureOption = False,
    resolver_script: ResolverScriptOption = None,
    pulsar_racks: PulsarRacksOption = None,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Write the inventory (the nodes table) from a live cluster and --defaults."""
    with user_errors():
        given = _one_source(zk, pulsar_admin, load_reports, bootstrap_servers)
        if system is not None:
            one_of("--system", system, [s.value for s in System])
            if given != "--zk":
                raise TrimtabError("--system chooses what --zk reads: give --zk HOST:PORT too")
        if output is not None:
            writable_output("--output", output, directory=False, parents=False)
        hand = read_defaults(defaults) if defaults is not None else {}
        cfg = load_config(config)
        with progress_bar(quiet=as_json) as bar:
            if zk is not None:
                zk_options = ZkOptions(
                    zk,
                    ledgers_root,
                    System(system) if system else None,
                    cluster or "",
                    timeout,
                    tls_ca,
                    tls_cert,
                    tls_key,
                    resolver_script,
                    pulsar_racks,
                )
                found = zk_inventory(zk_options, cfg, bar)
            elif pulsar_admin is not None:
                admin_options = AdminOptions(
                    pulsar_admin,
                    cluster,
                    pulsar_token_file,
                    config,
                    tls_ca,
                    tls_cert,
                    tls_key,
                    allow_insecure,
                    timeout,
                )
                found = admin_inventory(admin_options, bar)
            else:
                found = _files(
                    load_reports, bootstrap_servers, command_config, cluster, timeout, bar
                )
        _name_cluster(found, cluster)
        merge_defaults(found.rows, hand)
        text = to_csv(found.rows)
        if output is not None:
            output.write_text(text, encoding="utf-8")
    _show(found, text, output, as_json)


def _one_source(*values: object) -> str:
    """The one source option given (its name), or one error line."""
    given = [name for name, value in zip(_SOURCES, values, strict=True) if value is not None]
    if len(given) != 1:
        which = f"not {' and '.join(given)}" if given else "none was given"
        raise TrimtabError(
            "give one source: --zk HOST:PORT (BookKeeper, Pulsar), --pulsar-admin URL, "
            f"--load-reports DIR (Pulsar) or --bootstrap-servers HOST:PORT (Kafka, Redpanda); "
            f"{which}"
        )
    return given[0]


def _name_cluster(found: Found, cluster: str | None) -> None:
    """Rows without a cluster name get ``--cluster``, else the system's name."""
    default = "bookkeeper" if found.system is System.BOOKKEEPER else "pulsar"
    for row in found.rows:
        row.cluster = cluster or row.cluster or default


def _files(
    load_reports: Path | None,
    bootstrap: str | None,
    command_config: Path | None,
    cluster: str | None,
    timeout_s: float,
    bar: Progress,
) -> Found:
    """The rows of saved Pulsar reports or of a Kafka/Redpanda cluster."""
    if load_reports is not None:
        from trimtab.systems.pulsar.inventory import broker_rows as pulsar_rows
        from trimtab.systems.pulsar.load_reports import read_report_dir

        reports, errors = read_report_dir(load_reports)
        for error in errors:
            typer.echo(f"warning: {error}", err=True)
        if not reports:
            raise TrimtabError(f"--load-reports {load_reports}: no readable load report")
        note = f"{plural(len(reports), 'broker')} from the load reports in {load_reports}"
        return Found(pulsar_rows(reports, cluster or "pulsar"), [note], System.PULSAR)
    from trimtab.systems.kafka.inventory import broker_rows as kafka_rows

    assert bootstrap is not None
    bar.add_task(f"asking the brokers at {bootstrap}", total=None)
    rows = kafka_rows(bootstrap, cluster or "kafka", command_config, timeout_s)
    return Found(rows, [f"{plural(len(rows), 'broker')} from {bootstrap}"])


# -- what is shown ---------------------------------------------------------------------------


def _show(found: Found, text: str, output: Path | None, as_json: bool) -> None:
    """``--json``; else the CSV on stdout (summary on stderr) or the summary on stdout."""
    if as_json:
        print_json(
            {
                "nodes": [_json_row(r) for r in found.rows],
                "output": str(output or ""),
                "system": str(found.system or ""),
                "summary": found.notes,
            }
        )
        return
    if output is None:
        typer.echo(text, nl=False)
        _print_summary(found, err)
        return
    _print_summary(found, out)


def _print_summary(found: Found, console: Console) -> None:
    console.print(_summary(found.rows))
    for note in found.notes:
        console.print(f"- {note}", highlight=False, soft_wrap=True)
    for row in found.rows:
        for problem in row.problems:
            console.print(f"- {row.node}: {printable(problem)}", highlight=False, soft_wrap=True)
    incomplete = [r for r in found.rows if r.missing]
    if incomplete:
        lack = "lacks" if len(incomplete) == 1 else "lack"
        common = _common_missing(found.rows)
        what = (
            f"every node lacks {', '.join(common)}"
            if common
            else f"{plural(len(incomplete), 'node')} {lack} required values (column 'missing')"
        )
        console.print(f"- {what}: give them in --defaults", highlight=False, soft_wrap=True)


def _common_missing(rows: list[NodeRow]) -> list[str] | None:
    """The fields every node lacks, when all lack the same ones: said once under the table
    instead of a ``missing`` column repeating them on every line (which wraps at 80 columns)."""
    sets = {tuple(r.missing) for r in rows}
    if len(sets) != 1 or not rows[0].missing:
        return None
    return list(rows[0].missing)


def _json_row(row: NodeRow) -> dict[str, object]:
    return {
        **row.as_dict(),
        "sources": dict(row.sources),
        "missing": row.missing,
        "problems": list(row.problems),
    }


def _summary(rows: list[NodeRow]) -> Table:
    """One line per node: each value with ``*`` if given (not measured), and what is missing
    (the reason a source gave none is printed under the table)."""
    roles = {r.cells.get("role") for r in rows}
    skip = {"region", "rack", *(() if len(roles) > 1 else ("role",))}
    shown = [c for c in COLUMNS[2:] if c not in skip and any(c in r.cells for r in rows)]
    per_row = any(r.missing for r in rows) and _common_missing(rows) is None
    table = Table(title=f"{len(rows)} node(s); * = given by --defaults, not measured")
    extra = ("missing",) if per_row else ()
    for column in ("node", "location", *(_HEADERS.get(c, c) for c in shown), *extra):
        table.add_column(column)
    for row in rows:
        cells = [_cell(row, c) for c in shown]
        missing = ", ".join(_HEADERS.get(c, c) for c in row.missing) or "-"
        table.add_row(row.node, _location(row), *cells, *([missing] if per_row else []))
    return table


#: Short headers, so the summary fits a terminal of 80 columns.
_HEADERS = {
    "memory_bytes": "memory",
    "disk_total_bytes": "disk",
    "disk_free_bytes": "free",
    "nic_bps": "nic",
}


def _location(row: NodeRow) -> str:
    """``/region/rack`` as the row gives it (``*`` if given), blank when neither is known."""
    parts = [str(row.cells[c]) for c in ("region", "rack") if c in row.cells]
    given = any(row.sources.get(c) == "given" for c in ("region", "rack"))
    return ("/" + "/".join(parts) + ("*" if given else "")) if parts else ""


def _cell(row: NodeRow, column: str) -> str:
    """A cell as people read it (GB, Gb/s), ``*`` after a value given by ``--defaults``."""
    if column not in row.cells:
        return ""
    value = row.cells[column]
    if column.endswith("_bytes"):
        value = human_bytes(float(str(value)))
    elif column == "nic_bps":
        value = human_bps(float(str(value)))
    return f"{value}{'*' if row.sources.get(column) == 'given' else ''}"
