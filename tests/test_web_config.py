"""``--web-config`` files (the Prometheus exporter-toolkit format), checked before a command starts.

A file that cannot be used is one ``error:`` line naming the file and the key (and the nearest
known key for a typo), exit status 2, and nothing started: no metrics port bound, no watcher
polling. A password written in clear where a bcrypt hash belongs is refused without being shown.
The serving side (TLS, Basic auth, reload) is tests/online/test_metrics_security.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import bcrypt
import pytest
from typer.testing import CliRunner

from tests.test_cli import registry
from tests.tls_certs import TlsFiles
from trimtab.cli import app
from trimtab.systems.prometheus import WebConfigError, checked_web_config, load_web_config

PASSWORD = "s3cret-scrape-pass"  # a test password, never a real one


def write(tmp_path: Path, text: str, name: str = "web.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def web_config_text(files: TlsFiles, *, password: str = PASSWORD, extra: str = "") -> str:
    """Mutual TLS with ``files`` and one user, ``prometheus``, with ``password`` (hashed at
    bcrypt's lowest cost: tests need no slow hash); ``extra`` lines go in tls_server_config."""
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
    return (
        "tls_server_config:\n"
        f"  cert_file: {files.server_cert}\n"
        f"  key_file: {files.server_key}\n"
        "  client_auth_type: RequireAndVerifyClientCert\n"
        f"  client_ca_file: {files.ca}\n"
        f"{extra}"
        "basic_auth_users:\n"
        f"  prometheus: '{hashed}'\n"
    )


def good_text(files: TlsFiles) -> str:
    return web_config_text(files, extra="  min_version: TLS12\n") + (
        "http_server_config:\n"
        "  headers:\n"
        "    X-Frame-Options: deny\n"
        "rate_limit:\n"
        "  interval: 100ms\n"
        "  burst: 5\n"
    )


def test_a_full_file_is_read_as_upstream_writes_it(tmp_path: Path, tls_files: TlsFiles) -> None:
    """Every section is read: TLS files, client auth, users (as hashes), headers, rate limit."""
    config = checked_web_config(write(tmp_path, good_text(tls_files)))
    assert config.tls is not None
    assert config.tls.client_auth_type == "RequireAndVerifyClientCert"
    assert config.tls.client_ca_file == tls_files.ca
    assert list(config.users) == ["prometheus"]
    assert config.http.headers == (("X-Frame-Options", "deny"),)
    assert config.rate_limit is not None and config.rate_limit.interval_s == pytest.approx(0.1)
    assert PASSWORD not in repr(config)


def test_relative_files_are_taken_from_the_config_directory(
    tmp_path: Path, tls_files: TlsFiles
) -> None:
    """As upstream: ``cert_file: server.pem`` is next to the web config, not in the cwd."""
    path = write(
        tls_files.directory,
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n",
        "relative.yml",
    )
    config = checked_web_config(path)
    assert config.tls is not None and config.tls.cert_file == tls_files.server_cert


def test_an_empty_file_serves_plain_http(tmp_path: Path) -> None:
    """An empty file is upstream's "no TLS, no users"."""
    config = load_web_config(write(tmp_path, ""))
    assert config.tls is None and not config.users


BAD = [
    pytest.param(
        "tls_server_cfg:\n  cert_file: a\n",
        "unknown key 'tls_server_cfg'; did you mean 'tls_server_config'?",
        id="a misspelt section names the nearest one",
    ),
    pytest.param(
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth: x\n",
        "unknown key 'tls_server_config.client_auth'; did you mean 'client_auth_type'?",
        id="a misspelt key names the nearest one",
    ),
    pytest.param(
        "tls_server_config:\n  cert_file: a\n  key_file: b\n"
        "  client_auth_type: RequireAndVerifyClientCrt\n  client_ca_file: c\n",
        "did you mean 'RequireAndVerifyClientCert'?",
        id="a misspelt client auth type",
    ),
    pytest.param(
        "basic_auth_users:\n  alice: [1, 2\n",
        "not valid YAML: line 3, column 1",
        id="bad YAML gives its position",
    ),
    pytest.param(
        "basic_auth_users: {}\nbasic_auth_users: {}\n",
        "line 2: key 'basic_auth_users' given twice",
        id="a key given twice",
    ),
    pytest.param(
        "tls_server_config:\n  cert_file: /nonexistent/server.pem\n  key_file: /nonexistent/k\n",
        "tls_server_config.cert_file /nonexistent/server.pem with key_file /nonexistent/k: "
        "no such file",
        id="a missing certificate file",
    ),
    pytest.param(
        "tls_server_config:\n  key_file: k\n",
        "tls_server_config.cert_file is missing",
        id="TLS without a certificate",
    ),
    pytest.param(
        "tls_server_config:\n  cert_file: a\n  key_file: b\n"
        "  client_auth_type: RequireAnyClientCert\n",
        "accepts a client certificate without verifying it",
        id="an unverified client auth type",
    ),
    pytest.param(
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n",
        "client_auth_type is NoClientCert",
        id="a client CA without client auth",
    ),
    pytest.param(
        "tls_server_config:\n  cert_file: a\n  key_file: b\n"
        "  client_auth_type: RequireAndVerifyClientCert\n",
        "needs client_ca_file",
        id="client auth without a CA",
    ),
    pytest.param(
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [X]\n",
        "tls_server_config.cipher_suites: trimtab serves TLS with Python's OpenSSL",
        id="Go cipher names are refused by name",
    ),
    pytest.param(
        "http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
        "http_server_config.headers.X-Frame-Options must be deny or sameorigin",
        id="a header value upstream refuses",
    ),
    pytest.param(
        "rate_limit:\n  interval: 1 second\n  burst: 2\n",
        "rate_limit.interval '1 second' is not a duration",
        id="a duration that is not Go's",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_file_is_one_error_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    """Each problem is a WebConfigError naming the file and the key."""
    path = write(tmp_path, text)
    with pytest.raises(WebConfigError) as caught:
        checked_web_config(path)
    assert str(caught.value).startswith(f"web config {path}: ")
    assert message in str(caught.value)


def test_a_password_in_clear_is_refused_without_being_shown(tmp_path: Path) -> None:
    """A value that is not a bcrypt hash is named by its user only, never printed."""
    path = write(tmp_path, f"basic_auth_users:\n  alice: {PASSWORD}\n")
    with pytest.raises(WebConfigError, match=r"basic_auth_users\.alice is not a bcrypt hash") as e:
        load_web_config(path)
    assert PASSWORD not in str(e.value)


def test_a_yaml_error_quotes_no_piece_of_the_file(tmp_path: Path) -> None:
    """YAML quotes what it stumbled on (an alias in a password written without quotes); the
    error gives the position only."""
    path = write(tmp_path, "basic_auth_users:\n  alice: *pa55word\n")
    with pytest.raises(WebConfigError, match=r"line 2, column 10: found undefined alias") as e:
        load_web_config(path)
    assert "pa55word" not in str(e.value)


def _command(command: str, tmp_path: Path, web_config: Path) -> list[str]:
    if command == "watch":
        args = ["watch", "--registry", str(registry(tmp_path))]
    else:
        args = ["agent", "--id", "bk1:3181", "--ledger-dirs", str(tmp_path)]
    return [*args, "--metrics-port", "0", "--web-config", str(web_config)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(f"basic_auth_users:\n  alice: {PASSWORD}\n", "not a bcrypt hash", id="clear"),
        pytest.param("tls_server_config: {cert_file: /no/cert, key_file: /no/key}\n", "no such"),
        pytest.param("basic_auth_users: {alice: 'x'\n", "not valid YAML", id="yaml"),
        pytest.param("basic_auth_user: {}\n", "did you mean 'basic_auth_users'", id="typo"),
    ],
)
@pytest.mark.parametrize("command", ["watch", "agent"])
def test_a_bad_web_config_stops_the_command_before_it_starts(
    tmp_path: Path, text: str, expected: str, command: str
) -> None:
    """`trimtab watch|agent --web-config BAD`: one `error:` line on stderr, exit 2, no password
    shown (the test's guard would fail it if it bound a port or started a server)."""
    result = CliRunner().invoke(app, _command(command, tmp_path, write(tmp_path, text)))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: web config ") and expected in lines[0]
    assert PASSWORD not in result.output and result.stdout == ""


def test_agent_refuses_web_config_without_metrics_port(tmp_path: Path) -> None:
    """`--web-config` secures the metrics endpoint; without `--metrics-port` it is an error."""
    args = ["agent", "--id", "bk1:3181", "--ledger-dirs", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--web-config", str(write(tmp_path, ""))])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: --web-config secures the metrics endpoint: give --metrics-port too"
    )


def _documented_web_configs() -> list[str]:
    page = Path(__file__).parents[1] / "docs" / "security.md"
    fences = re.findall(r"^```yaml\n(.*?)^```", page.read_text(), re.S | re.M)
    return [
        body for body in fences if re.search(r"^(tls_server_config|basic_auth_users):", body, re.M)
    ]


def test_the_documented_web_config_is_accepted(tmp_path: Path) -> None:
    """The example of docs/security.md parses as written (its files are the reader's own)."""
    examples = _documented_web_configs()
    assert examples, "docs/security.md shows no web config"
    for body in examples:
        config = load_web_config(write(tmp_path, body))
        assert config.tls is not None and config.tls.client_auth_type.startswith("Require")
        assert config.users
