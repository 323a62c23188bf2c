"""The fleet report: what a run found and decided, drawn for someone who has never seen trimtab.

Order: the fleet overview (clusters ranked by imbalance), the quarantined input rows, then one
section per cluster — broker load now and after the plan against the target band, the spread
per cycle, the transfers, the bookies' disk and pick probabilities, the allocation per core,
and the cluster's quarantined rows. Every chart has a title, axis units and one line saying
how to read it; a cluster without brokers, bookies or allocations says so instead of a chart.

The sections are drawn by :mod:`~trimtab.report.fleet` (overview, quarantine),
:mod:`~trimtab.report.cluster` (one cluster), with its parts in :mod:`~trimtab.report.brokers`
(load, cycles, transfers) and :mod:`~trimtab.report.storage` (bookies, allocation).
"""

from __future__ import annotations

from pathlib import Path

from trimtab.report.cluster import cluster_section
from trimtab.report.data import ReportData, read_output
from trimtab.report.fleet import overview_section, quarantine_section, rank_clusters
from trimtab.report.page import page, slug

__all__ = ["render", "save_report", "write_report"]


def write_report(output_dir: Path, out: Path | None = None) -> Path:
    """Build ``report.html`` from an output (or staging) directory; returns the file written.

    ``out`` defaults to ``output_dir/report.html``. The file is written beside itself and
    renamed into place (:func:`save_report`), so a reader never sees half a report.
    """
    target = out if out is not None else output_dir / "report.html"
    save_report(render(read_output(output_dir)), target)
    return target


def save_report(text: str, target: Path) -> None:
    """Write ``text`` beside ``target`` and rename it into place."""
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)


def render(data: ReportData) -> str:
    """The whole report as one HTML document."""
    run = data.run
    ranks = rank_clusters(data)
    clusters = sorted(set(run.get("clusters", {})) | {r.cluster for r in ranks})
    order = [r.cluster for r in ranks] + [
        c for c in clusters if c not in {r.cluster for r in ranks}
    ]
    contents = [("overview", "Fleet overview"), ("quarantine", "Quarantined input rows")]
    contents += [(f"cluster-{slug(c)}", f"Cluster {c}") for c in order]
    started = str(run.get("started", "?"))[:19].replace("T", " ")
    source = run.get("inputs", {}).get("path", "?")
    subtitle = (
        f"Run {run.get('run_id', '?')}, started {started} UTC, on {source}"
        f" (trimtab {run.get('trimtab_version', '?')})."
    )
    parts = [overview_section(data, ranks), quarantine_section(data)]
    parts += [cluster_section(data, c) for c in order]
    return page(
        "trimtab fleet report",
        *parts,
        subtitle=subtitle,
        contents=contents,
        footer=(
            "Written by trimtab from the run's output tables; every number here is also in "
            "the Parquet tables and run.json beside this file."
        ),
    )
