"""Sweep tasks and the diskfill grid, without Spark: parsing, expansion, seeds, runs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from trimtab.config import CapBasis, Config, PolicyName, Sampling, Strategy, WeightsMode
from trimtab.errors import ConfigError
from trimtab.report.sweep import sweep_page
from trimtab.shedding import shedder_for
from trimtab.sim.convergence import experiment_config, static_trial
from trimtab.sim.diskfill import SCENARIOS, USABLE_COUNTS, DiskFillRun
from trimtab.sim.sweep import DiskFillSetting, DiskFillSweep, SheddingSweep, parse_grid

SETUP = experiment_config(Config().shedding, target_std=0.15)


class TestParseGrid:
    def test_every_combination_in_the_order_written(self) -> None:
        """Dimensions multiply out, the first key varying slowest, values in written order."""
        grid = parse_grid("sampling=successive,proportional;cap=0,2")
        assert grid.keys == ("sampling", "cap")
        assert [(s.sampling, s.cap) for s in grid.settings] == [
            ("successive", 0),
            ("successive", 2),
            ("proportional", 0),
            ("proportional", 2),
        ]
        assert grid.label(grid.settings[1]) == "sampling=successive cap=2"

    def test_weights_off_runs_once_whatever_the_cap_and_sampling(self) -> None:
        """With weights off the cap and sampling cannot matter: 12 combinations, 7 settings."""
        grid = parse_grid("weights=off,disk;cap=0,2,3;sampling=successive,proportional")
        assert grid.combinations == 12
        assert len(grid.settings) == 7
        off = grid.settings[0]
        assert (off.weights, off.cap, off.sampling, off.cap_mode) == ("off", None, None, None)
        assert grid.label(off) == "weights=off"

    def test_unlisted_dimensions_keep_simulate_diskfills_defaults(self) -> None:
        """A one-key grid changes that key only: weights disk, proportional, 3x median, 24 h."""
        (setting,) = parse_grid("cap=5").settings
        assert setting == DiskFillSetting(cap=5)
        assert setting.refresh == 86_400.0 and setting.policy is None

    def test_config_key_names_stand_for_their_grid_keys(self) -> None:
        """Upstream and trimtab config names work, with the config's value spellings."""
        grid = parse_grid(
            "diskWeightBasedPlacementEnabled=false,true;"
            "bookieMaxMultipleForWeightBasedPlacement=2;"
            "weight_cap_basis=minimum;"
            "ensemblePlacementPolicy=org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy"
        )
        assert grid.keys == ("weights", "cap", "cap-mode", "policy")
        off, disk = grid.settings
        assert off.weights == "off"
        assert (disk.weights, disk.cap, disk.cap_mode, disk.policy) == (
            "disk",
            2,
            "minimum",
            "rackaware",
        )

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("weight=off,disk", "unknown key 'weight'; did you mean 'weights'?"),
            ("capmode=min", "unknown key 'capmode'; did you mean 'cap-mode'?"),
            (
                "bookieMaxMultiple=2",
                "did you mean 'bookieMaxMultipleForWeightBasedPlacement'?",
            ),
            ("sampling=proportionnal", "choose successive, proportional; did you mean"),
            ("weights=of", "--grid weights='of': choose off, disk, disk+load"),
            ("cap=two", "--grid cap='two': a whole number"),
            ("refresh=-5", "seconds >= 0"),
            ("getBookieInfoIntervalSeconds=0", "a number >= 1"),
            ("cap 0,2", "write key=value,value"),
            ("cap=", "no values"),
            ("", "--grid is empty"),
            ("cap=1;cap=2", "sets cap twice"),
            ("cap=1;bookieMaxMultipleForWeightBasedPlacement=2", "sets cap twice"),
            ("cap-mode=min,minimum", "'minimum' repeats a value"),
        ],
        ids=[
            "a misspelt key is named with the right one",
            "separators are forgiven in the suggestion",
            "a config name cut short is completed",
            "a misspelt value is named with the right one",
            "a value outside the choices lists them",
            "the cap must be a whole number",
            "the refresh cannot be negative",
            "config names keep the config's own checks",
            "a part without = shows the syntax",
            "a key needs values",
            "an empty grid shows the syntax",
            "a key cannot be given twice",
            "nor under two names",
            "nor can a value, under two spellings",
        ],
    )
    def test_bad_grids_are_errors_that_say_what_to_write(self, text: str, message: str) -> None:
        """Each mistake is a ConfigError naming the key or value, with the fix."""
        with pytest.raises(ConfigError) as caught:
            parse_grid(text)
        assert message in str(caught.value)


class TestSettings:
    def test_apply_maps_options_as_simulate_diskfill_does(self) -> None:
        """cap-mode min is the minimum basis, refresh 0 is every ledger, the seed is set."""
        base = DiskFillRun(nodes=SCENARIOS["seed"][0], policy=PolicyName.DEFAULT)
        run = DiskFillSetting(
            weights=WeightsMode.DISK_LOAD,
            sampling=Sampling.SUCCESSIVE,
            cap=0,
            cap_mode=CapBasis.MINIMUM,
            refresh=0,
        ).apply(base, seed=9)
        assert (run.weights, run.sampling, run.cap, run.cap_basis) == (
            "disk+load",
            "successive",
            0,
            "minimum",
        )
        assert run.refresh_seconds is None and run.seed == 9 and run.policy == "default"

    def test_diskfill_trial_t_runs_seed_plus_t(self) -> None:
        """Trial 0 is `simulate diskfill --seed SEED`; trial t uses SEED + t."""
        sweep = DiskFillSweep(
            base=DiskFillRun(nodes=SCENARIOS["seed"][0]),
            grid=parse_grid("weights=off,disk"),
            trials=3,
            seed=4,
        )
        tasks = sweep.tasks()
        assert [(t["task"], t["setting"], t["seed"]) for t in tasks] == [
            (0, 0, 4),
            (1, 0, 5),
            (2, 0, 6),
            (3, 1, 4),
            (4, 1, 5),
            (5, 1, 6),
        ]
        assert tasks[0]["cap"] is None and tasks[3]["cap"] == 3


class TestSheddingSweep:
    def test_tasks_follow_static_experiments_order(self) -> None:
        """Size, then strategy, then trial; the PIP's number rides along with its size."""
        sweep = SheddingSweep(
            sizes=(10, 30),
            strategies=(Strategy.TRANSFER, Strategy.BALANCED),
            trials=2,
            config=SETUP,
        )
        tasks = sweep.tasks()
        assert [(t["brokers"], t["strategy"], t["trial"], t["setting"]) for t in tasks][:3] == [
            (10, "transfer", 0, 0),
            (10, "transfer", 1, 0),
            (10, "balanced", 0, 1),
        ]
        assert {t["pip_epochs"] for t in tasks if t["brokers"] == 10} == {3}
        assert {t["pip_epochs"] for t in tasks if t["brokers"] == 30} == {None}

    def test_a_task_draws_the_cluster_the_direct_trial_draws(self) -> None:
        """run() equals static_trial with default_rng([seed, brokers, trial])."""
        sweep = SheddingSweep(
            sizes=(20,), strategies=(Strategy.TRANSFER,), trials=2, config=SETUP, seed=3
        )
        got = sweep.run(sweep.tasks()[1])
        want = static_trial(20, shedder_for(SETUP, "transfer"), np.random.default_rng([3, 20, 1]))
        assert (got["transfers"], got["cycles"], got["std_end"]) == (
            want.transfers,
            want.cycles,
            want.std_end,
        )
        assert got["moved_share"] == want.moved_bytes_per_s / (20 * 0.5 * 1e9)


class TestPartlyFullBase:
    def test_describe_says_what_was_already_stored(self) -> None:
        """A sweep over a partly full cluster says how much the disks held at the start and
        that the usable fraction counts it (sweep.json's sweep block)."""
        nodes = tuple(replace(n, used=n.capacity // 4) for n in SCENARIOS["seed"][0])
        sweep = DiskFillSweep(
            base=DiskFillRun(nodes=nodes), grid=parse_grid("weights=off"), trials=1
        )
        described = sweep.describe()
        assert described["initial_bytes"] == sum(n.capacity // 4 for n in nodes)
        assert described["usable_counts"] == USABLE_COUNTS
        page = sweep_page(
            {
                "sweep": described,
                "summary": [],
                "tasks": 0,
                "run_id": "r",
                "simulations_per_s": 0.0,
            }
        )
        assert "250.00 GB already stored, counted as stored" in page
