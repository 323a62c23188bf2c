"""Write ``report.html`` into a run's staging directory, before the switch that publishes it.

A local staging directory is read exactly as ``trimtab report`` reads an output
(:func:`trimtab.report.data.read_output`). Elsewhere (HDFS, object stores) the tables are read
back with Spark, trimmed as :mod:`trimtab.report.data` trims them and collected as small pandas
frames. Either way :func:`trimtab.report.render.render` draws them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from trimtab.pipeline.output import StagedOutput
from trimtab.report.data import QUARANTINE_ROWS, TABLES, ReportData, read_output
from trimtab.report.render import render

__all__ = ["INVENTORY_COLUMNS", "inventory", "spark_report_data", "write_staged_report"]

INVENTORY_COLUMNS = TABLES["inventory"]


def inventory(nodes: DataFrame) -> DataFrame:
    """The accepted inventory rows the run decided on: identity, role, state and capacities
    (unordered: the writer sorts them)."""
    present = [c for c in INVENTORY_COLUMNS if c in nodes.columns]
    return nodes.select(*present)


def write_staged_report(
    spark: SparkSession,
    out: StagedOutput,
    run: dict[str, Any],
    *,
    held: Mapping[str, DataFrame] | None = None,
) -> None:
    """Render the staged outputs and ``run`` (the ``run.json`` document, already staged) to
    ``report.html``. A local staging directory is read as ``trimtab report`` reads an output
    (pyarrow, no Spark job: on the demo fleet Spark's eight reads cost a second)."""
    local = out.local_path()
    if local is not None:
        data = read_output(Path(local))
    else:
        data = spark_report_data(spark, out, run, held=held)
    out.write_text("report.html", render(data))


def spark_report_data(
    spark: SparkSession,
    out: StagedOutput,
    run: dict[str, Any],
    *,
    held: Mapping[str, DataFrame] | None = None,
) -> ReportData:
    """The report's tables read with Spark from any filesystem it reaches, trimmed as
    :func:`~trimtab.report.data.read_output` trims them. ``held``: tables' rows the run holds
    already (each node's latest ``node_load`` window), read there instead of the files."""
    tables: dict[str, pd.DataFrame] = {}
    for name, columns in TABLES.items():
        if not out.fs.exists(out.path(name)):
            continue
        given = (held or {}).get(name)
        frame = given if given is not None else out.read_table(spark, name)
        if name == "node_load":
            frame = frame.where("latest")
        if name == "quarantine":
            frame = frame.limit(QUARANTINE_ROWS)
        present = [c for c in columns if c in frame.columns]
        tables[name] = frame.select(*present).toPandas().reindex(columns=list(columns))
    return ReportData(run=run, tables=tables)
