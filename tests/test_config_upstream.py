"""Real upstream config files load as they are: every upstream key accepted, the unread listed.

The fixtures under ``tests/data/upstream_conf/`` are the key=value lines of upstream's own
default files (``bk_server.conf``, ``broker.conf``), commented-out keys kept commented; the
BookKeeper client has no default file upstream, so its file is built from the key list.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.config import Config, IgnoredKey
from trimtab.config.loader import read_config
from trimtab.config.pulsar import PULSAR_PLACEMENT_SWITCHES
from trimtab.config.upstream import spellings
from trimtab.errors import ConfigValueError, UnknownConfigKeyError

ROOT = Path(__file__).parents[1]
UPSTREAM = Path(__file__).parent / "data" / "upstream_conf"
BK_SERVER = UPSTREAM / "bk_server.conf"
BROKER = UPSTREAM / "broker.conf"
BROKER_2X = UPSTREAM / "broker_2x.conf"  # before 2.10: some keys were renamed since
# Released Pulsar files as users have them (the README line of each says where it comes from)
PULSAR_2_4_BOOKKEEPER = UPSTREAM / "pulsar-2.4.0-bookkeeper.conf"
PULSAR_3_1_IMAGE_BROKER = UPSTREAM / "pulsar-3.1.1-image-broker.conf"
# Pulsar 4.1.3's broker.conf: allowAutoTopicCreationWithLegacyNamingScheme shipped in 4.1 only
PULSAR_4_1_3_BROKER = UPSTREAM / "pulsar-4.1.3-broker.conf"
# bk_server.conf as released: the first release, and 4.9.2 (the BookKeeper of Pulsar 2.4)
BK_RELEASES = sorted(UPSTREAM.glob("bookkeeper-*-bk_server.conf"))
runner = CliRunner()


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("upstream_keys", ROOT / "tools/upstream_keys.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _key_list(name: str) -> list[str]:
    text = (files("trimtab") / "data" / name).read_text(encoding="utf-8")
    return [line.split()[0] for line in text.splitlines() if line and not line.startswith("#")]


def _uncommented(conf: Path, tmp_path: Path) -> Path:
    """The fixture with every commented-out key switched on, with upstream's sample value."""
    out = tmp_path / conf.name
    out.write_text(re.sub(r"(?m)^#([A-Za-z_])", r"\1", conf.read_text(encoding="utf-8")))
    return out


def _ignored(keys: tuple[IgnoredKey, ...]) -> dict[str, tuple[str, ...]]:
    return {i.key: i.defined_in for i in keys}


def _repo(path: Path) -> Callable[..., None]:
    """A new git repository at ``path``; the git command to run in it."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "master")
    git("config", "user.email", "t@example.net")
    git("config", "user.name", "t")
    return git


def _commit(git: Callable[..., None], path: Path, version: str, conf: str) -> None:
    """A commit of a root pom.xml at ``version`` and conf/broker.conf holding ``conf``."""
    (path / "pom.xml").write_text(
        "<project><parent><artifactId>apache</artifactId><version>23</version></parent>"
        f"<groupId>org.apache.pulsar</groupId><artifactId>pulsar</artifactId>"
        f"<version>{version}</version></project>"
    )
    (path / "conf").mkdir(exist_ok=True)
    (path / "conf" / "broker.conf").write_text(conf)
    git("add", "-A")
    git("commit", "-qm", version)


class TestRealFiles:
    def test_bk_server_conf_loads_with_the_keys_trimtab_reads_applied(self) -> None:
        """bk_server.conf as upstream ships it loads; its zk and metadata keys are applied."""
        loaded = read_config(BK_SERVER)
        info = loaded.config.bookie_info
        assert info.zk_servers == "localhost:2181"
        assert info.metadata_service_uri == "zk+hierarchical://localhost:2181/ledgers"
        assert info.zk_timeout_ms == 10_000
        ignored = _ignored(loaded.ignored)
        assert ignored["journalDirectories"] == (
            "BookKeeper bk_server.conf",
            "Pulsar bookkeeper.conf",
        )
        assert "zkServers" not in ignored and loaded.warnings == ()

    def test_broker_conf_loads_with_the_keys_trimtab_reads_applied(self) -> None:
        """broker.conf loads; its shedder class name and weights become trimtab's settings."""
        loaded = read_config(BROKER)
        shedding = loaded.config.shedding
        assert shedding.strategy == "threshold"  # impl.ThresholdShedder
        assert shedding.direct_memory_weight == 1.0 and shedding.memory_weight == 1.0
        assert shedding.throughput_multiplier_threshold == 4
        ignored = _ignored(loaded.ignored)
        assert ignored["managedLedgerDefaultEnsembleSize"] == ("Pulsar broker.conf",)
        assert "loadBalancerBrokerLoadTargetStd" not in ignored

    @pytest.mark.parametrize("bare_first", [True, False], ids=["bare first", "prefixed first"])
    def test_a_bookkeeper_prefixed_key_wins_over_the_same_key_bare(
        self, tmp_path: Path, bare_first: bool
    ) -> None:
        """broker.conf has Pulsar's own tlsHostnameVerificationEnabled and its BookKeeper
        client's bookkeeper_tlsHostnameVerificationEnabled: the prefixed one is read (the bare
        one is listed as ignored), in either order; the bare key alone is read."""
        lines = [
            "tlsHostnameVerificationEnabled=true",
            "bookkeeper_tlsHostnameVerificationEnabled=false",
        ]
        conf = tmp_path / "broker.conf"
        conf.write_text("\n".join(lines if bare_first else lines[::-1]) + "\n")
        loaded = read_config(conf)
        assert loaded.config.tls.hostname_verification_enabled is False
        assert "tlsHostnameVerificationEnabled" in _ignored(loaded.ignored)
        conf.write_text("tlsHostnameVerificationEnabled=false\n")
        assert read_config(conf).config.tls.hostname_verification_enabled is False
        assert read_config(BROKER).config.tls.hostname_verification_enabled is False

    def test_broker_conf_bookkeeper_client_keys_reach_placement(self, tmp_path: Path) -> None:
        """The broker's own BookKeeper client keys set the placement a broker would use."""
        conf = tmp_path / "broker.conf"
        conf.write_text(
            "bookkeeperClientMinNumRacksPerWriteQuorum=3\n"
            "bookkeeperClientEnforceMinNumRacksPerWriteQuorum=true\n"
            "bookkeeperClientReorderReadSequenceEnabled=false\n"
            "bookkeeperDiskWeightBasedPlacementEnabled=true\n"
            "bookkeeperClientGetBookieInfoIntervalSeconds=600\n"
            "bookkeeperClientGetBookieInfoRetryIntervalSeconds=30\n",
            encoding="utf-8",
        )
        loaded = read_config(conf)
        placement, info = loaded.config.placement, loaded.config.bookie_info
        assert placement.min_num_racks_per_write_quorum == 3
        assert placement.enforce_min_num_racks_per_write_quorum is True
        assert placement.reorder_read_sequence_enabled is False
        assert placement.disk_weight_based_placement_enabled is True
        assert (info.interval_seconds, info.retry_interval_seconds) == (600, 30)
        assert loaded.ignored == ()

    @pytest.mark.parametrize(
        "conf",
        [
            BK_SERVER,
            BROKER,
            BROKER_2X,
            PULSAR_2_4_BOOKKEEPER,
            PULSAR_3_1_IMAGE_BROKER,
            PULSAR_4_1_3_BROKER,
            *BK_RELEASES,
        ],
        ids=[
            "bk_server.conf",
            "broker.conf",
            "2.x",
            "pulsar 2.4 bookkeeper.conf",
            "pulsar 3.1 image broker.conf",
            "pulsar 4.1.3 broker.conf",
            *(c.name for c in BK_RELEASES),
        ],
    )
    def test_every_key_upstream_documents_loads_even_commented_ones(
        self, conf: Path, tmp_path: Path
    ) -> None:
        """With each commented-out key switched on, every key is either applied or ignored."""
        keys = {k for k, _, _ in _tool().conf_entries(conf.read_text().splitlines())}
        loaded = read_config(_uncommented(conf, tmp_path))
        ignored = set(_ignored(loaded.ignored))
        applied = {list(spellings(key))[-1] for key in keys - ignored}  # bookkeeper_X is X
        assert ignored and applied and applied <= _applied()
        assert loaded.warnings == ()

    def test_commented_bk_placement_keys_switched_on_map_to_trimtab_values(
        self, tmp_path: Path
    ) -> None:
        """Upstream's sample values (Java class names among them) become trimtab's settings."""
        cfg = read_config(_uncommented(BK_SERVER, tmp_path)).config
        assert cfg.placement.ensemble_placement_policy == "rackaware"
        assert cfg.topology.dns_resolver_class == "script"
        assert cfg.bookie_info.disk_usage_lwm_threshold == 0.95  # upstream's sample, not 0.90

    def test_a_pulsar_2_4_bookkeeper_conf_key_gone_from_later_releases_loads(
        self, tmp_path: Path
    ) -> None:
        """numJournalCallbackThreads (BookKeeper 4.9, Pulsar 2.4's bookkeeper.conf) is known:
        ignored as a bk_server.conf key, not refused as unknown."""
        conf = tmp_path / "bookkeeper.conf"
        conf.write_text("bookiePort=3181\nnumJournalCallbackThreads=8\n")
        loaded = read_config(conf)
        assert _ignored(loaded.ignored)["numJournalCallbackThreads"] == (
            "BookKeeper bk_server.conf",
            "Pulsar bookkeeper.conf",
        )
        result = runner.invoke(app, ["config", "-c", str(conf)])
        assert result.exit_code == 0, result.stderr

    @pytest.mark.parametrize(
        "conf",
        [PULSAR_2_4_BOOKKEEPER, PULSAR_3_1_IMAGE_BROKER, PULSAR_4_1_3_BROKER],
        ids=["2.4 bookkeeper", "3.1 broker", "4.1.3 broker"],
    )
    def test_a_released_pulsar_file_loads_through_the_command(self, conf: Path) -> None:
        """Pulsar 2.4's bookkeeper.conf (numJournalCallbackThreads), the broker.conf the 3.1.1
        container image writes and 4.1.3's (a key 4.2 dropped) load through ``trimtab config``
        with no unknown-key complaint."""
        result = runner.invoke(app, ["config", "-c", str(conf), "--json"])
        assert result.exit_code == 0, result.stderr
        assert "unknown" not in result.stderr and "did you mean" not in result.stderr
        ignored = {i["key"] for i in json.loads(result.stdout)["ignored"]}
        assert ("numJournalCallbackThreads" in ignored) == (conf == PULSAR_2_4_BOOKKEEPER)

    def test_the_3_1_image_broker_conf_reads_its_store_and_shedder(self) -> None:
        """The image's file sets metadataStoreUrl and (appended) zookeeperServers: the first is
        read, the second listed as superseded; nothing is refused."""
        loaded = read_config(PULSAR_3_1_IMAGE_BROKER)
        assert loaded.config.topology.metadata_store_url == "zk:zookeeper:2181"
        assert "zookeeperServers" in _ignored(loaded.ignored)
        assert loaded.warnings == ()

    def test_a_key_gone_upstream_is_shown_with_the_releases_that_had_it(
        self, tmp_path: Path
    ) -> None:
        """A 1.x broker.conf key later releases dropped still loads, labelled with the release
        lines that shipped it (removed by apache/pulsar#865 before branch-1.21 was cut, so
        1.20 was its last); a key still shipped has the plain label."""
        conf = tmp_path / "broker.conf"
        conf.write_text(
            PULSAR_3_1_IMAGE_BROKER.read_text()
            + "loadBalancerPlacementStrategy=weightedRandomSelection\n"
        )
        ignored = _ignored(read_config(conf).ignored)
        assert ignored["loadBalancerPlacementStrategy"] == ("Pulsar broker.conf, 1.14 to 1.20",)
        assert ignored["managedLedgerDefaultEnsembleSize"] == ("Pulsar broker.conf",)
        result = runner.invoke(app, ["config", "-c", str(conf), "--verbose"])
        assert result.exit_code == 0, result.stderr
        assert "1.14 to 1.20" in result.stdout

    @pytest.mark.parametrize(
        ("key", "shown"),
        [
            ("allowAutoTopicCreationWithLegacyNamingScheme", "Pulsar broker.conf, 4.1"),
            ("delayedDeliverySharedIndexEnabled", "Pulsar broker.conf, 3.0-SNAPSHOT"),
            ("zookeeperAllowReadOnlyOperations", "Pulsar broker.conf, 2.9"),
        ],
        ids=["4.1 only (3.1 to master)", "3.0 snapshots only (2.10.1 to 3.1)", "2.9.5 only"],
    )
    def test_a_key_that_came_and_went_after_2_10_1_loads(
        self, key: str, shown: str, tmp_path: Path
    ) -> None:
        """Keys that appeared after 2.10.1 and were gone again before today's master are known
        from the release branches' history: 4.1.0 to 4.1.3 shipped
        allowAutoTopicCreationWithLegacyNamingScheme (gone in 4.2, apache/pulsar#25304);
        master had delayedDeliverySharedIndexEnabled from Sept 2022 to Mar 2023 (#17344,
        #19706), in no release; zookeeperAllowReadOnlyOperations was on branch-2.9 only
        (#19693, in 2.9.5). A broker.conf setting one loads through the command as typed,
        listing it as ignored with the lines that had it, and warns of nothing."""
        conf = tmp_path / "broker.conf"
        conf.write_text(PULSAR_3_1_IMAGE_BROKER.read_text() + f"{key}=true\n")
        result = runner.invoke(app, ["config", "-c", str(conf), "--json"])
        assert result.exit_code == 0, result.stderr
        assert "warning:" not in result.stderr and "did you mean" not in result.stderr
        ignored = {i["key"]: i for i in json.loads(result.stdout)["ignored"]}
        assert key in ignored
        assert _ignored(read_config(conf).ignored)[key] == (shown,)

    def test_a_made_up_key_beside_them_still_names_the_nearest_one(self, tmp_path: Path) -> None:
        """Knowing every release branch's keys does not make any key pass: a misspelt one in
        4.1.3's broker.conf is still refused, naming the key of that release it meant."""
        conf = tmp_path / "broker.conf"
        conf.write_text(
            PULSAR_4_1_3_BROKER.read_text() + "allowAutoTopicCreationWithLegacyNamingSchema=true\n"
        )
        result = runner.invoke(app, ["config", "-c", str(conf)])
        assert result.exit_code == 2 and result.stderr.count("error:") == 1
        assert "allowAutoTopicCreationWithLegacyNamingSchema" in result.stderr
        assert "did you mean 'allowAutoTopicCreationWithLegacyNamingScheme'?" in result.stderr

    @pytest.mark.parametrize(
        ("store", "zookeeper", "expected"),
        [
            ("zk:zk-new:2181", "zk-old:2181", "zk:zk-new:2181"),
            ("", "zk-old:2181", "zk-old:2181"),
        ],
        ids=["metadataStoreUrl set wins", "metadataStoreUrl blank: zookeeperServers"],
    )
    def test_a_pulsar_3_1_broker_conf_with_both_store_keys_loads(
        self, tmp_path: Path, store: str, zookeeper: str, expected: str
    ) -> None:
        """Pulsar 3.1's image writes metadataStoreUrl and zookeeperServers: the first wins when
        it is set, as ServiceConfiguration.getMetadataStoreUrl() decides; the legacy key is
        listed as ignored, not a conflict."""
        text = BROKER.read_text()
        text = re.sub(r"(?m)^metadataStoreUrl=.*$", f"metadataStoreUrl={store}", text)
        conf = tmp_path / "broker.conf"
        conf.write_text(text + f"zookeeperServers={zookeeper}\n")
        loaded = read_config(conf)
        assert loaded.config.topology.metadata_store_url == expected
        assert ("zookeeperServers" in _ignored(loaded.ignored)) == bool(store)
        result = runner.invoke(app, ["config", "-c", str(conf)])
        assert result.exit_code == 0, result.stderr

    def test_older_broker_conf_with_since_renamed_keys_loads(self) -> None:
        """A 2.x broker.conf loads: renamed keys are known, its OverloadShedder maps to overload."""
        loaded = read_config(BROKER_2X)
        assert loaded.config.shedding.strategy == "overload"
        ignored = _ignored(loaded.ignored)
        assert ignored["replicatioPolicyCheckDurationSeconds"] == ("Pulsar broker.conf, 2.6",)

    def test_bookkeeper_client_file_with_every_client_key_loads(self, tmp_path: Path) -> None:
        """Each ClientConfiguration key trimtab does not read is accepted, bare or as bkc.key."""
        client = _key_list("upstream_bk_client.keys")
        conf = tmp_path / "bk_client.conf"
        conf.write_text("".join(f"{k}=1\nbkc.{k}=1\n" for k in client if k not in _applied()))
        ignored = _ignored(read_config(conf).ignored)
        assert "BookKeeper client (ClientConfiguration)" in ignored["bkc.opportunisticStriping"]
        assert len(ignored) == 2 * len([k for k in client if k not in _applied()])

    def test_debug_mode_is_an_upstream_key_trimtab_ignores(self, tmp_path: Path) -> None:
        """loadBalancerDebugModeEnabled only adds logs upstream: a broker.conf setting it loads
        with the key listed as ignored, and trimtab has no setting of that name."""
        conf = tmp_path / "broker.conf"
        conf.write_text("loadBalancerDebugModeEnabled=true\nloadBalancerBrokerLoadTargetStd=0.1\n")
        loaded = read_config(conf)
        assert _ignored(loaded.ignored) == {"loadBalancerDebugModeEnabled": ("Pulsar broker.conf",)}
        assert loaded.config == Config.of(loadBalancerBrokerLoadTargetStd=0.1)
        assert not [s for s in Config.settings() if "debug" in s.key.lower()]
        for trimtab_name in ("debug_mode_enabled", "shedding.debug_mode_enabled"):
            with pytest.raises(UnknownConfigKeyError, match=trimtab_name):
                Config.of(**{trimtab_name: True})

    def test_a_broker_conf_key_in_a_bookkeeper_file_is_fine(self, tmp_path: Path) -> None:
        """Any upstream key is accepted in any file: one file may serve several systems."""
        conf = tmp_path / "bk_server.conf"
        conf.write_text(BK_SERVER.read_text() + "managedLedgerDefaultEnsembleSize=3\n")
        ignored = _ignored(read_config(conf).ignored)
        assert ignored["managedLedgerDefaultEnsembleSize"] == ("Pulsar broker.conf",)


def _applied() -> set[str]:
    """Every name trimtab reads a setting under (upstream aliases and its own), and the
    broker.conf switches that choose the placement policy and its resolver."""
    return {a for s in Config.settings() for a in s.aliases} | set(PULSAR_PLACEMENT_SWITCHES)


class TestMistakes:
    @pytest.mark.parametrize(
        ("typo", "meant"),
        [
            ("diskWeightBasedPlacementEnabld", "diskWeightBasedPlacementEnabled"),
            ("jornalDirectories", "journalDirectories"),
            ("managedLedgerDefaultEnsembleSise", "managedLedgerDefaultEnsembleSize"),
        ],
        ids=["a trimtab key", "a bk_server.conf key", "a broker.conf key"],
    )
    def test_misspelt_key_in_a_real_file_fails_naming_the_nearest_key(
        self, typo: str, meant: str, tmp_path: Path
    ) -> None:
        """A key of neither trimtab nor upstream is an error suggesting trimtab's or upstream's."""
        conf = tmp_path / "bk_server.conf"
        conf.write_text(BK_SERVER.read_text() + f"{typo}=true\n")
        with pytest.raises(UnknownConfigKeyError) as info:
            read_config(conf)
        assert info.value.key == typo and info.value.suggestion == meant

    def test_a_typo_in_the_3_1_image_broker_conf_names_the_nearest_key(
        self, tmp_path: Path
    ) -> None:
        """With the whole key history known, a key of no release is still refused, pointing to
        the key it meant, through the command as typed."""
        conf = tmp_path / "broker.conf"
        conf.write_text(PULSAR_3_1_IMAGE_BROKER.read_text() + "loadBalancerSheddingEnabledd=true\n")
        result = runner.invoke(app, ["config", "-c", str(conf)])
        assert result.exit_code == 2 and result.stderr.count("error:") == 1
        assert "did you mean 'loadBalancerSheddingEnabled'?" in result.stderr

    def test_upstream_class_trimtab_lacks_names_the_key_and_allowed_values(
        self, tmp_path: Path
    ) -> None:
        """A Java class trimtab lacks fails clearly; the ones it has map to its own names."""
        conf = tmp_path / "bk_server.conf"
        custom = "com.example.CustomEnsemblePlacementPolicy"
        conf.write_text(f"ensemblePlacementPolicy={custom}\n")
        with pytest.raises(ConfigValueError, match=r"'ensemblePlacementPolicy'.*rackaware"):
            read_config(conf)
        zone = "org.apache.bookkeeper.client.ZoneawareEnsemblePlacementPolicy"
        conf.write_text(f"ensemblePlacementPolicy={zone}\n")
        assert read_config(conf).config.placement.ensemble_placement_policy == "zoneaware"
        transfer = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"
        conf.write_text(
            "ensemblePlacementPolicy=org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy\n"
            f"loadBalancerLoadSheddingStrategy={transfer}\n"
        )
        cfg = read_config(conf).config
        assert cfg.placement.ensemble_placement_policy == "rackaware"
        assert cfg.shedding.strategy == "transfer"

    def test_empty_value_in_a_properties_file_keeps_the_default(self, tmp_path: Path) -> None:
        """'key=' means not set, as Pulsar reads broker.conf, instead of a bad value."""
        conf = tmp_path / "broker.conf"
        conf.write_text("loadBalancerBrokerLoadTargetStd=\nminNumRacksPerWriteQuorum= \n")
        cfg = read_config(conf).config
        assert cfg.shedding.target_std == 0.25
        assert cfg.placement.min_num_racks_per_write_quorum == 2


class TestKeyLists:
    @pytest.mark.parametrize(
        ("keys", "confs"),
        [
            (
                "upstream_pulsar_broker.keys",
                (BROKER, BROKER_2X, PULSAR_3_1_IMAGE_BROKER, PULSAR_4_1_3_BROKER),
            ),
            ("upstream_pulsar_bookkeeper.keys", (PULSAR_2_4_BOOKKEEPER,)),
        ],
        ids=["broker.conf", "bookkeeper.conf"],
    )
    def test_pulsar_key_history_holds_every_released_file_s_keys(
        self, keys: str, confs: tuple[Path, ...]
    ) -> None:
        """Each Pulsar list is a history: it says what it read (apache/pulsar's master and every
        release branch, each with its commit), holds every key of each released file stored
        here, and gives each key a first and last release line in release order."""
        text = (files("trimtab") / "data" / keys).read_text(encoding="utf-8")
        header = [line for line in text.splitlines() if line.startswith("#")]
        assert header[0].startswith("# upstream: apache/pulsar conf/")
        assert "on master and on each release branch" in header[0]
        read = {line.split()[2] for line in header if line.startswith("# read: ")}
        lines = ("2.11", "3.0", "3.1", "3.2", "3.3", "4.0", "4.1", "4.2")
        assert {"master", *(f"branch-{line}" for line in lines)} <= read
        order = header[2].removeprefix("# release lines read, in order: ").split()
        assert order[:2] == ["1.14", "1.15"] and set(lines) <= set(order)
        assert "left out (not an apache version): none" in header[-1]
        rows = [line.split() for line in text.splitlines() if not line.startswith("#")]
        line_of = _tool()._line_order
        assert all(len(r) == 3 and line_of(r[1]) <= line_of(r[2]) for r in rows)
        assert all(label.removesuffix("-SNAPSHOT") in order for r in rows for label in r[1:])
        listed = {r[0] for r in rows}
        assert [r[0] for r in rows] == sorted(listed)
        for conf in confs:
            shipped = {k for k, _, _ in _tool().conf_entries(conf.read_text().splitlines())}
            assert shipped <= listed, (conf.name, sorted(shipped - listed))

    def test_tool_history_labels_keys_with_the_pom_release_line(self, tmp_path: Path) -> None:
        """``history`` walks every commit that changed the file, labels each with the release
        line of its pom.xml, then the newer files given, and keeps each key's first and last."""
        git = _repo(tmp_path)
        _commit(git, tmp_path, "2.3.0-SNAPSHOT", "bindAddress=0.0.0.0\n#oldKey=1\n")
        _commit(git, tmp_path, "2.4.0-SNAPSHOT", "bindAddress=0.0.0.0\n#oldKey=1\nnewKey=2\n")
        _commit(git, tmp_path, "2.5.0-incubating", "bindAddress=0.0.0.0\nnewKey=2\n")
        seen, labels, *_ = _tool().history(
            tmp_path / ".git", "conf/broker.conf", ["HEAD"], [("3.1", "bindAddress=\nlatest=1\n")]
        )
        assert labels == ["2.3", "2.4", "2.5", "3.1"]
        assert seen == {
            "bindAddress": ("2.3", "3.1"),
            "oldKey": ("2.3", "2.4"),
            "newKey": ("2.4", "2.5"),
            "latest": ("3.1", "3.1"),
        }

    def test_tool_history_reads_release_branches_as_they_shipped(self, tmp_path: Path) -> None:
        """With master and a release branch: a key master dropped before the branch was cut is
        not in that line; a backport is first in the branch's line; a master commit after the
        cut belongs to the next line, whatever its pom says; a renamed snapshot line counts as
        the one it became, and master's own line (no branch yet) as it is; a release tag wins
        over the release commit (the candidate was rebuilt); a key only snapshots of a branched
        line had is labelled X.Y-SNAPSHOT; a fork's own version (four numbers) is left out, and
        said so, and its tag is not a release."""
        git = _repo(tmp_path)
        _commit(git, tmp_path, "2.10.0-SNAPSHOT", "a=1\ndropped=1\n")
        _commit(git, tmp_path, "2.10.0-SNAPSHOT", "a=1\n")
        git("branch", "branch-2.10")
        _commit(git, tmp_path, "2.10.0-SNAPSHOT", "a=1\nafterCut=1\n")  # master stays 2.10
        _commit(git, tmp_path, "2.12.0-SNAPSHOT", "a=1\nafterCut=1\nsnapshotOnly=1\n")
        _commit(git, tmp_path, "3.0.0-SNAPSHOT", "a=1\nafterCut=1\nbackport=1\n")
        git("checkout", "-q", "branch-2.10")
        _commit(git, tmp_path, "2.10.0", "a=1\nbackport=1\nrerolled=1\n")  # Release 2.10.0
        _commit(git, tmp_path, "2.10.0", "a=1\nbackport=1\n")  # the candidate rebuilt
        git("tag", "v2.10.0")
        _commit(git, tmp_path, "2.10.0.7", "a=1\nbackport=1\nforkOnly=1\n")
        git("tag", "v2.10.0.7")  # a vendor's tag: no release of apache's
        read = _tool().history(
            tmp_path / ".git", "conf/broker.conf", ["master", "branch-2.10"], [], {"2.12": "3.0"}
        )
        assert read.seen == {
            "a": ("2.10", "3.0"),
            "dropped": ("2.10-SNAPSHOT", "2.10-SNAPSHOT"),
            "afterCut": ("3.0", "3.0"),
            "snapshotOnly": ("3.0", "3.0"),
            "backport": ("2.10", "3.0"),
            "rerolled": ("2.10-SNAPSHOT", "2.10-SNAPSHOT"),
        }
        assert read.labels == ["2.10", "3.0"] and read.tags == ["v2.10.0"]
        assert [version for _, version in read.skipped] == ["2.10.0.7"]
        assert [ref for ref, _ in read.refs] == ["master", "branch-2.10"]

    def test_bk_server_key_list_is_every_release_s_keys(self) -> None:
        """The bk_server.conf list is the union over every release tag: it holds each released
        file's keys (the first release, 4.9.2, today's) and says so in its header."""
        text = (files("trimtab") / "data" / "upstream_bk_server.keys").read_text("utf-8")
        assert "at every release tag, release-4.0.0 to " in text.splitlines()[0]
        listed = set(_key_list("upstream_bk_server.keys"))
        for conf in (BK_SERVER, *BK_RELEASES):
            keys = {k for k, _, _ in _tool().conf_entries(conf.read_text().splitlines())}
            assert keys <= listed, conf.name
        assert _key_list("upstream_bk_server.keys") == sorted(listed)

    def test_tool_lists_the_keys_of_every_release_tag(self, tmp_path: Path) -> None:
        """``releases`` reads the file at each release tag, whichever path it had then, and
        lists every key any release shipped (docker tags skipped)."""

        def git(*args: str) -> None:
            subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

        git("init", "-q")
        git("config", "user.email", "t@example.net")
        git("config", "user.name", "t")
        old = tmp_path / "bookkeeper-server" / "conf" / "bk_server.conf"
        old.parent.mkdir(parents=True)
        old.write_text("bookiePort=3181\n#numJournalCallbackThreads=8\n")
        git("add", "-A")
        git("commit", "-qm", "4.0")
        git("tag", "release-4.0.0")
        git("rm", "-rq", "bookkeeper-server")
        new = tmp_path / "conf" / "bk_server.conf"
        new.parent.mkdir()
        new.write_text("bookiePort=3181\njournalDirectories=/j\n")
        git("add", "-A")
        git("commit", "-qm", "4.7")
        git("tag", "release-4.7.0")
        git("tag", "release-4.7.0-docker")
        tags, texts = _tool().release_files(
            tmp_path / ".git", ["conf/bk_server.conf", "bookkeeper-server/conf/bk_server.conf"]
        )
        assert tags == ["release-4.0.0", "release-4.7.0"]
        keys = {k for text in texts for k, _, _ in _tool().conf_entries(text.splitlines())}
        assert keys == {"bookiePort", "numJournalCallbackThreads", "journalDirectories"}

    def test_tool_reads_commented_keys_but_not_prose(self) -> None:
        """'# key=value' documents a key; '# a = b (prose)' and '# Options:' do not."""
        lines = [
            "# journalMaxSizeMB=2048",
            "bookiePort=3181",
            "# throttle-dispatch-rate = (publish-rate + configured dispatch-rate).",
            "# Options:",
            "httpMaxRequestHeaderSize = 8192",
        ]
        assert list(_tool().conf_entries(lines)) == [
            ("journalMaxSizeMB", "2048", True),
            ("bookiePort", "3181", False),
            ("httpMaxRequestHeaderSize", "8192", False),
        ]

    def test_tool_reads_java_constants_used_as_keys_only(self) -> None:
        """A constant passed to a getter is a key; one used only as a value is not."""
        source = (
            'static final String ROLE = "clientRole";\n'
            'static final String ROLE_SYSTEM = "system";\n'
            "String role() { return getString(ROLE, ROLE_SYSTEM); }\n"
        )
        assert _tool().java_keys([source]) == {"clientRole"}


class TestCommand:
    def test_config_on_a_real_file_exits_0_and_counts_the_ignored_keys(self) -> None:
        """Without --verbose the table is followed by how many keys trimtab does not read."""
        result = runner.invoke(app, ["config", "--config", str(BK_SERVER)])
        assert result.exit_code == 0, result.output
        assert "upstream keys in" in result.stdout and "--verbose" in result.stdout
        assert "journalDirectories" not in result.stdout

    def test_verbose_lists_each_ignored_key_with_where_upstream_defines_it(self) -> None:
        """--verbose adds a table of the ignored keys and the upstream file of each."""
        result = runner.invoke(app, ["config", "--config", str(BROKER), "--verbose"])
        assert result.exit_code == 0, result.output
        assert "managedLedgerDefaultEnsembleSize" in result.stdout
        assert "Pulsar broker.conf" in result.stdout

    def test_json_carries_the_ignored_keys_and_the_applied_values(self) -> None:
        """--json has an 'ignored' list (key, defined_in) beside the settings in force."""
        result = runner.invoke(app, ["config", "--config", str(BROKER), "--json"])
        doc = json.loads(result.stdout)
        assert {"key": "bindAddress", "defined_in": ["Pulsar broker.conf"]} in doc["ignored"]
        strategy = next(r for r in doc["settings"] if r["key"] == "shedding.strategy")
        assert strategy["value"] == "threshold"

    def test_misspelt_key_is_one_error_line_and_exit_2(self, tmp_path: Path) -> None:
        """A typo in a real file stops the command with the key and the suggestion."""
        conf = tmp_path / "bk_server.conf"
        conf.write_text(BK_SERVER.read_text() + "diskWeightBasedPlacementEnabld=true\n")
        result = runner.invoke(app, ["config", "--config", str(conf)])
        assert result.exit_code == 2
        assert result.stderr.count("error:") == 1
        assert "'diskWeightBasedPlacementEnabld'" in result.stderr
        assert "did you mean 'diskWeightBasedPlacementEnabled'?" in result.stderr


class TestPulsarPlacementSwitches:
    """broker.conf's ``bookkeeperClientRackawarePolicyEnabled`` / ``…RegionawarePolicyEnabled``
    choose the policy and Pulsar's ``/bookies`` resolver, as upstream's
    ``BookKeeperClientFactoryImpl.setDefaultEnsemblePlacementPolicy`` does."""

    def _load(self, tmp_path: Path, text: str) -> Config:
        conf = tmp_path / "broker.conf"
        conf.write_text(text, encoding="utf-8")
        return read_config(conf).config

    def test_upstreams_default_broker_conf_is_rack_aware_on_the_bookies_znode(self) -> None:
        config = read_config(BROKER).config
        assert config.placement.ensemble_placement_policy == "rackaware"
        assert config.topology.dns_resolver_class == "pulsar"

    def test_region_aware_wins_over_rack_aware(self, tmp_path: Path) -> None:
        config = self._load(
            tmp_path,
            "bookkeeperClientRackawarePolicyEnabled=true\n"
            "bookkeeperClientRegionawarePolicyEnabled=true\n",
        )
        assert config.placement.ensemble_placement_policy == "regionaware"
        assert config.topology.dns_resolver_class == "pulsar"

    def test_both_off_leave_trimtabs_defaults(self, tmp_path: Path) -> None:
        config = self._load(
            tmp_path,
            "bookkeeperClientRackawarePolicyEnabled=false\n"
            "bookkeeperClientRegionawarePolicyEnabled=false\n",
        )
        assert config.topology.dns_resolver_class == Config().topology.dns_resolver_class

    def test_a_resolver_named_in_the_file_is_kept(self, tmp_path: Path) -> None:
        """Upstream reads ``reppDnsResolverClass`` from the broker's properties first."""
        config = self._load(
            tmp_path, "bookkeeperClientRackawarePolicyEnabled=true\nreppDnsResolverClass=table\n"
        )
        assert config.topology.dns_resolver_class == "table"

    @pytest.mark.parametrize(
        ("line", "hosts"),
        [
            ("metadataStoreUrl=zk:zk1:2181,zk2:2181/pulsar", "zk1:2181,zk2:2181/pulsar"),
            ("zookeeperServers=zk1:2181", "zk1:2181"),
        ],
    )
    def test_the_metadata_store_is_where_the_rack_map_is_read(
        self, tmp_path: Path, line: str, hosts: str
    ) -> None:
        from trimtab.systems.zookeeper import zk_servers

        config = self._load(tmp_path, f"bookkeeperClientRackawarePolicyEnabled=true\n{line}\n")
        assert zk_servers(config) == hosts

    def test_a_bad_switch_or_store_is_one_error_line(self, tmp_path: Path) -> None:
        for text, key in [
            (
                "bookkeeperClientRackawarePolicyEnabled=maybe\n",
                "bookkeeperClientRackawarePolicyEnabled",
            ),
            ("metadataStoreUrl=etcd:http://e1:2379\n", "metadataStoreUrl"),
        ]:
            conf = tmp_path / "broker.conf"
            conf.write_text(text, encoding="utf-8")
            result = runner.invoke(app, ["config", "-c", str(conf)])
            assert result.exit_code == 2
            lines = [x for x in result.output.splitlines() if x.strip()]
            assert len(lines) == 1 and lines[0].startswith("error:") and key in lines[0]
