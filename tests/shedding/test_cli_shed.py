"""``trimtab shed`` as a user runs it, on the files under examples/shedding."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app

EXAMPLES = Path(__file__).parents[2] / "examples" / "shedding"
ARGS = [
    "shed",
    "--inventory",
    str(EXAMPLES / "inventory.csv"),
    "--brokers",
    str(EXAMPLES / "node_metrics.csv"),
    "--bundles",
    str(EXAMPLES / "bundle_metrics.csv"),
]
runner = CliRunner()


def shed(*extra: str) -> str:
    result = runner.invoke(app, [*ARGS, *extra], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_one_cycle_of_the_transfer_shedder_waits_for_the_hit_count() -> None:
    """The first cycle only counts a hit (upstream needs four in a row)."""
    out = shed("--strategy", "transfer")
    assert "transfer shedder, 1 cycle" in out
    assert "HitCount" in out and "no transfers" in out
    assert "recommendation: Nothing to run: the transfer plan (the strategy named" in out


def test_balanced_is_recommended_beside_upstreams_plan() -> None:
    """No --strategy and no configured one: the plan is balanced's, and upstream's configured
    shedder (transfer) runs beside it on the same snapshot; --json carries both."""
    out = shed("--until-balanced")
    assert "balanced shedder" in out and "upstream's transfer shedder on the same snapshot" in out
    assert "recommendation: Run the balanced plan: its " in out
    doc = json.loads(shed("--until-balanced", "--json"))
    assert doc["strategy"] == "balanced"
    assert doc["recommendation"]["strategy"] == "balanced"
    assert doc["recommendation"]["explicit"] is False
    upstream = doc["upstream"]
    assert upstream["strategy"] == "transfer" and upstream["transfers"]
    assert upstream["std_before"] == pytest.approx(doc["std_before"])
    assert f"settle it at {upstream['std_after']:.3f}" in doc["recommendation"]["sentence"]


def test_a_configured_strategy_is_recommended_as_named(tmp_path: Path) -> None:
    """loadBalancerLoadSheddingStrategy written in the config is an explicit choice."""
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.AvgShedder\n"
    )
    doc = json.loads(shed("--until-balanced", "--json", "--config", str(conf)))
    assert doc["strategy"] == "avg" and doc["upstream"]["strategy"] == "avg"
    assert doc["recommendation"]["explicit"] is True


def test_json_has_the_documented_fields() -> None:
    """--json: std_before, std_after, decisions (label, reason, broker) and transfers."""
    doc = json.loads(shed("--until-balanced", "--json"))
    assert {"std_before", "std_after", "decisions", "transfers", "brokers", "rejected"} <= set(doc)
    assert doc["std_before"] == pytest.approx(0.252, abs=1e-3)
    assert doc["std_after"] < doc["std_before"]
    assert {"label", "reason", "broker"} <= set(doc["decisions"][0])
    transfer = doc["transfers"][0]
    assert set(transfer) == {
        "cycle",
        "bundle",
        "source",
        "destination",
        "throughput",
        "reason",
        "why",
    }
    # balanced (recommended): a spread of 40+ points acts after two hits, not four
    assert transfer["source"] == "broker1.example.net:8080" and transfer["cycle"] == 2
    assert transfer["destination"] == "broker6.example.net:8080"
    assert doc["rejected"] == []
    assert doc["warning"] is None  # the plan lowers the std


def test_progress_shows_the_phases_on_stderr_only(terminal_stderr: io.StringIO) -> None:
    """Reading the inputs (a day of bundle_metrics is a million rows), building the snapshot
    and shedding show as a progress line on stderr, erased at the end; nothing is drawn for
    --json or --format json, whose stdout is one JSON document."""
    people = runner.invoke(app, [*ARGS, "--until-balanced"], env={"COLUMNS": "200"})
    assert people.exit_code == 0, people.output
    drawn = terminal_stderr.getvalue()
    assert "reading the inventory" in drawn and "running the shedders" in drawn
    assert "reading the" not in people.stdout and "\x1b[" not in people.stdout
    assert "brokers (load = smoothed weighted max" in people.stdout
    for machines in (["--json"], ["--format", "json"]):
        terminal_stderr.seek(0)
        terminal_stderr.truncate()
        result = runner.invoke(app, [*ARGS, "--until-balanced", *machines])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["transfers"]
        assert terminal_stderr.getvalue() == ""


def test_balanced_strategy_and_pulsar_admin_lines() -> None:
    """--format pulsar-admin prints one command per move, nothing else on stdout."""
    out = shed("--strategy", "balanced", "--until-balanced", "--format", "pulsar-admin")
    script = out.strip().splitlines()
    # the script: each cycle's unloads under a comment, the shedder's pause between cycles
    lines = [line for line in script if not line.startswith(("#", "sleep "))]
    assert any(line.startswith("sleep ") for line in script)
    assert lines and all(line.startswith("pulsar-admin namespaces unload ") for line in lines)
    assert all("--destinationBroker " in line for line in lines)
    assert "--destinationBroker broker6.example.net:8080" in lines[0]  # the empty broker first


def test_unload_only_strategies_get_placed_destinations() -> None:
    """A ThresholdShedder unload is placed like a lookup (seeded), so the line has -d too."""
    doc = json.loads(shed("--strategy", "threshold", "--json"))
    assert all(t["destination"] for t in doc["transfers"])


def test_bad_rows_are_reported_not_dropped(tmp_path: Path) -> None:
    """A bad node_metrics row is listed with its line and reason; the rest is used."""
    metrics = tmp_path / "node_metrics.csv"
    shutil.copy(EXAMPLES / "node_metrics.csv", metrics)
    with metrics.open("a") as handle:
        handle.write(
            "2024-05-01T12:05:00Z,pulsar-eu,broker1.example.net:8080,85,0.4,0.2,1,1,1,1,1,1,1,1\n"
        )
    args = [*ARGS]
    args[4] = str(metrics)
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (rejected,) = doc["rejected"]
    assert rejected["line"] == 32 and "fractions" in rejected["reason"]


def test_unknown_cluster_is_a_one_line_error() -> None:
    """Errors a user can fix exit with status 2."""
    result = runner.invoke(app, [*ARGS, "--cluster", "nope"])
    assert result.exit_code == 2 and "no cluster 'nope'" in result.output


def test_now_can_be_given(tmp_path: Path) -> None:
    """--now far after the data makes every report stale: Skip/OutDatedData."""
    doc = json.loads(shed("--now", "2024-05-02T00:00:00Z", "--json"))
    assert doc["decisions"][-1]["reason"] == "OutDatedData"


def test_a_bundle_no_longer_reported_is_left_out_with_a_warning(tmp_path: Path) -> None:
    """A bundle last reported an hour before the newest sample (it moved, split or was
    deleted) is not in the snapshot: with loadBalancerBrokerLoadDataTTLInSeconds at its
    default (1800 s) the plan is the one without it and a warning names it; with a longer TTL
    it is a bundle like the others."""
    bundles = tmp_path / "bundle_metrics.csv"
    shutil.copy(EXAMPLES / "bundle_metrics.csv", bundles)
    gone = "acme/gone/0x00000000_0x10000000"
    with bundles.open("a") as handle:
        handle.write(f"2024-05-01T11:04:00Z,pulsar-eu,{gone},broker1.example.net:8080,1,1,1,1,1\n")
    args = [*ARGS]
    args[6] = str(bundles)
    plain = json.loads(shed("--strategy", "balanced", "--until-balanced", "--json"))
    result = runner.invoke(app, [*args, "--strategy", "balanced", "--until-balanced", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (warning,) = doc["warnings"]
    assert warning.startswith("1 bundle left out") and gone in warning
    assert "loadBalancerBrokerLoadDataTTLInSeconds (1800 s)" in warning
    assert doc["transfers"] == plain["transfers"]
    assert doc["brokers"][0]["bundles_before"] == 5
    text = runner.invoke(app, [*args, "--strategy", "balanced"], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and gone in text.output  # the warning, on stderr
    conf = tmp_path / "broker.conf"
    conf.write_text("loadBalancerBrokerLoadDataTTLInSeconds=7200\n")
    result = runner.invoke(app, [*args, "--config", str(conf), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["warnings"] == [] and doc["brokers"][0]["bundles_before"] == 6
