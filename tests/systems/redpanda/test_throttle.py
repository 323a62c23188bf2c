"""Redpanda as an execute target: Kafka's reassignment APIs, and the throttle as the cluster
config ``raft_learner_recovery_rate`` through the Admin API (HTTP Basic auth)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from tests.standins.kafka import Cluster, KafkaStandin
from tests.standins.redpanda import RedpandaAdminStandin
from tests.systems.kafka.helpers import StandinClock, move
from tests.systems.redpanda.conftest import USERS
from tests.tls_certs import TlsFiles
from trimtab.errors import TargetError
from trimtab.plans.target import Check, ThrottleSet
from trimtab.systems.kafka.target import KafkaTarget, KafkaTargetOptions, connect_kafka

A0 = move(0, [1, 2, 3], [1, 2, 4])


def _auth_file(tmp_path: Path, text: str = "admin:rp-Secret-42") -> Path:
    path = tmp_path / "redpanda-auth"
    path.write_text(text + "\n")
    path.chmod(0o600)
    return path


def _target(standin: KafkaStandin, admin: RedpandaAdminStandin, auth: Path | None) -> KafkaTarget:
    target = connect_kafka(
        KafkaTargetOptions(
            standin.bootstrap,
            system="redpanda",
            redpanda_admin=admin.url,
            redpanda_auth_file=auth,
            timeout_s=5,
        )
    )
    assert isinstance(target, KafkaTarget)
    return target


def test_throttle_is_the_recovery_rate_and_is_restored(
    kafka_standin: KafkaStandin,
    kafka_cluster: Cluster,
    redpanda_admin: RedpandaAdminStandin,
    tmp_path: Path,
) -> None:
    """set_throttle upserts raft_learner_recovery_rate; clear puts the operator's value back;
    no Kafka broker config is written."""
    redpanda_admin.config["raft_learner_recovery_rate"] = 52428800
    target = _target(kafka_standin, redpanda_admin, _auth_file(tmp_path))
    try:
        assert target.system == "redpanda"
        throttle = target.set_throttle(10_000_000, [A0])
        assert redpanda_admin.config["raft_learner_recovery_rate"] == 10_000_000
        assert kafka_cluster.calls["IncrementalAlterConfigs"] == 0
        target.clear_throttle(ThrottleSet.from_json(throttle.as_json()))
        assert redpanda_admin.config == {"raft_learner_recovery_rate": 52428800}
    finally:
        target.close()


def test_a_default_rate_is_reset_by_removing_it(
    kafka_standin: KafkaStandin, redpanda_admin: RedpandaAdminStandin, tmp_path: Path
) -> None:
    """A rate that was at its default goes back to it: the property is removed, not set."""
    target = _target(kafka_standin, redpanda_admin, _auth_file(tmp_path))
    try:
        target.clear_throttle(target.set_throttle(10_000_000, [A0]))
        assert redpanda_admin.config == {}
        reset = {"upsert": {}, "remove": ["raft_learner_recovery_rate"]}
        assert redpanda_admin.history[-1] == reset
    finally:
        target.close()


def test_reassignments_go_through_the_kafka_api(
    kafka_standin: KafkaStandin,
    kafka_cluster: Cluster,
    redpanda_admin: RedpandaAdminStandin,
    tmp_path: Path,
) -> None:
    """Redpanda answers Kafka's reassignment APIs: the checks are the same."""
    target = _target(kafka_standin, redpanda_admin, _auth_file(tmp_path))
    try:
        assert target.observe([A0])["orders/0"].check is Check.READY
        kafka_cluster.stall("orders", 0)
        target.submit([A0])
        assert target.observe([A0])["orders/0"].check is Check.MOVING
    finally:
        target.close()


def test_wrong_admin_password_is_one_line(
    kafka_standin: KafkaStandin, redpanda_admin: RedpandaAdminStandin, tmp_path: Path
) -> None:
    """HTTP 401 from the Admin API: one line naming it, without the password."""
    target = _target(kafka_standin, redpanda_admin, _auth_file(tmp_path, "admin:Wrong-pass-1"))
    try:
        with pytest.raises(TargetError) as err:
            target.set_throttle(10_000_000, [A0])
        assert "authentication failed (HTTP 401)" in str(err.value)
        assert redpanda_admin.url in str(err.value) and "Wrong-pass-1" not in str(err.value)
    finally:
        target.close()


def test_credentials_from_rpk_environment(
    kafka_standin: KafkaStandin,
    redpanda_admin: RedpandaAdminStandin,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without an auth file, RPK_USER/RPK_PASS (what rpk reads) give the login."""
    monkeypatch.setenv("RPK_USER", "admin")
    monkeypatch.setenv("RPK_PASS", USERS["admin"])
    target = _target(kafka_standin, redpanda_admin, None)
    try:
        target.clear_throttle(target.set_throttle(10_000_000, [A0]))
        assert redpanda_admin.calls["write"] == 2
    finally:
        target.close()


def test_a_throttle_needs_the_admin_url(kafka_standin: KafkaStandin) -> None:
    """Without --redpanda-admin the target still checks and moves, but refuses a throttle."""
    target = connect_kafka(KafkaTargetOptions(kafka_standin.bootstrap, system="redpanda"))
    try:
        assert target.observe([A0])["orders/0"].check is Check.READY
        with pytest.raises(TargetError, match="--redpanda-admin"):
            target.set_throttle(10_000_000, [A0])
    finally:
        target.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("admin", "user:password"), ("", "is empty")],
    ids=["no colon", "empty"],
)
def test_a_bad_auth_file_is_refused(tmp_path: Path, text: str, expected: str) -> None:
    """The auth file is one line user:password; anything else is refused before connecting."""
    path = tmp_path / "auth"
    path.write_text(text)
    path.chmod(0o600)
    options = KafkaTargetOptions(
        "127.0.0.1:9092",
        system="redpanda",
        redpanda_admin="http://127.0.0.1:9644",
        redpanda_auth_file=path,
    )
    with pytest.raises(TargetError, match=expected):
        connect_kafka(options)


def test_a_bad_admin_url_is_refused() -> None:
    """--redpanda-admin must be an http(s) URL."""
    options = KafkaTargetOptions(
        "127.0.0.1:9092", system="redpanda", redpanda_admin="redpanda:9644"
    )
    with pytest.raises(TargetError, match="is not an http"):
        connect_kafka(options)


def test_a_repeated_submit_is_not_a_refusal(
    kafka_target: KafkaTarget, kafka_cluster: Cluster
) -> None:
    """Redpanda refuses an identical repeat (unknown_server_error); a repeat of a move already
    in progress to the same target (a call retried after a dropped connection) is no error."""
    kafka_cluster.refuse_identical = True
    kafka_cluster.stall("orders", 0)
    kafka_target.submit([A0])
    kafka_target.submit([A0])
    assert kafka_target.observe([A0])["orders/0"].check is Check.MOVING
    with pytest.raises(TargetError, match="orders/2: InvalidReplicationAssignment"):
        kafka_target.submit([A0, move(2, [1, 2, 3], [1, 2, 9])])  # a real refusal still is


def test_execute_runs_a_redpanda_plan_under_its_recovery_rate(
    kafka_standin: KafkaStandin,
    kafka_cluster: Cluster,
    redpanda_admin: RedpandaAdminStandin,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """trimtab execute on a redpanda plan: moves through the Kafka API, the throttle through
    the Admin API while they copy, and the default rate back at the end."""
    from typer.testing import CliRunner

    from trimtab.cli import app
    from trimtab.plans.document import PlanDocument

    kafka_cluster.node_rate = redpanda_admin.recovery_rate
    seen_rates: list[float] = []
    clock = StandinClock(kafka_cluster)
    clock.on_sleep = lambda _n: seen_rates.append(redpanda_admin.recovery_rate())
    monkeypatch.setattr("trimtab.cli.execute.make_clock", lambda: clock)
    plan = PlanDocument(
        system="redpanda", cluster="rp", created="2026-11-28T12:00:00Z",
        actions=(A0, move(1, [1, 2, 3], [4, 2, 3])), settings={"concurrent_moves": 2},
    )  # fmt: skip
    path = tmp_path / "plan.json"
    path.write_text(plan.dumps())
    result = CliRunner().invoke(
        app,
        [
            "execute",
            str(path),
            "--approve",
            plan.digest,
            "--throttle",
            "20MB/s",
            "--bootstrap-servers",
            kafka_standin.bootstrap,
            "--redpanda-admin",
            redpanda_admin.url,
            "--redpanda-auth-file",
            str(_auth_file(tmp_path)),
            "--poll-interval",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    assert kafka_cluster.partitions[("orders", 0)].replicas == [1, 2, 4]
    assert kafka_cluster.partitions[("orders", 1)].replicas == [4, 2, 3]
    assert 20_000_000 in seen_rates  # the moves copied under the throttle
    assert redpanda_admin.config == {} and kafka_cluster.calls["IncrementalAlterConfigs"] == 0


def test_credentials_in_the_admin_url_are_refused_unshown() -> None:
    """user:password@ in --redpanda-admin is refused without echoing the password."""
    options = KafkaTargetOptions(
        "127.0.0.1:9092", system="redpanda", redpanda_admin="http://admin:Hunter2-pw@rp:9644"
    )
    with pytest.raises(TargetError, match="--redpanda-auth-file") as err:
        connect_kafka(options)
    assert "Hunter2-pw" not in str(err.value)


def test_redpanda_options_on_a_kafka_plan_are_refused() -> None:
    """A Kafka plan is throttled through configs: the Admin API options are a mistake."""
    options = KafkaTargetOptions("127.0.0.1:9092", redpanda_admin="http://127.0.0.1:9644")
    with pytest.raises(TargetError, match="are for Redpanda plans"):
        connect_kafka(options)


def test_a_recovery_rate_preview_writes_nothing(
    kafka_standin: KafkaStandin, redpanda_admin: RedpandaAdminStandin, tmp_path: Path
) -> None:
    """preview_throttle reads the rate it would replace (one GET) and writes nothing."""
    redpanda_admin.config["raft_learner_recovery_rate"] = 52428800
    target = _target(kafka_standin, redpanda_admin, _auth_file(tmp_path))
    try:
        preview = target.preview_throttle(10_000_000, [A0])
        assert redpanda_admin.calls["write"] == 0
        assert target.set_throttle(10_000_000, [A0]) == preview
        target.clear_throttle(preview)
        assert redpanda_admin.config == {"raft_learner_recovery_rate": 52428800}
    finally:
        target.close()


def test_basic_auth_over_plain_http_warns() -> None:
    """Credentials for an http:// Admin API get a warning naming the risk, never the password."""
    from trimtab.systems.redpanda.admin_api import cleartext_warning

    (warning,) = cleartext_warning("http://rp:9644", ("admin", "Pw-123456"))
    assert "clear text" in warning and "Pw-123456" not in warning
    assert cleartext_warning("https://rp:9644", ("admin", "Pw-123456")) == []
    assert cleartext_warning("http://rp:9644", None) == []


@pytest.mark.server
def test_an_https_admin_api_is_verified_with_the_command_config_ca(
    kafka_standin: KafkaStandin, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """https:// is checked against ssl.truststore.location of --command-config; without it
    (the system's CAs) the certificate does not verify: one error line."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(str(tls_files.server_cert), str(tls_files.server_key))
    config = tmp_path / "client.properties"
    config.write_text(f"ssl.truststore.type=PEM\nssl.truststore.location={tls_files.ca}\n")
    with RedpandaAdminStandin(users=USERS, tls=server) as admin:
        auth = _auth_file(tmp_path)
        trusted = connect_kafka(
            KafkaTargetOptions(
                kafka_standin.bootstrap, command_config=config, system="redpanda",
                redpanda_admin=admin.url, redpanda_auth_file=auth,
            )
        )  # fmt: skip
        try:
            trusted.clear_throttle(trusted.set_throttle(10_000_000, [A0]))
            assert admin.calls["write"] == 2
        finally:
            trusted.close()
        untrusted = _target(kafka_standin, admin, auth)
        try:
            with pytest.raises(TargetError, match=r"certificate verify failed.*ssl\.truststore"):
                untrusted.set_throttle(10_000_000, [A0])
        finally:
            untrusted.close()
