"""The convergence simulators: PIP-220's epochs table, balanced vs transfer, a living cluster."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.config import Config
from trimtab.shedding import shedder_for
from trimtab.sim.convergence import PIP_EPOCHS, experiment_config, static_experiment, static_trial
from trimtab.sim.shedding_cluster import ClusterScenario, run_cluster

PIP = experiment_config(Config().shedding, target_std=0.15, pairs_per_cycle=1)
runner = CliRunner()


# Trials per size: the count of transfers has a spread of about 1 at 10-20 brokers, 1.5 at 40
# and 2-3 at 100-200 (measured), so these trial counts keep the standard error of the mean
# (spread / sqrt(trials)) at 0.07-0.8, under a fifth of each tolerance (1 transfer below 40
# brokers, 10 % from 40 up). The seed is fixed, so the test is deterministic.
TRIALS = {10: 200, 20: 200, 40: 60, 100: 30, 200: 12}


@pytest.mark.parametrize("brokers", sorted(TRIALS), ids=lambda n: f"{n} brokers")
def test_transfer_shedder_reproduces_the_pip_epochs_table(brokers: int) -> None:
    """One transfer per epoch, loads uniform in [0, 1], target std 0.15: the PIP's numbers
    (3, 5, 8, 19, 36) within one transfer below 40 brokers and within 10 % from 40 up."""
    (row,) = static_experiment([brokers], ["transfer"], trials=TRIALS[brokers], config=PIP, seed=7)
    expected = PIP_EPOCHS[brokers]
    assert row.reached_share == 1.0
    if brokers < 40:
        assert abs(row.transfers_mean - expected) <= 1.0
    else:
        assert abs(row.transfers_mean - expected) <= 0.1 * expected
    assert row.cycles_mean == row.transfers_mean, "one transfer per cycle"


def test_three_pairs_per_cycle_need_a_third_of_the_cycles() -> None:
    """Upstream's 3 pairs per cycle: about the same transfers in about epochs / 3 cycles."""
    setup = experiment_config(Config().shedding, target_std=0.15, pairs_per_cycle=3)
    (row,) = static_experiment([100], ["transfer"], trials=20, config=setup, seed=7)
    assert row.transfers_mean == pytest.approx(PIP_EPOCHS[100], rel=0.1)
    assert row.cycles_mean == pytest.approx(PIP_EPOCHS[100] / 3, rel=0.15)


def test_balanced_needs_a_tenth_of_the_cycles_without_moving_more() -> None:
    """At 200 brokers balanced reaches the target in at most a tenth of the TransferShedder's
    cycles (upstream's 3 pairs per cycle), moving no more traffic."""
    setup = experiment_config(Config().shedding, target_std=0.15)
    rows = static_experiment([200], ["transfer", "balanced"], trials=6, config=setup, seed=3)
    transfer, balanced = rows
    assert balanced.reached_share == 1.0
    assert balanced.cycles_mean <= transfer.cycles_mean / 10
    assert balanced.moved_bytes_per_s_mean <= transfer.moved_bytes_per_s_mean


def test_upstream_timers_stretch_each_round() -> None:
    """With the hit count (4 cycles) and the 180 s cooldown, a round takes several minutes."""
    setup = experiment_config(Config().shedding, target_std=0.15, timers=True)
    fast = static_trial(40, shedder_for(PIP), np.random.default_rng(1))
    slow = static_trial(40, shedder_for(setup), np.random.default_rng(1))
    assert slow.reached and slow.cycles >= 4 * math.ceil(fast.transfers / 3)


def test_static_trials_are_reproducible() -> None:
    """The same seed gives the same run."""
    shedder = shedder_for(PIP)
    assert static_trial(20, shedder, np.random.default_rng(5)) == static_trial(
        20, shedder, np.random.default_rng(5)
    )


SMALL = ClusterScenario(
    brokers=12, bundles_per_broker=15, hours=4, join_at_minute=60, leave_at_minute=150
)


def test_living_cluster_balanced_settles_sooner_with_fewer_unloads() -> None:
    """Mixed hardware, diurnal drift, a flaky bundle, a join and a leave: balanced settles
    at the start far sooner than the TransferShedder and unloads less (63 against 83 on this
    draw; 545 against 565 over eight draws, in docs/benchmarks.md)."""
    cfg = Config().shedding
    transfer = run_cluster("transfer", cfg, SMALL)
    balanced = run_cluster("balanced", cfg, SMALL)
    assert len(transfer.std) == len(balanced.std) == 4 * 60
    assert set(balanced.balance_minutes) == {"start", "join", "leave"}
    start_b, start_t = balanced.balance_minutes["start"], transfer.balance_minutes["start"]
    assert start_b is not None and (start_t is None or start_b < start_t)
    assert balanced.unloads <= transfer.unloads
    assert balanced.unloads_per_hour == balanced.unloads / 4


def test_living_cluster_runs_are_reproducible() -> None:
    """The scenario seed fixes traffic, placement and events."""
    cfg = Config().shedding
    short = ClusterScenario(
        brokers=6, bundles_per_broker=5, hours=1, join_at_minute=20, leave_at_minute=40
    )
    assert run_cluster("threshold", cfg, short) == run_cluster("threshold", cfg, short)


def test_living_cluster_reports_each_minute_without_changing_the_run() -> None:
    """on_minute is called once per simulated minute; the run is the same without it."""
    cfg = Config().shedding
    short = ClusterScenario(brokers=6, bundles_per_broker=5, hours=0.5)
    minutes: list[None] = []
    seen = run_cluster("balanced", cfg, short, on_minute=lambda: minutes.append(None))
    assert len(minutes) == 30 and seen == run_cluster("balanced", cfg, short)


class TestCommand:
    def test_json_rows(self) -> None:
        """simulate shedding --json prints {"rows": [{brokers, strategy, transfers_mean, ...}]}."""
        result = runner.invoke(
            app, ["simulate", "shedding", "--brokers", "10,20", "--trials", "3", "--json"]
        )
        assert result.exit_code == 0, result.output
        rows = json.loads(result.output)["rows"]
        assert [(r["brokers"], r["strategy"]) for r in rows] == [
            (10, "transfer"),
            (10, "balanced"),
            (20, "transfer"),
            (20, "balanced"),
        ]
        assert {"transfers_mean", "cycles_mean", "pip_epochs"} <= set(rows[0])
        assert rows[0]["pip_epochs"] == 3

    def test_table_for_people(self) -> None:
        """The people's view shows the PIP column next to the means."""
        result = runner.invoke(
            app,
            ["simulate", "shedding", "--brokers", "10", "--trials", "2", "--pairs-per-cycle", "1"],
            env={"COLUMNS": "160"},
        )
        assert result.exit_code == 0, result.output
        assert "epochs to reach std" in result.output and "PIP" in result.output

    def test_dynamic_json(self) -> None:
        """--dynamic runs the living cluster and reports its figures."""
        result = runner.invoke(
            app,
            [
                "simulate",
                "shedding",
                "--brokers",
                "6",
                "--dynamic",
                "--hours",
                "0.5",
                "--strategy",
                "balanced",
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        (run,) = json.loads(result.output)["runs"]
        assert run["strategy"] == "balanced" and len(run["std"]) == 30

    @pytest.mark.parametrize(
        "dynamic",
        [
            pytest.param(["--brokers", "10", "--trials", "2"], id="static"),
            pytest.param(["--brokers", "6", "--dynamic", "--hours", "0.5"], id="dynamic"),
        ],
    )
    def test_progress_on_stderr_only_and_never_with_json(
        self, dynamic: list[str], terminal_stderr: io.StringIO
    ) -> None:
        """Both experiments draw their progress on stderr (erased at the end), none with --json;
        stdout holds the table or the JSON document alone."""
        people = runner.invoke(app, ["simulate", "shedding", *dynamic])
        assert people.exit_code == 0, people.output
        assert "simulating" in terminal_stderr.getvalue() and "100%" in terminal_stderr.getvalue()
        assert "simulating" not in people.stdout and "\x1b[" not in people.stdout
        assert "strategy" in people.stdout
        terminal_stderr.seek(0)
        terminal_stderr.truncate()
        machines = runner.invoke(app, ["simulate", "shedding", *dynamic, "--json"])
        assert machines.exit_code == 0, machines.output
        assert json.loads(machines.stdout)
        assert terminal_stderr.getvalue() == ""

    @pytest.mark.parametrize(
        "args",
        [
            pytest.param(["--brokers", "ten"], id="sizes not numbers"),
            pytest.param(["--brokers", "10", "--strategy", "magic"], id="unknown strategy"),
        ],
    )
    def test_bad_options_are_one_line_errors(self, args: list[str]) -> None:
        """Exit status 2 with the reason."""
        result = runner.invoke(app, ["simulate", "shedding", *args])
        assert result.exit_code == 2 and "error" in result.output
