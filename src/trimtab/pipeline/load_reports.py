"""The pipeline's ``load_reports/`` table: Pulsar's ``LocalBrokerData`` documents, turned into
``node_metrics`` and ``bundle_metrics`` rows before the ingest checks them.

Goals
    A fleet job reads the brokers' reports as they are saved, beside (or instead of) the
    tables. Each document becomes the rows :mod:`trimtab.systems.pulsar.load_reports` makes
    of it for ``trimtab shed --load-reports``; those rows then meet the ingest and its rules
    like any file of ``node_metrics/`` and ``bundle_metrics/``: one contract, one set of
    verdicts.

Layout
    ``load_reports/<cluster>/<host:port>.json`` (one document) or ``…/<any>.jsonl`` (one
    document per line). The directory names the cluster (a report holds no cluster name); a
    report directly under ``load_reports/`` has none, and its rows are refused
    (``missing_key``).

Constraints
    * Staged files live in the run's staging directory and go with it; the quarantine names
      the report file, never the staged one (:meth:`StagedReports.quarantine`).
    * A document refused by the reader (not JSON, a missing field, an impossible usage) is
      quarantined as table ``load_reports``, rule ``bad_report``, with the reader's reason.
    * ``pipeline run`` reads the documents on the driver: a saved cluster (one report per
      broker) is small. ``pipeline stream`` reads each file as it lands, in a task; both turn
      a file into rows with :func:`report_rows`, so they read a report alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from trimtab.errors import ReportError
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.local import local_frame
from trimtab.systems.pulsar.load_reports import broker_of_file, parse_report

__all__ = ["LOAD_REPORTS", "ReportRows", "StagedReports", "report_rows", "stage_load_reports"]

LOAD_REPORTS = "load_reports"


@dataclass(slots=True)
class StagedReports:
    """The staged rows per table (files for the ingest), where each came from, and the
    documents refused with their reasons."""

    files: dict[str, list[str]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # staged file -> report file
    refused: list[tuple[str, str, str]] = field(default_factory=list)  # (file, reason, row)
    read: int = 0

    def quarantine(self, spark: SparkSession, checked: DataFrame) -> DataFrame:
        """The ingest's quarantine with staged files named by their report, and the
        refused documents added (table ``load_reports``, rule ``bad_report``)."""
        source = F.col("source_file")
        for staged, original in self.sources.items():
            source = F.when(F.col("source_file") == staged, F.lit(original)).otherwise(source)
        named = checked.withColumn("source_file", source)
        if not self.refused:
            return named
        rows = [(LOAD_REPORTS, f, "bad_report", reason, raw) for f, reason, raw in self.refused]
        return named.unionByName(local_frame(spark, rows, checked.schema))


def stage_load_reports(spark: SparkSession, input_dir: str, staging: str) -> StagedReports | None:
    """Turn ``input_dir/load_reports`` into ``node_metrics``/``bundle_metrics`` JSON-lines
    files under ``staging``; None when the input has no ``load_reports/``."""
    fs = HadoopFS(spark, input_dir)
    root = f"{input_dir}/{LOAD_REPORTS}"
    if not fs.exists(root):
        return None
    staged = StagedReports()
    files = [(f, "") for f in fs.list_files(root)] if fs.is_dir(root) else []
    for folder in fs.list_dirs(root):
        files += [(f, PurePosixPath(folder).name) for f in fs.list_files(folder)]
    for number, (path, cluster) in enumerate(sorted(files)):
        got = report_rows(path, fs.read_bytes(path), cluster)
        staged.read += got.read
        staged.refused += [(path, reason, raw) for reason, raw in got.refused]
        for table, rows in got.lines.items():
            if not rows:
                continue
            target = f"{staging}/{table}/{number:06d}.jsonl"
            fs.write_text(target, "\n".join(rows) + "\n")
            qualified = fs.qualify(target)
            staged.files.setdefault(table, []).append(qualified)
            staged.sources[qualified] = fs.qualify(path)
    return staged


@dataclass(frozen=True, slots=True)
class ReportRows:
    """One load report file's rows per table, as JSON lines, and its refused documents as
    (reason, text); ``read`` counts its documents."""

    lines: dict[str, list[str]]
    refused: list[tuple[str, str]]
    read: int


def report_rows(path: str, data: bytes, cluster: str) -> ReportRows:
    """The rows of one file of ``load_reports/`` (``path``, its bytes, the cluster its folder
    names): what the batch job stages and the stream parses, so both read a report alike."""
    lines: dict[str, list[str]] = {"node_metrics": [], "bundle_metrics": []}
    refused: list[tuple[str, str]] = []
    read = 0
    try:
        documents = _documents(path, data.decode("utf-8"))
    except UnicodeDecodeError:
        return ReportRows(lines, [("not UTF-8 text", "")], 1)
    for source, text, broker in documents:
        read += 1
        try:
            report = parse_report(text, source=source, broker=broker)
        except ReportError as exc:
            refused.append((exc.reason, text[:2000]))
            continue
        lines["node_metrics"].append(json.dumps(report.node_row(cluster)))
        lines["bundle_metrics"] += [json.dumps(r) for r in report.bundle_rows(cluster)]
    return ReportRows(lines, refused, read)


def _documents(path: str, text: str) -> list[tuple[str, str, str | None]]:
    """(source, text, broker named by the file) of each document in one file."""
    name = PurePosixPath(path).name
    if not name.endswith((".jsonl", ".ndjson")):
        return [(path, text, broker_of_file(name))]
    return [
        (f"{path}:{n}", line, None)
        for n, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
