"""The report from hand-made output tables: ranking, missing parts, escaping, the command."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.errors import TrimtabError
from trimtab.report.data import ReportData, read_output
from trimtab.report.fleet import rank_clusters
from trimtab.report.render import render, write_report
from trimtab.report.values import short_names


def run_doc(**clusters: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": "r1",
        "started": "2026-11-01T00:00:00+00:00",
        "inputs": {"path": "/fleet"},
        "tables": {"nodes": {"read": 4, "accepted": 4, "quarantined": 0}},
        "quarantine_by_rule": {"nodes": {}},
        "clusters": clusters,
    }


def inventory(cluster: str, *nodes: tuple[str, str, int]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"cluster": cluster, "node": n, "role": role, "state": "writable", "cores": cores}
            for n, role, cores in nodes
        ]
    )


def two_clusters() -> ReportData:
    """A calm cluster and a lopsided one, each with two brokers and one bookie."""
    loads = pd.DataFrame(
        [
            ("calm", "calm-b1.example.net:8080", 0.30, 0.30),
            ("calm", "calm-b2.example.net:8080", 0.32, 0.31),
            ("hot", "hot-b1.example.net:8080", 0.90, 0.55),
            ("hot", "hot-b2.example.net:8080", 0.10, 0.45),
        ],
        columns=["cluster", "broker", "load_before", "load_after"],
    )
    nodes = pd.concat(
        [
            inventory("calm", ("calm-b1", "broker", 8), ("calm-b2", "broker", 8)),
            inventory("hot", ("hot-b1", "broker", 8), ("hot-b2", "broker", 16)),
        ]
    )
    run = run_doc(
        calm={"nodes": 2, "std_before": 0.01, "std_after": 0.005, "transfers": 0},
        hot={"nodes": 2, "std_before": 0.4, "std_after": 0.05, "transfers": 1},
    )
    transfers = pd.DataFrame(
        [
            (
                "hot",
                1,
                "t/ns/0x0_0x1",
                "hot-b1.example.net:8080",
                "hot-b2.example.net:8080",
                2e6,
                "Overloaded",
            )
        ],
        columns=["cluster", "cycle", "bundle", "source", "destination", "throughput", "reason"],
    )
    return ReportData(
        run=run, tables={"plan_loads": loads, "inventory": nodes, "transfers": transfers}
    )


def test_clusters_are_ranked_most_imbalanced_first() -> None:
    """The hot cluster comes first, with its max − min before and after."""
    ranks = rank_clusters(two_clusters())
    assert [r.cluster for r in ranks] == ["hot", "calm"]
    assert ranks[0].spread_now == pytest.approx(0.8)
    assert ranks[0].spread_after == pytest.approx(0.1)
    assert ranks[0].transfers == 1


def test_a_plan_that_raises_the_std_is_marked_and_explained() -> None:
    """run.json's warning shows in the cluster's section and marks its row in the ranking."""
    data = two_clusters()
    warning = "applying these 1 transfers would raise broker load std from 0.010 to 0.020"
    calm = data.run["clusters"]["calm"]
    calm.update(std_after=0.02, transfers=1, warning=warning)
    html = render(data)
    assert f"Warning: {warning}." in html
    assert "0.010 → 0.020 (the plan raises it)" in html
    assert "(the plan raises it)" not in render(two_clusters())
    assert [r.worsens for r in rank_clusters(data)] == [False, True]


def test_bundles_left_out_as_no_longer_reported_are_named() -> None:
    """run.json's stale_bundles shows in the cluster's section: the count and the names it
    gives, with an ellipsis when there are more."""
    data = two_clusters()
    data.run["clusters"]["hot"]["stale_bundles"] = {"count": 7, "first": ["t/n/0x0_0x1", "t/n/b"]}
    html = render(data)
    assert "7 bundles left out, not reported within loadBalancerBrokerLoadDataTTLInSeconds" in html
    assert "t/n/0x0_0x1, t/n/b, ...." in html
    assert "bundles left out" not in render(two_clusters())


def test_missing_tables_give_notes_not_errors() -> None:
    """Without bookies, allocations, cycles or quarantine, each part says what is missing."""
    html = render(two_clusters())
    assert "No writable bookie in this cluster" in html
    assert "No allocation was requested." in html
    assert "No input row was quarantined." in html
    assert "The plan moves no bundle in this cluster." in html  # calm
    assert "Overloaded" in html  # hot's transfer


def test_cluster_with_only_node_loads() -> None:
    """A cluster with loads but no brokers shows every node's load and says why."""
    data = ReportData(
        run=run_doc(solo={"nodes": 1}),
        tables={
            "node_load": pd.DataFrame(
                [("solo", "bk1:3181", pd.Timestamp("2026-11-01"), 0.4, True)],
                columns=["cluster", "node", "window_start", "load", "latest"],
            ),
            "inventory": inventory("solo", ("bk1:3181", "bookie", 4)),
        },
    )
    html = render(data)
    assert "This cluster has no brokers that can take load" in html
    assert ">Load per node now</text>" in html


def test_empty_run_renders() -> None:
    """No clusters at all: a valid page that says so."""
    html = render(ReportData(run={}))
    assert html.startswith("<!DOCTYPE html>")
    assert "This run has no clusters." in html


def test_names_from_the_data_are_escaped() -> None:
    """A cluster named like markup shows as text everywhere."""
    data = ReportData(run=run_doc(**{"<script>alert(1)</script>": {"nodes": 0}}))
    html = render(data)
    assert "<script>" not in html
    assert "&lt;script&gt;" in html


@pytest.mark.parametrize(
    ("names", "short"),
    [
        (
            ["c0-broker1.east.example.net:8080", "c0-bk2.west.example.net:3181"],
            ["broker1.east", "bk2.west"],
        ),
        (["a:1", "a:2"], ["1", "2"]),
        (["only.example.net:8080"], ["only.example.net:8080"]),
        (["x", "x"], ["x", "x"]),
    ],
    ids=[
        "the shared cluster prefix and domain go, the ports too when hosts are distinct",
        "ports stay when they are what tells nodes apart",
        "one name stays whole",
        "names that would become empty stay whole",
    ],
)
def test_short_names(names: list[str], short: list[str]) -> None:
    """Shortened names keep what tells nodes apart."""
    assert short_names(names) == short


def write_output(root: Path, data: ReportData) -> Path:
    """An output directory as the pipeline lays it out: run.json and Parquet directories."""
    root.mkdir()
    (root / "run.json").write_text(json.dumps(data.run))
    for name, frame in data.tables.items():
        (root / name).mkdir()
        frame.to_parquet(root / name / "part-00000.parquet", index=False)
    return root


def test_write_report_reads_an_output_directory(tmp_path: Path) -> None:
    """Tables written to Parquet read back into the same report as the frames themselves."""
    data = two_clusters()
    out = write_output(tmp_path / "out", data)
    assert write_report(out).read_text() == render(read_output(out))
    assert read_output(out).table("plan_loads").shape == (4, 4)


def test_a_table_directory_without_files_reads_as_empty(tmp_path: Path) -> None:
    """The job writes ``node_load`` as a directory without files when no node has a load
    (every sample refused): the report draws it as an empty table, not an error."""
    data = two_clusters()
    out = write_output(tmp_path / "out", data)
    shutil.rmtree(out / "node_load", ignore_errors=True)
    (out / "node_load").mkdir()
    assert read_output(out).table("node_load").empty
    assert write_report(out).exists()


def test_not_an_output_directory(tmp_path: Path) -> None:
    """A directory without run.json is refused with a clear error."""
    with pytest.raises(TrimtabError, match=r"no run\.json"):
        read_output(tmp_path)


def test_report_command(tmp_path: Path) -> None:
    """`trimtab report --json` writes the file and prints the ranking; errors are one line."""
    out = write_output(tmp_path / "out", two_clusters())
    target = tmp_path / "r.html"
    result = CliRunner().invoke(
        app, ["report", "--input", str(out), "--out", str(target), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["report"] == str(target) and doc["bytes"] == target.stat().st_size
    assert [c["cluster"] for c in doc["clusters"]] == ["hot", "calm"]
    assert doc["charts"] >= 3
    people = CliRunner().invoke(app, ["report", "--input", str(out)])
    assert people.exit_code == 0 and "report written to" in people.output
    bad = CliRunner().invoke(app, ["report", "--input", str(tmp_path)])
    assert bad.exit_code == 2 and "no run.json" in bad.output


def test_clusters_without_brokers_rank_last_without_figures() -> None:
    """No broker loads: NaN figures, ranked after every cluster with brokers."""
    data = two_clusters()
    run = dict(data.run)
    run["clusters"] = {**run["clusters"], "bare": {"nodes": 1}}
    ranks = rank_clusters(ReportData(run=run, tables=data.tables))
    assert [r.cluster for r in ranks] == ["hot", "calm", "bare"]
    assert math.isnan(ranks[-1].std_now) and math.isnan(ranks[-1].spread_now)
    assert "– → –" in render(ReportData(run=run, tables=data.tables))
