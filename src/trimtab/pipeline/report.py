"""Write ``report.html`` into a run's staging directory, before the switch that publishes it.

The tables are read back with Spark (so the staging directory may be on any filesystem Spark
can reach), trimmed as :mod:`trimtab.report.data` trims them, collected as small pandas
frames and rendered by :func:`trimtab.report.render.render`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from trimtab.pipeline.output import StagedOutput
from trimtab.report.data import QUARANTINE_ROWS, TABLES, ReportData
from trimtab.report.render import render

__all__ = ["INVENTORY_COLUMNS", "inventory", "write_staged_report"]

INVENTORY_COLUMNS = TABLES["inventory"]


def inventory(nodes: DataFrame) -> DataFrame:
    """The accepted inventory rows the run decided on: identity, role, state and capacities."""
    present = [c for c in INVENTORY_COLUMNS if c in nodes.columns]
    return nodes.select(*present).orderBy("cluster", "node")


def write_staged_report(
    spark: SparkSession,
    out: StagedOutput,
    run: dict[str, Any],
    *,
    held: Mapping[str, DataFrame] | None = None,
) -> None:
    """Render the staged outputs and ``run`` (the ``run.json`` document) to ``report.html``.
    ``held``: tables' rows the run holds already, at least those the report shows (each
    node's latest ``node_load`` window), read from there instead of the staged files."""
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
    out.write_text("report.html", render(ReportData(run=run, tables=tables)))
