"""The disk-fill simulator: the seed's quick-model figures, the defaults' goal, joins, failures
and the recovery pacing."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.sim.diskfill import (
    GB,
    MONTH,
    PROGRESS_EVERY,
    SCENARIOS,
    USABLE_COUNTS,
    DiskFillRun,
    Failure,
    Join,
    NodeSpec,
    recovery_pause,
    run_diskfill,
)


def seed_run(**changes: object) -> DiskFillRun:
    nodes, workload, policy = SCENARIOS["seed"]
    run = DiskFillRun(nodes=nodes, workload=workload, policy=policy, sample_every=500)
    return replace(run, **changes)  # type: ignore[arg-type]


class TestSeedCluster:
    @pytest.mark.parametrize(
        ("weights", "sampling", "low", "high"),
        [
            ("off", "proportional", 0.55, 0.61),  # quick model: ~58 %
            ("disk", "successive", 0.90, 0.95),  # quick model: ~92 %
            ("disk", "proportional", 0.99, 1.0),  # quick model: > 99 %
        ],
    )
    def test_quick_model_figures(
        self, weights: str, sampling: str, low: float, high: float
    ) -> None:
        """Free space refreshed every ledger: uniform ~58 %, successive ~92 %, proportional
        > 99 % of the physical limit (the issue's quick model)."""
        r = run_diskfill(seed_run(weights=weights, sampling=sampling, refresh_seconds=None))
        assert r.usable_fraction_at_first_readonly is not None
        assert low <= r.usable_fraction_at_first_readonly <= high

    def test_defaults_reach_97_percent_with_a_daily_refresh(self) -> None:
        """Default settings (proportional, cap 3 x median, getBookieInfoIntervalSeconds 1 day)."""
        r = run_diskfill(seed_run())
        assert r.usable_fraction_at_first_readonly is not None
        assert r.usable_fraction_at_first_readonly >= 0.97
        assert r.first_readonly_node is not None and r.first_readonly_time is not None

    def test_time_series_samples_every_node(self) -> None:
        """The fill series has one row per node per sample, fractions within [0, 1]."""
        r = run_diskfill(seed_run())
        assert len(r.series["node"]) == len(r.series["time"]) == len(r.series["used_fraction"])
        assert len(set(r.series["node"])) == 6
        assert all(0.0 <= float(f) <= 1.0 for f in r.series["used_fraction"])


class TestProgress:
    def test_progress_counts_ledgers_and_fills_to_one_without_changing_the_run(self) -> None:
        """progress(ledgers, fill): every PROGRESS_EVERY ledgers, then once at the end with the
        result's ledger count and 1.0 (a node turned read-only); fill never goes back."""
        calls: list[tuple[int, float]] = []
        with_progress = run_diskfill(seed_run(), progress=lambda n, f: calls.append((n, f)))
        assert with_progress == run_diskfill(seed_run())
        *steps, last = calls
        assert [n for n, _ in steps] == [
            PROGRESS_EVERY * (i + 1) for i in range(with_progress.ledgers // PROGRESS_EVERY)
        ]
        fills = [f for _, f in calls]
        assert fills == sorted(fills) and 0.0 < fills[0] < 1.0
        assert last == (with_progress.ledgers, 1.0)

    def test_fill_starts_where_the_fullest_node_is(self) -> None:
        """Nodes already 80 % of the way to read-only: the first report is at least that."""
        nodes = tuple(replace(n, used=int(0.8 * 0.95 * n.capacity)) for n in seed_run().nodes)
        calls: list[float] = []
        run_diskfill(seed_run(nodes=nodes), progress=lambda _, f: calls.append(f))
        assert calls[0] >= 0.8 and calls[-1] == 1.0


class TestFleet:
    def test_defaults_reach_97_percent_on_the_mixed_fleet(self) -> None:
        """60 nodes of 4/8/16 TB in three racks, rack-aware, daily refresh (ledgers twice the
        bench's size to keep the test short)."""
        nodes, workload, policy = SCENARIOS["fleet"]
        run = DiskFillRun(
            nodes=nodes,
            workload=replace(workload, mean_bytes=12 * GB, rate=workload.rate / 2),
            policy=policy,
            sample_every=10**9,
        )
        r = run_diskfill(run)
        assert r.usable_fraction_at_first_readonly is not None
        assert r.usable_fraction_at_first_readonly >= 0.97


class TestEvents:
    def test_a_joining_empty_node_never_weighs_more_than_its_cap(self) -> None:
        """A 1 TB empty node joining the half-full seed cluster is capped at 3 x median."""
        joiner = NodeSpec("new:3181", "/default-rack", 1000 * GB)
        r = run_diskfill(seed_run(joins=(Join(MONTH / 2, joiner),)))
        assert r.joined_max_weight_share is not None and r.joined_cap_share is not None
        assert r.joined_max_weight_share <= r.joined_cap_share + 1e-12
        uncapped = run_diskfill(seed_run(joins=(Join(MONTH / 2, joiner),), cap=-1))
        assert uncapped.joined_max_weight_share is not None
        assert uncapped.joined_max_weight_share > r.joined_max_weight_share

    def test_a_failed_nodes_ledgers_are_re_replicated(self) -> None:
        """b5 fails at day 15: its ledgers move elsewhere and recovery takes positive time."""
        r = run_diskfill(seed_run(failures=(Failure(MONTH / 2, "b5:3181"),)))
        assert r.recovered_ledgers > 0
        assert r.recovery_seconds is not None and r.recovery_seconds > 0
        assert r.first_readonly_node != "b5:3181"

    def test_load_aware_weights_run(self) -> None:
        """Load-aware weighting still fills the cluster to a sensible fraction."""
        r = run_diskfill(seed_run(weights="disk+load", disk_bandwidth=130e3))
        assert r.usable_fraction_at_first_readonly is not None
        assert 0.58 < r.usable_fraction_at_first_readonly <= 1.0


class TestPartlyFull:
    def test_bytes_already_stored_count_towards_the_usable_fraction(self) -> None:
        """Disks half full at the start: what they held counts as stored, so proportional
        weights refreshed every ledger still reach ~100 % of the physical limit (counting
        only the bytes placed, the run could never pass ~50 %)."""
        nodes = tuple(replace(n, used=n.capacity // 2) for n in seed_run().nodes)
        r = run_diskfill(seed_run(nodes=nodes, refresh_seconds=None))
        assert r.initial_bytes == sum(n.used for n in nodes) == 500 * GB
        assert r.usable_fraction_at_first_readonly is not None
        assert r.usable_fraction_at_first_readonly >= 0.98
        assert r.stored_bytes > r.initial_bytes
        figures = r.figures()
        assert figures["initial_bytes"] == 500 * GB and figures["usable_counts"] == USABLE_COUNTS

    def test_an_empty_cluster_has_nothing_stored_at_the_start(self) -> None:
        """initial_bytes is 0 on the built-in scenarios, whose figures stay as they were."""
        assert run_diskfill(seed_run()).initial_bytes == 0


class TestRecoveryPause:
    def test_heavier_nodes_pause_less(self) -> None:
        """The heaviest node does not pause; an empty-weight one pauses the full base."""
        assert recovery_pause(100, 100, 2.0) == 0.0
        assert recovery_pause(0, 100, 2.0) == 2.0
        assert recovery_pause(25, 100, 2.0) > recovery_pause(75, 100, 2.0)


class TestCommand:
    def test_scenario_json_and_parquet_series(self, tmp_path: Path) -> None:
        """``trimtab simulate diskfill --scenario seed --json --out DIR`` prints the figures and
        writes the fill series."""
        result = CliRunner().invoke(
            app, ["simulate", "diskfill", "--scenario", "seed", "--json", "--out", str(tmp_path)]
        )
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["usable_fraction_at_first_readonly"] >= 0.97
        assert {"max_write_share", "first_readonly_node", "first_readonly_time"} <= set(doc)
        assert (tmp_path / "diskfill_series.parquet").stat().st_size > 0

    def test_inventory_with_free_space(self, tmp_path: Path) -> None:
        """An inventory's disk_total_bytes and disk_free_bytes become the simulated disks."""
        rows = [
            "cluster,node,region,rack,cores,memory_bytes,disk_total_bytes,nic_bps,state,"
            "disk_free_bytes"
        ]
        for i, (gb, free) in enumerate([(100, 100), (200, 150), (300, 300), (100, 80)]):
            rows.append(
                f"c,b{i}:3181,dc1,r{i % 2},8,{2**36},{gb * GB},{10**10},writable,{free * GB}"
            )
        inv = tmp_path / "nodes.csv"
        inv.write_text("\n".join(rows) + "\n")
        result = CliRunner().invoke(
            app, ["simulate", "diskfill", "-i", str(inv), "--policy", "default", "--json"]
        )
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["first_readonly_node"] is not None

    def test_a_partly_full_inventory_reaches_the_physical_limit(self, tmp_path: Path) -> None:
        """An inventory whose disks are already 40 % full: --json reports the bytes already
        stored and what the usable fraction counts, and the fraction reaches ~100 %; the
        table says how much was already on the disks."""
        rows = [
            "cluster,node,region,rack,cores,memory_bytes,disk_total_bytes,nic_bps,state,"
            "disk_free_bytes"
        ]
        for i, gb in enumerate([100, 100, 200, 200, 300, 100]):  # the seed's disks
            free = gb * 6 // 10 * GB
            rows.append(f"c,b{i}:3181,dc1,r{i % 2},8,{2**36},{gb * GB},{10**10},writable,{free}")
        inv = tmp_path / "nodes.csv"
        inv.write_text("\n".join(rows) + "\n")
        command = ["simulate", "diskfill", "-i", str(inv), "--policy", "default", "--refresh", "0"]
        result = CliRunner().invoke(app, [*command, "--json"])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["initial_bytes"] == 400 * GB
        assert doc["usable_counts"] == USABLE_COUNTS
        assert doc["usable_fraction_at_first_readonly"] >= 0.98
        table = CliRunner().invoke(app, command, env={"COLUMNS": "200"})
        assert table.exit_code == 0, table.output
        assert "already on the disks" in table.stdout

    def test_the_people_view_is_a_table_of_the_setting_and_the_figures(self) -> None:
        """No key: value lines: a table with the setting, then usable capacity, the first
        read-only node, ledgers, bytes and the hot spot."""
        result = CliRunner().invoke(
            app,
            ["simulate", "diskfill", "--scenario", "seed", "--cap-mode", "min", "--refresh", "0"],
            env={"COLUMNS": "120"},
        )
        assert result.exit_code == 0, result.output
        doc = json.loads(
            CliRunner()
            .invoke(
                app,
                [
                    *("simulate", "diskfill", "--scenario", "seed", "--cap-mode", "min"),
                    *("--refresh", "0", "--json"),
                ],
            )
            .stdout
        )
        text = result.stdout
        assert "scenario seed: 6 writable nodes, 1.00 TB raw" in text
        for setting in ("default", "disk, proportional sampling", "3× the smallest weight"):
            assert setting in text
        assert "before every ledger" in text
        usable = f"{doc['usable_fraction_at_first_readonly']:.2%}"
        assert f"│ usable capacity at first read-only │ {usable}" in text
        assert f"{doc['first_readonly_node']} after " in text
        assert "│ ledgers placed" in text and f"{doc['ledgers']:,}" in text
        assert "largest write share (hot spot)" in text
        assert "usable_fraction_at_first_readonly:" not in text  # the old key: value lines

    def test_json_says_what_ran(self) -> None:
        """--json adds the setting to the figures: cluster, policy, weights, cap, refresh."""
        result = CliRunner().invoke(
            app, ["simulate", "diskfill", "--scenario", "seed", "--weights", "off", "--json"]
        )
        assert result.exit_code == 0, result.output
        setting = json.loads(result.stdout)["setting"]
        assert setting == {
            "cluster": "scenario seed",
            "nodes": 6,
            "raw_bytes": 1000 * GB,
            "policy": "default",
            "weights": "off",
            "sampling": "proportional",
            "cap": 3,
            "cap_mode": "median",
            "refresh_seconds": 86_400.0,
            "threshold": 0.95,
            "seed": 1,
        }

    def test_progress_on_stderr_only_and_never_with_json(
        self, terminal_stderr: io.StringIO
    ) -> None:
        """On a terminal the fill shows as a progress bar on stderr, erased at the end; stdout
        holds the table alone. With --json nothing is drawn and stdout is one JSON document."""
        people = CliRunner().invoke(app, ["simulate", "diskfill", "--scenario", "seed"])
        assert people.exit_code == 0, people.output
        drawn = terminal_stderr.getvalue()
        assert "filling: " in drawn and "ledgers, fullest node" in drawn and "100%" in drawn
        assert "filling" not in people.stdout and "\x1b[" not in people.stdout
        assert "usable capacity at first read-only" in people.stdout
        terminal_stderr.seek(0)
        terminal_stderr.truncate()
        machines = CliRunner().invoke(app, ["simulate", "diskfill", "--scenario", "seed", "--json"])
        assert machines.exit_code == 0, machines.output
        assert json.loads(machines.stdout)["ledgers"] > 0
        assert terminal_stderr.getvalue() == ""
