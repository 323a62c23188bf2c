"""Sweeps on local Spark give the direct simulators' numbers for the same seeds, and write
their tables, sweep.json and a self-contained sweep.html."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.config import Config, Strategy
from trimtab.errors import TrimtabError
from trimtab.pipeline.sweeps import SweepResult, SweepStep, run_sweep
from trimtab.shedding import shedder_for
from trimtab.sim.convergence import experiment_config, static_trial
from trimtab.sim.diskfill import SCENARIOS, DiskFillRun
from trimtab.sim.sweep import DiskFillSweep, SheddingSweep, parse_grid

runner = CliRunner()
SETUP = experiment_config(Config().shedding, target_std=0.15)
# The fixture's session is shared: a CLI run must not change its shuffle partitions.
KEEP_CONF = ["--conf", "spark.sql.shuffle.partitions=4"]


def rows(path: Path) -> list[dict[str, Any]]:
    table: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return table


@dataclass(frozen=True)
class Swept:
    out: Path
    result: SweepResult
    steps: list[SweepStep]


@pytest.fixture(scope="module")
def shedding(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Swept:
    """One small shedding sweep (2 sizes × 2 strategies × 3 trials, seed 5), made once."""
    out = tmp_path_factory.mktemp("sweep") / "out"
    sweep = SheddingSweep(
        sizes=(10, 40),
        strategies=(Strategy.TRANSFER, Strategy.BALANCED),
        trials=3,
        config=SETUP,
        seed=5,
    )
    steps: list[SweepStep] = []
    result = run_sweep(spark, sweep, str(out), progress=steps.append)
    return Swept(out, result, steps)


def test_shedding_sweep_equals_the_direct_simulator(shedding: Swept) -> None:
    """Every run equals static_trial for its (seed, size, trial); the summary's means equal
    `trimtab simulate shedding --seed` for the same sizes, strategies and trials."""
    out, result, steps = shedding.out, shedding.result, shedding.steps
    runs = rows(out / "runs")
    assert [r["task"] for r in runs] == list(range(12))
    for r in runs:
        direct = static_trial(
            r["brokers"],
            shedder_for(SETUP, r["strategy"]),
            np.random.default_rng([5, r["brokers"], r["trial"]]),
        )
        assert (r["transfers"], r["cycles"], r["bundles_moved"], r["reached"]) == (
            direct.transfers,
            direct.cycles,
            direct.bundles_moved,
            direct.reached,
        )
        assert (r["moved_bytes_per_s"], r["std_end"]) == (
            direct.moved_bytes_per_s,
            direct.std_end,
        )
    cli = runner.invoke(
        app,
        ["simulate", "shedding", "--brokers", "10,40", "--trials", "3", "--seed", "5", "--json"],
    )
    assert cli.exit_code == 0, cli.output
    simulated = json.loads(cli.stdout)["rows"]
    summary = rows(out / "summary")
    assert summary == result.summary
    assert [(s["brokers"], s["strategy"]) for s in summary] == [
        (r["brokers"], r["strategy"]) for r in simulated
    ]
    for got, want in zip(summary, simulated, strict=True):
        assert got["trials"] == want["trials"]
        assert got["pip_epochs"] == want["pip_epochs"]
        assert got["reached_share"] == want["reached_share"]
        for ours, theirs in (
            ("transfers_mean", "transfers_mean"),
            ("cycles_mean", "cycles_mean"),
            ("bundles_moved_mean", "bundles_mean"),
            ("moved_bytes_per_s_mean", "moved_bytes_per_s_mean"),
            ("moved_share_mean", "moved_share_mean"),
        ):
            assert got[ours] == pytest.approx(want[theirs], rel=1e-12), ours
        assert got["transfers_min"] <= got["transfers_p50"] <= got["transfers_max"]
    assert {s.phase for s in steps} == {"simulate", "summarise", "publish"}
    simulate = [s.stage for s in steps if s.phase == "simulate" and s.stage is not None]
    assert any(s.total == 12 and s.done == 12 for s in simulate), "one Spark task per run"


def test_diskfill_sweep_equals_simulate_diskfill(spark: SparkSession, tmp_path: Path) -> None:
    """Every (setting, trial) equals `trimtab simulate diskfill` with that setting's options
    and seed SEED + trial; the page shows usable capacity per setting."""
    nodes, workload, policy = SCENARIOS["seed"]
    sweep = DiskFillSweep(
        base=DiskFillRun(nodes=nodes, workload=workload, policy=policy, sample_every=100),
        grid=parse_grid("weights=off,disk;sampling=successive,proportional"),
        trials=2,
        seed=3,
        cluster="scenario seed",
    )
    result = run_sweep(spark, sweep, str(tmp_path / "out"))
    runs = rows(tmp_path / "out" / "runs")
    assert len(runs) == 3 * 2
    figures = (
        "usable_fraction_at_first_readonly",
        "max_write_share",
        "first_readonly_node",
        "first_readonly_time",
        "ledgers",
        "stored_bytes",
    )
    for r in runs:
        options = ["--weights", r["weights"], "--seed", str(r["seed"])]
        if r["weights"] != "off":
            options += ["--sampling", r["sampling"]]
        cli = runner.invoke(app, ["simulate", "diskfill", "--scenario", "seed", *options, "--json"])
        assert cli.exit_code == 0, cli.output
        direct = json.loads(cli.stdout)
        assert {k: r[k] for k in figures} == {k: direct[k] for k in figures}, r["label"]
    labels = [s["label"] for s in result.summary]
    assert labels == [
        "weights=off",
        "weights=disk sampling=successive",
        "weights=disk sampling=proportional",
    ]
    by = {s["label"]: s for s in result.summary}
    off = by["weights=off"]["usable_fraction_at_first_readonly_mean"]
    weighted = by["weights=disk sampling=proportional"]
    assert weighted["usable_fraction_at_first_readonly_mean"] > off
    page = (tmp_path / "out" / "sweep.html").read_text()
    assert "Usable capacity when the first node turns read-only" in page
    for label in labels:
        assert f"<td>{label}</td>" in page


def test_sweep_page_is_self_contained(shedding: Swept) -> None:
    """sweep.html has its charts inline, no script, no external reference, a fetch-forbidding
    CSP, and the PIP's numbers beside the sweep's; sweep.json holds the same summary."""
    page = (shedding.out / "sweep.html").read_text()
    assert page.count("<svg") >= 3
    assert "<script" not in page and "<link" not in page and " src=" not in page
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in page
    assert "Transfers against PIP-220" in page and "PIP-220" in page
    assert '<td class="num">10</td><td class="num">3</td>' in page  # brokers, PIP epochs
    doc = json.loads((shedding.out / "sweep.json").read_text())
    assert doc["summary"] == json.loads(json.dumps(shedding.result.summary))
    assert doc["sweep"]["sizes"] == [10, 40] and doc["tasks"] == 12


def test_cli_json_summary(spark: SparkSession, tmp_path: Path) -> None:
    """`trimtab sweep shedding --json` prints the machine summary and writes the outputs."""
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "sweep",
            "shedding",
            "--output",
            str(out),
            "--brokers",
            "10",
            "--strategies",
            "transfer,balanced",
            "--trials",
            "2",
            "--pairs-per-cycle",
            "1",
            *KEEP_CONF,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["tasks"] == 4 and doc["output"].endswith("/out")
    assert doc["sweep"]["pairs_per_cycle"] == 1
    assert [(r["brokers"], r["strategy"], r["trials"]) for r in doc["summary"]] == [
        (10, "transfer", 2),
        (10, "balanced", 2),
    ]
    assert doc["simulations_per_s"] > 0 and set(doc["timings_s"]) >= {"simulate", "summarise"}
    written = {p.name for p in out.iterdir() if not p.name.startswith(".")}  # .crc: checksums
    assert written == {"runs", "summary", "sweep.json", "sweep.html"}


def test_cli_grid_error_names_the_key_and_the_fix(tmp_path: Path) -> None:
    """A misspelt grid key stops the command (exit 2) before Spark, with the right key."""
    result = runner.invoke(
        app,
        [
            "sweep",
            "diskfill",
            "--scenario",
            "seed",
            "--output",
            str(tmp_path / "out"),
            "--grid",
            "weights=off,disk;sampling=proportional;caps=0,3",
        ],
    )
    assert result.exit_code == 2
    assert "unknown key 'caps'; did you mean 'cap'?" in result.output
    assert not (tmp_path / "out").exists()


def test_output_names_spark_would_read_as_globs_are_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    """An output with [ ] { } * ? in its name is refused before any work, with the reason."""
    sweep = SheddingSweep(sizes=(10,), strategies=(Strategy.TRANSFER,), trials=1, config=SETUP)
    with pytest.raises(TrimtabError, match="glob patterns"):
        run_sweep(spark, sweep, str(tmp_path / "out[1]"))
    assert not list(tmp_path.iterdir())
