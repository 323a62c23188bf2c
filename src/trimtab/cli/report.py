"""``trimtab report``: the self-contained HTML report of a pipeline output directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from trimtab._format import human_bytes
from trimtab.cli._common import (
    JsonFlag,
    app,
    out,
    print_json,
    progress_bar,
    user_errors,
    writable_output,
)
from trimtab.errors import TrimtabError

__all__ = ["report_cmd"]


@app.command("report")
def report_cmd(
    input_dir: Annotated[
        Path,
        typer.Option(
            "--input", help="Output directory of `trimtab pipeline run`.", file_okay=False
        ),
    ],
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out", help="HTML file to write (default: INPUT/report.html).", dir_okay=False
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Write the HTML report of a pipeline run: one file that opens offline in any browser."""
    from trimtab.report.data import read_output
    from trimtab.report.fleet import rank_clusters
    from trimtab.report.render import render, save_report

    target = out_file if out_file is not None else input_dir / "report.html"
    with user_errors():
        if not input_dir.is_dir():
            raise TrimtabError(f"{input_dir} is not a directory")
        option = "--out" if out_file is not None else "--input"
        writable_output(option, target, directory=False, parents=False)
        with progress_bar(quiet=as_json) as progress:
            task = progress.add_task("reading the output tables", total=3)
            data = read_output(input_dir)
            progress.update(task, advance=1, description="drawing the charts")
            text = render(data)
            progress.update(task, advance=1, description=f"writing {target.name}")
            save_report(text, target)
            progress.update(task, advance=1)
    ranks = rank_clusters(data)
    size = target.stat().st_size
    if as_json:
        print_json(
            {
                "report": str(target),
                "bytes": size,
                "charts": text.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"'),
                "clusters": [
                    {
                        "cluster": r.cluster,
                        "std_now": r.std_now,
                        "std_after": r.std_after,
                        "spread_now": r.spread_now,
                        "spread_after": r.spread_after,
                        "transfers": r.transfers,
                    }
                    for r in ranks
                ],
            }
        )
        return
    table = Table(title="clusters ranked by imbalance (broker load)")
    for column in ("cluster", "std now → after", "max − min now → after", "transfers"):
        table.add_column(column, justify="left" if column == "cluster" else "right")
    for r in ranks:
        table.add_row(
            r.cluster,
            f"{r.std_now:.3f} → {r.std_after:.3f}",
            f"{r.spread_now:.3f} → {r.spread_after:.3f}",
            str(r.transfers),
        )
    out.print(table)
    out.print(f"report written to [bold]{target}[/] ({human_bytes(size)})", highlight=False)
