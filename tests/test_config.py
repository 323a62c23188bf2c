"""The typed config: upstream names and defaults, files, and the errors users see."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from trimtab.config import Config
from trimtab.config.loader import read_config
from trimtab.errors import ConfigError, ConfigValueError, UnknownConfigKeyError


class TestDefaults:
    @pytest.mark.parametrize(
        ("upstream", "value"),
        [
            ("ensemblePlacementPolicy", "rackaware"),
            ("reppDnsResolverClass", "script"),
            ("networkTopologyScriptNumberArgs", 100),
            ("minNumRacksPerWriteQuorum", 2),
            ("enforceMinNumRacksPerWriteQuorum", False),
            ("enforceMinNumFaultDomainsForWrite", False),
            ("reorderReadSequenceEnabled", True),
            ("networkTopologyStabilizePeriodSeconds", 0),
            ("bookieFailureHistoryExpirationMSec", 60_000),
            ("reppMinimumRegionsForDurability", 2),
            ("diskWeightBasedPlacementEnabled", False),
            ("bookieMaxMultipleForWeightBasedPlacement", 3),
            ("getBookieInfoIntervalSeconds", 86_400),
            ("getBookieInfoRetryIntervalSeconds", 60),
            ("getBookieInfoTimeoutSecs", 5),
            ("loadBalancerBrokerLoadTargetStd", 0.25),
            ("loadBalancerSheddingConditionHitCountThreshold", 3),
            ("loadBalancerMaxNumberOfBrokerSheddingPerCycle", 3),
            ("loadBalanceSheddingDelayInSeconds", 180),
            ("loadBalancerBrokerLoadDataTTLInSeconds", 1800),
            ("loadBalancerHistoryResourcePercentage", 0.9),
            ("loadBalancerCPUResourceWeight", 1.0),
            ("loadBalancerMemoryResourceWeight", 0.0),
            ("loadBalancerDirectMemoryResourceWeight", 0.0),
            ("loadBalancerBandwidthInResourceWeight", 1.0),
            ("loadBalancerMaxNumberOfBundlesInBundleLoadReport", 10),
            ("loadBalancerBrokerOverloadedThresholdPercentage", 85),
            ("topic_partitions_per_shard", 7000),
            ("topic_partitions_reserve_shard0", 2),
        ],
    )
    def test_upstream_defaults(self, upstream: str, value: object) -> None:
        """Each upstream key starts at the upstream default (RFC defaults for the allocator)."""
        config = Config()
        (spec,) = [s for s, _ in config.items() if upstream in s.aliases or s.name == upstream]
        assert getattr(getattr(config, spec.section), spec.name) == value


class TestKeywords:
    def test_upstream_trimtab_and_dotted_names_all_work(self) -> None:
        """The same setting answers to its upstream, bare and dotted names."""
        for key in (
            "minNumRacksPerWriteQuorum",
            "min_num_racks_per_write_quorum",
            "placement.min_num_racks_per_write_quorum",
        ):
            assert Config.of(**{key: 3}).placement.min_num_racks_per_write_quorum == 3

    def test_deprecated_upstream_aliases_are_accepted(self) -> None:
        """Renamed Pulsar keys and the misspelled 'Bandwith' keys still load."""
        cfg = Config.of(
            loadBalancerMaxNumberOfBrokerTransfersPerCycle=5,
            loadBalancerBandwithInResourceWeight=0.5,
        )
        assert cfg.shedding.max_broker_shedding_per_cycle == 5
        assert cfg.shedding.bandwidth_in_weight == 0.5

    def test_java_class_names_select_policies(self) -> None:
        """Fully qualified upstream class names map to trimtab's policy names."""
        cfg = Config.of(
            ensemblePlacementPolicy="org.apache.bookkeeper.client.RegionAwareEnsemblePlacementPolicy",
            loadBalancerLoadSheddingStrategy="org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder",
            reppDnsResolverClass="org.apache.bookkeeper.net.ScriptBasedMapping",
        )
        assert cfg.placement.ensemble_placement_policy == "regionaware"
        assert cfg.shedding.strategy == "threshold"
        assert cfg.topology.dns_resolver_class == "script"

    def test_resolver_accepts_an_import_path(self) -> None:
        """A custom resolver is named by module:Class."""
        cfg = Config.of(reppDnsResolverClass="mycorp.racks:Resolver")
        assert cfg.topology.dns_resolver_class == "mycorp.racks:Resolver"

    def test_unknown_key_names_it_and_suggests_the_nearest(self) -> None:
        """A typo is an error naming the key and the key it most likely meant."""
        with pytest.raises(UnknownConfigKeyError) as info:
            Config.of(minNumRackPerWriteQuorum=3)
        assert info.value.suggestion == "minNumRacksPerWriteQuorum"
        assert "unknown config key 'minNumRackPerWriteQuorum'" in str(info.value)
        assert "did you mean 'minNumRacksPerWriteQuorum'?" in str(info.value)

    def test_unknown_key_in_other_case_suggests_the_right_case(self) -> None:
        """Case mistakes point to the exact spelling."""
        with pytest.raises(UnknownConfigKeyError, match="'diskWeightBasedPlacementEnabled'"):
            Config.of(DiskWeightBasedPlacementEnabled=True)

    @pytest.mark.parametrize(
        ("key", "value", "allowed"),
        [
            ("minNumRacksPerWriteQuorum", "two", "a whole number"),
            ("minNumRacksPerWriteQuorum", 0, "a number >= 1"),
            ("loadBalancerHistoryResourcePercentage", 1.5, "a number in 0..1"),
            ("diskWeightBasedPlacementEnabled", "maybe", "true or false"),
            ("ensemblePlacementPolicy", "rackish", "one of default, rackaware, regionaware"),
        ],
        ids=["not a number", "below minimum", "outside a range", "not a bool", "not a choice"],
    )
    def test_bad_value_names_key_value_and_what_is_allowed(
        self, key: str, value: object, allowed: str
    ) -> None:
        """A bad value's error carries the key, the value and the allowed values."""
        with pytest.raises(ConfigValueError) as info:
            Config.of(**{key: value})
        message = str(info.value)
        assert key in message and repr(value) in message and allowed in message

    def test_setting_one_value_under_two_names_is_an_error(self) -> None:
        """Two names for the same setting in one source is ambiguous and refused."""
        with pytest.raises(ConfigError, match="already set by"):
            Config.of(minNumRacksPerWriteQuorum=2, min_num_racks_per_write_quorum=3)

    def test_config_is_immutable(self) -> None:
        """Deciders may share one config object safely."""
        cfg = Config()
        with pytest.raises(AttributeError):
            cfg.placement.min_num_racks_per_write_quorum = 5  # type: ignore[misc]


class TestFiles:
    def test_properties_file_as_bookkeeper_writes_it(self, tmp_path: Path) -> None:
        """bk_server.conf syntax: comments, ':' and '=' separators, continuations, bkc. prefix."""
        conf = tmp_path / "bk_server.conf"
        conf.write_text(
            "# placement\n"
            "! also a comment\n"
            "ensemblePlacementPolicy=org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy\n"
            "minNumRacksPerWriteQuorum : 3\n"
            "diskWeightBasedPlacementEnabled=true\n"
            "bkc.networkTopologyStabilizePeriodSeconds=10\n"
            "reppRegionsToWrite=us-east;\\\n"
            "    us-west\n"
        )
        loaded = read_config(conf)
        assert loaded.warnings == ()
        cfg = loaded.config
        assert cfg.placement.min_num_racks_per_write_quorum == 3
        assert cfg.placement.disk_weight_based_placement_enabled is True
        assert cfg.topology.stabilize_period_seconds == 10
        assert cfg.placement.regions_to_write == ("us-east", "us-west")

    def test_properties_error_names_the_file(self, tmp_path: Path) -> None:
        """An unknown key in a file says which file."""
        conf = tmp_path / "broker.conf"
        conf.write_text("loadBalancerBrokerLoadTargetStdev=0.1\n")
        with pytest.raises(
            UnknownConfigKeyError, match=r"broker\.conf.*loadBalancerBrokerLoadTargetStd'"
        ):
            read_config(conf)

    def test_non_strict_load_returns_unknown_keys_as_warnings(self, tmp_path: Path) -> None:
        """With strict=False a key of neither trimtab nor upstream is a warning, not an error.

        Upstream keys trimtab does not read (journalDirectories) load in either mode and are
        no warning: read_config lists them as ignored (tests/test_config_upstream.py).
        """
        conf = tmp_path / "bk_server.conf"
        conf.write_text(
            "journalDirectories=/data/journal\nmyCompanyRackHint=a\nminNumRacksPerWriteQuorum=3\n"
        )
        loaded = read_config(conf, strict=False)
        cfg, warnings = loaded.config, loaded.warnings
        assert cfg.placement.min_num_racks_per_write_quorum == 3
        assert len(warnings) == 1 and "myCompanyRackHint" in warnings[0]

    def test_toml_sections_and_upstream_names(self, tmp_path: Path) -> None:
        """TOML takes trimtab names in section tables, and upstream names inside them too."""
        conf = tmp_path / "trimtab.toml"
        conf.write_text(
            "[placement]\n"
            "min_num_racks_per_write_quorum = 3\n"
            "diskWeightBasedPlacementEnabled = true\n"
            "[shedding]\n"
            "loadBalancerBrokerLoadTargetStd = 0.1\n"
            "[topology]\n"
            'script_file_name = "/etc/trimtab/racks.sh"\n'
        )
        cfg = read_config(conf).config
        assert cfg.placement.min_num_racks_per_write_quorum == 3
        assert cfg.placement.disk_weight_based_placement_enabled is True
        assert cfg.shedding.target_std == 0.1
        assert cfg.topology.script_file_name == "/etc/trimtab/racks.sh"

    def test_toml_key_in_the_wrong_section_is_unknown(self, tmp_path: Path) -> None:
        """A placement key under [shedding] is an error that points to the right name."""
        conf = tmp_path / "trimtab.toml"
        conf.write_text("[shedding]\nmin_num_racks_per_write_quorum = 3\n")
        with pytest.raises(
            UnknownConfigKeyError, match=r"shedding\.min_num_racks_per_write_quorum"
        ):
            read_config(conf)

    def test_invalid_toml_and_missing_file_are_config_errors(self, tmp_path: Path) -> None:
        """Broken or missing files raise ConfigError naming the file."""
        bad = tmp_path / "bad.toml"
        bad.write_text("[placement\n")
        with pytest.raises(ConfigError, match="not valid TOML"):
            read_config(bad)
        with pytest.raises(ConfigError, match="does not exist"):
            read_config(tmp_path / "nope.conf")

    def test_every_setting_is_documented_by_name(self) -> None:
        """settings() lists each field once, with unique trimtab keys and unique aliases."""
        specs = Config.settings()
        keys = [s.key for s in specs]
        aliases = [a for s in specs for a in s.aliases]
        assert len(keys) == len(set(keys)) and len(aliases) == len(set(aliases))


class TestLayer:
    def test_engines_and_settings_load_no_file_reader(self) -> None:
        """The engines import the settings modules, never the loader: importing them (and the
        trimtab.config package) loads neither trimtab.config.loader nor jproperties."""
        code = (
            "import sys, trimtab.config, trimtab.placement, trimtab.shedding,"
            " trimtab.allocation, trimtab.topology;"
            "loaded = [m for m in ('trimtab.config.loader', 'jproperties') if m in sys.modules];"
            "print(loaded); sys.exit(1 if loaded else 0)"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr

    def test_the_loader_alone_reads_properties_files(self) -> None:
        """jproperties is imported by trimtab.config.loader and by no other module of trimtab."""
        src = Path(__file__).parents[1] / "src" / "trimtab"
        importers = [
            p.relative_to(src).as_posix()
            for p in sorted(src.rglob("*.py"))
            if re.search(r"^\s*(from|import) jproperties\b", p.read_text(encoding="utf-8"), re.M)
        ]
        assert importers == ["config/loader.py"]
