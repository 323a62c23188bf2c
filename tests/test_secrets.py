"""Secrets never leak (issue 41, part 5): which names hold secrets, secret files, redaction, and a
token searched for in every output of failing runs: stdout, stderr, ``--json``, log lines and
the crash report."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest

from trimtab.cli import main
from trimtab.cli._crash import write_crash_report
from trimtab.config import Config
from trimtab.config.secrets import (
    REDACTED,
    is_secret_name,
    read_secret_file,
    redact_argv,
    remember_secret,
    scrub,
)
from trimtab.errors import ConfigError

KEY_PW = "keystore-pw-3c9e1"
TOKEN = "eyJhbGciOi.jwt-token-5d2f"
DIGEST_PW = "digest-pw-a71b"
SECRETS = (KEY_PW, TOKEN, DIGEST_PW)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("zookeeper.ssl.keyStore.password", True),
        ("zookeeper.key_store_password", True),
        ("brokerClientAuthenticationParameters", True),
        ("sasl.jaas.config", True),
        ("--pulsar-token", True),
        ("spark.ssl.keyPassword", True),
        ("zookeeper.ssl.keyStore.passwordPath", False),
        ("--pulsar-token-file", False),
        ("tlsKeyStorePasswordPath", False),
        ("zkServers", False),
        ("--zk", False),
    ],
    ids=lambda v: str(v),
)
def test_secret_names_are_told_apart_from_where_secrets_are_kept(name: str, secret: bool) -> None:
    """A name holding a secret is one; a name saying where it is kept (Path, File) is not."""
    assert is_secret_name(name) is secret


def test_argv_is_redacted_by_name() -> None:
    """Secret options and key=value pairs lose their values; everything else is kept."""
    argv = ["pipeline", "run", "--conf", "spark.ssl.keyPassword=abcd1", "--pulsar-token", "t0k3n"]
    argv += ["--admin-password=pw123", "--zk", "zk1:2181"]
    assert redact_argv(argv) == [
        "pipeline",
        "run",
        "--conf",
        f"spark.ssl.keyPassword={REDACTED}",
        "--pulsar-token",
        REDACTED,
        f"--admin-password={REDACTED}",
        "--zk",
        "zk1:2181",
    ]


def test_a_secret_file_others_can_read_gets_one_warning(tmp_path: Path) -> None:
    """Mode 0644: one warning naming the file and the chmod; read again: no second one."""
    path = tmp_path / "secret"
    path.write_text("s3cr3t-value\n")
    path.chmod(0o644)
    secret, warnings = read_secret_file(path, "token")
    assert secret == "s3cr3t-value"
    assert len(warnings) == 1 and str(path) in warnings[0] and "chmod 600" in warnings[0]
    assert read_secret_file(path, "token")[1] == []
    assert scrub("value s3cr3t-value here") == f"value {REDACTED} here"


def test_a_private_secret_file_gets_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("another-secret\n")
    path.chmod(0o600)
    assert read_secret_file(path, "token") == ("another-secret", [])


def test_a_missing_or_empty_secret_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        read_secret_file(tmp_path / "nope", "token")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        read_secret_file(tmp_path / "empty", "token")


def test_config_as_dict_redacts_secret_settings() -> None:
    cfg = Config.of(**{"zookeeper.ssl.keyStore.password": "dict-secret-1"})
    assert cfg.as_dict()["zookeeper"]["key_store_password"] == REDACTED
    assert "dict-secret-1" not in repr(cfg)


@pytest.fixture
def secret_config(tmp_path: Path) -> Path:
    digest = tmp_path / "digest"
    digest.write_text(f"alice:{DIGEST_PW}\n")
    digest.chmod(0o644)  # readable by others: warned about
    conf = tmp_path / "cluster.properties"
    conf.write_text(
        f"zookeeper.ssl.keyStore.password={KEY_PW}\n"
        f"brokerClientAuthenticationParameters=token:{TOKEN}\n"
        f"zookeeper.digest_file={digest}\n"
        "getBookieInfoTimeoutSecs=1\n"  # an unreachable ZooKeeper fails within 1 s
    )
    return conf


def _assert_absent(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_config_json_and_table_never_print_a_secret(
    secret_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``trimtab config --json`` and its table show ``***`` for the key store password."""
    with pytest.raises(SystemExit) as done:
        main(["config", "-c", str(secret_config), "--json"])
    assert done.value.code == 0
    captured = capsys.readouterr()
    assert f'"value": "{REDACTED}"' in captured.out
    _assert_absent(captured.out, captured.err)
    with pytest.raises(SystemExit):
        main(["config", "-c", str(secret_config), "--verbose"])
    captured = capsys.readouterr()
    _assert_absent(captured.out, captured.err)


def test_a_failing_zookeeper_run_leaks_nothing_and_warns_once(
    secret_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreachable ZooKeeper with the digest file in force: an error line and one warning
    about the file's mode, and no secret anywhere."""
    with pytest.raises(SystemExit) as done:
        main(["bookieinfo", "--zk", "127.0.0.1:1", "-c", str(secret_config), "--json"])
    assert done.value.code == 2
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "accessible by others" in warnings[0]
    assert "error: cannot reach ZooKeeper at 127.0.0.1:1" in captured.err
    _assert_absent(captured.out, captured.err)


def test_the_crash_report_and_log_lines_hold_no_secret(
    secret_config: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A bug whose message and log line carry the secrets (as a careless library's would): the
    terminal, the log line and the report show ``***``, and the command line is redacted."""
    import trimtab.cli.config as config_cmd

    reports = tmp_path / "reports"
    reports.mkdir()
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(reports))

    def explode(cfg: Config) -> object:
        logging.getLogger("trimtab.test").warning("connecting with %s", KEY_PW)
        raise RuntimeError(f"bad state near {KEY_PW} and token:{TOKEN}")

    monkeypatch.setattr(config_cmd, "_setting_rows", explode)
    with pytest.raises(SystemExit) as done:
        main(["config", "-c", str(secret_config), "--json"])
    assert done.value.code == 1
    captured = capsys.readouterr()
    assert "internal error" in captured.err and REDACTED in captured.err
    [report] = list(reports.iterdir())
    text = report.read_text()
    assert "RuntimeError" in text and REDACTED in text
    _assert_absent(captured.out, captured.err, text)


def test_write_crash_report_redacts_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    remember_secret("remembered-secret-77")
    argv = ["shed", "--conf", "spark.authenticate.secret=argv-secret-1", "--x-token=argv-tok-2"]
    path, summary = write_crash_report(RuntimeError("remembered-secret-77 broke"), argv)
    assert path is not None
    text = path.read_text()
    for secret in ("argv-secret-1", "argv-tok-2", "remembered-secret-77"):
        assert secret not in text and secret not in summary
