"""``trimtab inventory``: the ``nodes`` table from what a live cluster publishes (issue 42).

Each source gives what it knows (a Pulsar load report its limits, Kafka's DescribeLogDirs the
disks); ``--defaults`` gives the rest. The contract's ``nodes`` table has no place for where a
value came from, so the summary and ``--json`` say it per cell: ``measured`` or ``given``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from trimtab._format import human_bps, human_bytes
from trimtab.cli._common import JsonFlag, app, out, print_json, user_errors, writable_output
from trimtab.errors import TrimtabError
from trimtab.systems.inventory_rows import (
    COLUMNS,
    NodeRow,
    merge_defaults,
    read_defaults,
    to_csv,
)

__all__ = ["inventory"]


@app.command()
def inventory(
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
    cluster: Annotated[str, typer.Option("--cluster", help="Cluster name of the rows.")] = "",
    defaults: Annotated[
        Path | None,
        typer.Option("--defaults", help="CSV of values no API publishes (empty node: every node)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the CSV here (else stdout).")
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per call.")] = 10.0,
    as_json: JsonFlag = False,
) -> None:
    """Write the inventory (the nodes table) from a live cluster and --defaults."""
    with user_errors():
        if (load_reports is None) == (bootstrap_servers is None):
            raise TrimtabError(
                "give one source: --load-reports DIR (Pulsar) or --bootstrap-servers HOST:PORT "
                "(Kafka, Redpanda)"
            )
        if output is not None:
            writable_output("--output", output, directory=False, parents=False)
        hand = read_defaults(defaults) if defaults is not None else {}
        rows = _collect(load_reports, bootstrap_servers, command_config, cluster, timeout)
        merge_defaults(rows, hand)
        text = to_csv(rows)
        if output is not None:
            output.write_text(text, encoding="utf-8")
    if as_json:
        print_json({"nodes": [_json_row(r) for r in rows], "output": str(output or "")})
        return
    if output is None:
        typer.echo(text, nl=False)
        return
    out.print(_summary(rows))


def _collect(
    load_reports: Path | None,
    bootstrap: str | None,
    command_config: Path | None,
    cluster: str,
    timeout_s: float,
) -> list[NodeRow]:
    """The rows the one given source publishes."""
    if load_reports is not None:
        from trimtab.systems.pulsar.inventory import broker_rows as pulsar_rows
        from trimtab.systems.pulsar.load_reports import read_report_dir

        reports, errors = read_report_dir(load_reports)
        for error in errors:
            typer.echo(f"warning: {error}", err=True)
        if not reports:
            raise TrimtabError(f"--load-reports {load_reports}: no readable load report")
        return pulsar_rows(reports, cluster or "pulsar")
    from trimtab.systems.kafka.inventory import broker_rows as kafka_rows

    assert bootstrap is not None
    return kafka_rows(bootstrap, cluster or "kafka", command_config, timeout_s)


def _json_row(row: NodeRow) -> dict[str, object]:
    return {**row.as_dict(), "sources": dict(row.sources), "missing": row.missing}


def _summary(rows: list[NodeRow]) -> Table:
    """One line per node: each value with ``*`` if given (not measured), and what is missing."""
    shown = [c for c in COLUMNS[2:] if any(c in r.cells for r in rows)]
    table = Table(title=f"{len(rows)} node(s); * = given by --defaults, not measured")
    for column in ("node", *shown, "missing"):
        table.add_column(column)
    for row in rows:
        cells = [_cell(row, c) for c in shown]
        table.add_row(row.node, *cells, ", ".join(row.missing) or "-")
    return table


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
