"""Regression tests for the engine, pipeline and report cases of issue 23: degenerate
clusters are answers (an ``error:`` line with exit 2, or a plan saying why nothing is done),
never NaN or a traceback; conflicting rows are settled by a stated rule, not file order."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from tests.pipeline.conftest import spark  # noqa: F401  (the session's one local Spark)
from trimtab.cli import app
from trimtab.errors import TrimtabError
from trimtab.pipeline.generate import FleetSpec, generate_fleet
from trimtab.pipeline.job import JobOptions, run_job

ROOT = Path(__file__).parents[2]
SHEDDING = ROOT / "examples" / "shedding"
ALLOCATION = ROOT / "examples" / "allocation"
BOOKIES = ROOT / "src" / "trimtab" / "data" / "sample_inventory.csv"
NOW = datetime(2026, 11, 2, tzinfo=UTC)
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


def edited(src: Path, out: Path, change: dict[str, str], rows: slice = slice(None)) -> Path:
    """A copy of the CSV ``src`` with ``change`` (column -> value) on the ``rows`` chosen."""
    with src.open(newline="") as handle:
        table = list(csv.DictReader(handle))
    for row in table[rows]:
        row.update(change)
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    return out


def shed(inventory: Path, brokers: Path, *extra: str) -> tuple[int, str, str]:
    bundles = str(SHEDDING / "bundle_metrics.csv")
    return run(
        "shed", "-i", str(inventory), "--brokers", str(brokers), "--bundles", bundles, *extra
    )


def error_line(stderr: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith("error:")]
    return line


# -- shed: no usable telemetry, no writable broker, huge values, Parquet rejects ----------


def test_shed_with_every_telemetry_row_rejected_is_an_error_naming_why(tmp_path: Path) -> None:
    """Every node_metrics row refused: exit 2 and a reason with the first rejection, no NaN."""
    metrics = edited(SHEDDING / "node_metrics.csv", tmp_path / "m.csv", {"cpu": "2"})
    code, out, err = shed(SHEDDING / "inventory.csv", metrics)
    assert code == 2 and "nan" not in out
    line = error_line(err)
    assert "nothing to shed" in line and "30 row(s) were rejected" in line and "m.csv:2" in line


@pytest.mark.parametrize("state", ["down", "readonly"])
def test_shed_with_every_broker_down_or_read_only_is_an_error(tmp_path: Path, state: str) -> None:
    """No writable broker: nothing can move, said in one error line, never "std nan"."""
    inventory = edited(SHEDDING / "inventory.csv", tmp_path / "i.csv", {"state": state})
    code, out, err = shed(inventory, SHEDDING / "node_metrics.csv", "--json")
    assert code == 2 and out == ""
    assert "no broker is writable" in error_line(err)


def test_shed_refuses_a_sample_dated_2100_against_the_wall_clock(tmp_path: Path) -> None:
    """A row from 2100 is refused as future_timestamp (no --now: the wall clock), so the
    snapshot stays at the data's own latest time and no idle cycles are run from 2100."""
    metrics = tmp_path / "m.csv"
    lines = (SHEDDING / "node_metrics.csv").read_text().splitlines()
    future = "2100-01-01T00:00:00Z" + lines[1][len("2024-05-01T12:00:00Z") :]
    metrics.write_text("\n".join([*lines, future]) + "\n")
    code, out, _ = shed(SHEDDING / "inventory.csv", metrics, "--until-balanced", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["now"] == "2024-05-01T12:04:00Z"
    assert [r["line"] for r in doc["rejected"]] == [len(lines) + 1]
    assert "in the future" in doc["rejected"][0]["reason"]


def test_shed_with_1e308_in_a_network_column_keeps_a_finite_std(tmp_path: Path) -> None:
    """A broken counter (1e308 bits/s) gives a huge but finite std, not "0.000 reached",
    and the table shows it in a few digits, not a 306-digit percentage."""
    metrics = edited(
        SHEDDING / "node_metrics.csv", tmp_path / "m.csv", {"net_in_bps": "1e308"}, slice(0, 1)
    )
    code, out, _ = shed(SHEDDING / "inventory.csv", metrics, "--json")
    doc = json.loads(out)
    assert code == 0 and math.isfinite(doc["std_before"])
    # Either a plausibility bound of the contract refuses the row, or the engine keeps it.
    refused = [r for r in doc["rejected"] if r["line"] == 2]
    assert refused or (doc["std_before"] > 1e290 and doc["reached"] is False)
    code, out, _ = shed(SHEDDING / "inventory.csv", metrics)
    assert code == 0 and "reached)" not in out.replace("not reached", "")
    assert max(len(digits) for digits in re.findall(r"[0-9]+", out)) < 20


def test_shed_json_on_parquet_with_a_rejected_row_is_valid_json(tmp_path: Path) -> None:
    """A refused Parquet row's timestamp is written as ISO text, not a crash."""
    frame = pd.read_csv(SHEDDING / "node_metrics.csv")
    frame["ts"] = pd.to_datetime(frame["ts"])
    frame.loc[0, "cpu"] = 2.0
    frame.to_parquet(tmp_path / "m.parquet")
    code, out, _ = shed(SHEDDING / "inventory.csv", tmp_path / "m.parquet", "--json")
    (rejected,) = json.loads(out)["rejected"]
    assert code == 0 and rejected["row"]["ts"].startswith("2024-05-01T12:00:00")


def test_shed_on_a_single_broker_is_a_plan_without_nan(tmp_path: Path) -> None:
    """One broker: nothing to balance against, a plan with std 0 and no transfers."""
    inventory = tmp_path / "i.csv"
    inventory.write_text("\n".join((SHEDDING / "inventory.csv").read_text().splitlines()[:2]))
    code, out, _ = shed(inventory, SHEDDING / "node_metrics.csv", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["std_before"] == doc["std_after"] == 0 and doc["transfers"] == []


# -- place, allocate, simulate diskfill: no writable node, a single node -------------------


@pytest.mark.parametrize("state", ["down", "readonly"])
def test_place_without_a_writable_bookie_is_an_error(tmp_path: Path, state: str) -> None:
    inventory = edited(BOOKIES, tmp_path / "i.csv", {"state": state})
    code, _, err = run(
        "place", "-i", str(inventory), "--cluster", "bk-prod", "-E", "3", "-W", "2", "-A", "2"
    )
    assert code == 2 and "0 available" in error_line(err)


def test_diskfill_without_a_writable_bookie_is_an_error(tmp_path: Path) -> None:
    inventory = edited(BOOKIES, tmp_path / "i.csv", {"state": "readonly"})
    code, _, err = run("simulate", "diskfill", "-i", str(inventory), "--cluster", "bk-prod")
    assert code == 2 and "no writable node" in error_line(err)


def test_allocate_without_a_writable_broker_is_an_error(tmp_path: Path) -> None:
    inventory = edited(ALLOCATION / "inventory.csv", tmp_path / "i.csv", {"state": "readonly"})
    code, out, err = run("allocate", "-i", str(inventory), "-r", str(ALLOCATION / "requests.csv"))
    assert code == 2 and out == ""
    assert "above the 0 node(s) that can take replicas" in error_line(err)


def test_a_single_node_places_and_allocates_what_one_node_can(tmp_path: Path) -> None:
    """A one-node cluster: one-replica work is done, more replicas are a clear error."""
    bookie = tmp_path / "b.csv"
    bookie.write_text("\n".join(BOOKIES.read_text().splitlines()[:2]))
    assert run("place", "-i", str(bookie), "-E", "1", "-W", "1", "-A", "1", "-n", "5")[0] == 0
    code, _, err = run("place", "-i", str(bookie), "-E", "3", "-W", "2", "-A", "2")
    assert code == 2 and "1 available" in error_line(err)
    broker = tmp_path / "k.csv"
    broker.write_text("\n".join((ALLOCATION / "inventory.csv").read_text().splitlines()[:2]))
    requests = tmp_path / "r.csv"
    requests.write_text("topic,partitions,replication_factor\nlogs,4,1\n")
    assert run("allocate", "-i", str(broker), "-r", str(requests))[0] == 0


# -- conflicts: a stated rule, not file order ----------------------------------------------


def test_conflicting_inventory_rows_are_both_refused_naming_each_other(tmp_path: Path) -> None:
    """Two different rows for one node in two files: neither wins by sorting first."""
    lines = (ALLOCATION / "inventory.csv").read_text().splitlines()
    (tmp_path / "a.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "b.csv").write_text(lines[0] + "\n" + lines[1].replace(",8,", ",16,") + "\n")
    code, out, _ = run("topology", "-i", str(tmp_path), "--json")
    doc = json.loads(out)
    first, second = doc["rejected"]
    assert code == 0 and all("conflicting rows for node 1 " in r["reason"] for r in doc["rejected"])
    assert "b.csv:2" in first["reason"] and "a.csv:2" in second["reason"]
    (cluster,) = doc["clusters"]
    assert "1" not in {node["id"] for node in cluster["nodes"]}


def test_samples_at_one_time_that_differ_are_conflicts_not_averaged(tmp_path: Path) -> None:
    """Two different samples of one broker at one ts: both refused as conflict; an exact
    copy of a sample is a duplicate and the first copy is kept."""
    lines = (SHEDDING / "node_metrics.csv").read_text().splitlines()
    other = lines[1].replace(",0.77,", ",0.10,")
    metrics = tmp_path / "m.csv"
    metrics.write_text("\n".join([*lines, other, lines[2]]) + "\n")
    code, out, _ = shed(SHEDDING / "inventory.csv", metrics, "--json")
    rejected = {r["line"]: r["reason"] for r in json.loads(out)["rejected"]}
    assert code == 0 and set(rejected) == {2, len(lines) + 1, len(lines) + 2}
    assert "conflicting rows for node broker1.example.net:8080" in rejected[2]
    assert f"m.csv:{len(lines) + 1}" in rejected[2]
    assert "an exact duplicate" in rejected[len(lines) + 2]


def test_the_same_topic_on_two_request_rows_is_refused_not_merged(tmp_path: Path) -> None:
    """Different rows for one topic are both conflicts (so nothing is allocated, as for any
    refused request); an exact copy of a request is a duplicate."""
    requests = tmp_path / "r.csv"
    requests.write_text("topic,partitions,replication_factor\norders,4,3\norders,8,3\n")
    inventory = str(ALLOCATION / "inventory.csv")
    code, out, err = run("allocate", "-i", inventory, "-r", str(requests), "--json")
    assert code == 2 and out == ""
    assert "conflicting rows for topic orders" in error_line(err) and "r.csv:3" in err
    requests.write_text("topic,partitions,replication_factor\norders,4,3\norders,4,3\n")
    code, _, err = run("allocate", "-i", inventory, "-r", str(requests), "--json")
    assert code == 2 and "an exact duplicate of an earlier row for topic orders" in error_line(err)


# -- pipeline run: every node down, 1e308 in a throughput column (small Spark runs) ---------


@pytest.fixture(scope="module")
def tiny_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    spec = FleetSpec(clusters=1, brokers=2, bookies=2, bundles=4, minutes=3, bad_rows=0.0)
    generate_fleet(spec, out)
    return out


def copied(fleet: Path, tmp_path: Path, table: str, change: Mapping[str, str | float]) -> Path:
    """A copy of ``fleet`` whose ``table`` Parquet files have the columns in ``change`` set."""
    copy = tmp_path / "in"
    shutil.copytree(fleet, copy)
    for file in (copy / table).glob("*.parquet"):
        frame = pd.read_parquet(file)
        for column, value in change.items():
            frame[column] = value
        frame.to_parquet(file)
    return copy


def test_pipeline_with_every_node_down_says_why_nothing_is_planned(
    spark: SparkSession,  # noqa: F811  (the fixture imported above)
    tiny_fleet: Path,
    tmp_path: Path,
) -> None:
    """Every node down: the job publishes, and run.json's plan says why nothing is done."""
    fleet = copied(tiny_fleet, tmp_path, "nodes", {"state": "down"})
    summary = run_job(spark, JobOptions(input=str(fleet), output=str(tmp_path / "out"), now=NOW))
    (entry,) = summary.clusters.values()
    assert entry["plan"].startswith("nothing to do because no broker is writable")
    assert "std_before" not in entry and (tmp_path / "out" / "report.html").exists()


def test_pipeline_with_1e308_throughput_stops_naming_the_unit(
    spark: SparkSession,  # noqa: F811  (the fixture imported above)
    tiny_fleet: Path,
    tmp_path: Path,
) -> None:
    """Rates at the float limit are implausible (issue 42): every row is quarantined naming
    the plausible most, and a run with no usable telemetry publishes nothing."""
    big = {"throughput_in_bytes_per_s": 1e308, "throughput_out_bytes_per_s": 1e308}
    fleet = copied(tiny_fleet, tmp_path, "node_metrics", big)
    with pytest.raises(TrimtabError, match=r"no usable telemetry.*plausible most"):
        run_job(spark, JobOptions(input=str(fleet), output=str(tmp_path / "out"), now=NOW))
    assert not (tmp_path / "out" / "report.html").exists()


def test_pipeline_with_throughput_at_the_plausible_most_publishes_a_report(
    spark: SparkSession,  # noqa: F811  (the fixture imported above)
    tiny_fleet: Path,
    tmp_path: Path,
) -> None:
    """Rates at the largest plausible value: the job and its report finish, numbers finite."""
    big = {"throughput_in_bytes_per_s": 1e12, "throughput_out_bytes_per_s": 1e12}
    fleet = copied(tiny_fleet, tmp_path, "node_metrics", big)
    summary = run_job(spark, JobOptions(input=str(fleet), output=str(tmp_path / "out"), now=NOW))
    assert (tmp_path / "out" / "report.html").exists()
    for entry in summary.clusters.values():
        assert all(math.isfinite(v) for v in entry.values() if isinstance(v, float))
