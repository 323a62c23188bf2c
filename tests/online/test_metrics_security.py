"""The metrics endpoint secured by ``--web-config``: real TLS, real scrapes with httpx.

A :class:`~trimtab.systems.prometheus.MetricsServer` on loopback with a web config file (mutual
TLS and Basic auth) faces each intrusion of issue 41: a scrape without the password, with a
wrong one, without a client certificate, with one from another CA, in plaintext, or one that
connects and says nothing. Each is refused, and the good scraper is served right after it.
Files changed under the running server are taken up without a restart. The commands people type
(`trimtab watch`, `trimtab agent`) serve the same way, as real processes.
"""

from __future__ import annotations

import json
import select
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from prometheus_client import CollectorRegistry, Gauge

from tests.online.conftest import trimtab_command
from tests.test_cli import registry
from tests.test_web_config import PASSWORD, web_config_text
from tests.tls_certs import TlsFiles, issue_server
from trimtab.systems.prometheus import MetricsServer, load_web_config

pytestmark = pytest.mark.server

GOOD_AUTH = ("prometheus", PASSWORD)


def client_context(files: TlsFiles, *, cert: Path | None, key: Path | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=files.ca)
    if cert is not None and key is not None:
        context.load_cert_chain(cert, key)
    return context


def good_context(files: TlsFiles) -> ssl.SSLContext:
    return client_context(files, cert=files.client_cert, key=files.client_key)


def scrape(
    url: str, context: ssl.SSLContext | bool, auth: tuple[str, str] | None
) -> httpx.Response:
    with httpx.Client(verify=context, timeout=10) as client:
        return client.get(url, auth=auth)


@pytest.fixture
def web_config_file(tmp_path: Path, tls_files: TlsFiles) -> Path:
    path = tmp_path / "web.yml"
    path.write_text(web_config_text(tls_files))
    return path


@pytest.fixture
def secured(web_config_file: Path) -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    Gauge("trimtab_test_up", "1 while the test runs", registry=registry).set(1)
    server = MetricsServer(
        registry, port=0, host="localhost", web_config=load_web_config(web_config_file)
    )
    try:
        yield server
    finally:
        server.close()


def assert_served(server: MetricsServer, files: TlsFiles) -> None:
    response = scrape(server.url, good_context(files), GOOD_AUTH)
    assert response.status_code == 200, response.text
    assert "trimtab_test_up 1.0" in response.text


def test_https_scrape_with_certificate_and_password_is_served(
    secured: MetricsServer, tls_files: TlsFiles
) -> None:
    """The good scraper (client certificate from the CA, right password) gets the metrics."""
    assert secured.url.startswith("https://localhost:")
    assert_served(secured, tls_files)


@pytest.mark.parametrize(
    "auth",
    [
        pytest.param(None, id="no password"),
        pytest.param(("prometheus", "wrong"), id="wrong password"),
        pytest.param(("mallory", PASSWORD), id="unknown user"),
        pytest.param(("prometheus", "x" * 100), id="a password over bcrypt's 72 bytes"),
    ],
)
def test_a_scrape_without_the_password_gets_401(
    secured: MetricsServer, tls_files: TlsFiles, auth: tuple[str, str] | None
) -> None:
    """401 with `WWW-Authenticate: Basic`, no metric in the body; the good scraper still served."""
    response = scrape(secured.url, good_context(tls_files), auth)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Basic"
    assert "trimtab_" not in response.text
    assert_served(secured, tls_files)


@pytest.mark.parametrize(
    "who",
    [
        pytest.param("none", id="no client certificate"),
        pytest.param("other", id="a client certificate from another CA"),
    ],
)
def test_a_client_without_a_good_certificate_is_refused(
    secured: MetricsServer, tls_files: TlsFiles, who: str
) -> None:
    """Under RequireAndVerifyClientCert the handshake fails (even with the right password)."""
    if who == "none":
        context = client_context(tls_files, cert=None, key=None)
    else:
        context = client_context(
            tls_files, cert=tls_files.other_client_cert, key=tls_files.other_client_key
        )
    with pytest.raises(httpx.TransportError):
        scrape(secured.url, context, GOOD_AUTH)
    assert_served(secured, tls_files)


def test_a_plaintext_client_on_the_tls_port_is_refused(
    secured: MetricsServer, tls_files: TlsFiles
) -> None:
    """Plain HTTP gets Go's 400 answer and no metric; the good scraper is served after it."""
    response = scrape(secured.url.replace("https://", "http://"), False, GOOD_AUTH)
    assert response.status_code == 400
    assert "HTTP request to an HTTPS server" in response.text
    assert_served(secured, tls_files)


def test_a_silent_client_does_not_stop_the_others(
    secured: MetricsServer, tls_files: TlsFiles
) -> None:
    """A client that connects and sends nothing holds only its own connection: the handshake
    runs in the connection's thread, not in the accepting one."""
    with socket.create_connection(("localhost", secured.port)) as _silent:
        assert_served(secured, tls_files)


def test_client_names_are_checked_when_listed(tmp_path: Path, tls_files: TlsFiles) -> None:
    """`client_allowed_sans`: a certificate from the CA but not among the names is refused."""
    path = tmp_path / "sans.yml"
    path.write_text(web_config_text(tls_files, extra="  client_allowed_sans: [someone-else]\n"))
    server = MetricsServer(CollectorRegistry(), port=0, web_config=load_web_config(path))
    try:
        url = server.url.replace("127.0.0.1", "localhost")
        with pytest.raises(httpx.TransportError):
            scrape(url, good_context(tls_files), GOOD_AUTH)
        path.write_text(
            web_config_text(tls_files, extra="  client_allowed_sans: [trimtab-client]\n")
        )
        assert scrape(url, good_context(tls_files), GOOD_AUTH).status_code == 200
    finally:
        server.close()


def test_headers_and_rate_limit_apply(tmp_path: Path, tls_files: TlsFiles) -> None:
    """`http_server_config.headers` are on every answer; past `rate_limit.burst`, 429."""
    extra = "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
    extra += "rate_limit:\n  interval: 1h\n  burst: 2\n"
    path = tmp_path / "limited.yml"
    path.write_text("basic_auth_users: {}\n" + extra)
    server = MetricsServer(CollectorRegistry(), port=0, web_config=load_web_config(path))
    try:
        answers = [scrape(server.url, False, None) for _ in range(3)]
    finally:
        server.close()
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert all(a.headers["X-Content-Type-Options"] == "nosniff" for a in answers)


def test_a_changed_password_and_certificate_are_taken_up_without_a_restart(
    secured: MetricsServer,
    web_config_file: Path,
    tls_files: TlsFiles,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Rewriting the file changes the password at the next connection; a broken rewrite keeps
    the previous file in force; a renewed server certificate is served at the next handshake."""
    new_password = "rotated-pass"
    web_config_file.write_text(web_config_text(tls_files, password=new_password))
    assert scrape(secured.url, good_context(tls_files), GOOD_AUTH).status_code == 401
    good = ("prometheus", new_password)
    assert scrape(secured.url, good_context(tls_files), good).status_code == 200
    reloads = secured.reloads

    web_config_file.write_text("tls_server_config: {cert_file: [\n")  # half-written
    assert scrape(secured.url, good_context(tls_files), good).status_code == 200
    assert secured.reloads == reloads
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "keeps its previous web config" in warnings[0]
    assert "not valid YAML" in warnings[0] and new_password not in caplog.text

    other_ca = trustme.CA()
    cert, key = issue_server(other_ca, tmp_path, "renewed")
    text = web_config_text(tls_files, password=new_password)
    web_config_file.write_text(
        text.replace(str(tls_files.server_cert), str(cert)).replace(
            str(tls_files.server_key), str(key)
        )
    )
    with pytest.raises(httpx.ConnectError):  # the old CA no longer signs the server's certificate
        scrape(secured.url, good_context(tls_files), good)
    renewed = ssl.create_default_context(cadata=other_ca.cert_pem.bytes().decode())
    renewed.load_cert_chain(tls_files.client_cert, tls_files.client_key)
    assert scrape(secured.url, renewed, good).status_code == 200


def _ready_line(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None
    readable, _, _ = select.select([proc.stdout], [], [], 60)
    assert readable, "the command printed nothing in 60 s"
    line: dict[str, object] = json.loads(proc.stdout.readline())
    return line


@pytest.mark.subprocess
@pytest.mark.parametrize("command", ["watch", "agent"])
def test_the_commands_serve_metrics_as_the_web_config_says(
    tmp_path: Path, web_config_file: Path, tls_files: TlsFiles, command: str
) -> None:
    """`trimtab watch|agent --metrics-port 0 --web-config FILE --json`: the ready line gives an
    https URL; a scrape without the password gets 401, the good scraper the metrics; the
    password appears in no output."""
    if command == "watch":
        args = ["watch", "--registry", str(registry(tmp_path))]
        metric = "trimtab_bookieinfo_nodes"
    else:
        args = ["agent", "--id", "bk1:3181", "--ledger-dirs", str(tmp_path)]
        metric = "trimtab_agent_disk_free_bytes"
    args += ["--metrics-port", "0", "--metrics-host", "localhost"]
    args += ["--web-config", str(web_config_file), "--json"]
    with subprocess.Popen(
        [*trimtab_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            url = str(_ready_line(proc)["metrics_url"])
            assert url.startswith("https://localhost:")
            assert scrape(url, good_context(tls_files), None).status_code == 401
            response = scrape(url, good_context(tls_files), GOOD_AUTH)
            assert response.status_code == 200 and metric in response.text
        finally:
            proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert PASSWORD not in out + err


def test_without_a_web_config_the_endpoint_is_plain_http_on_loopback() -> None:
    """The default bind stays loopback; no web config: plain HTTP, no login, as before."""
    server = MetricsServer(CollectorRegistry(), port=0)
    try:
        assert server.url == f"http://127.0.0.1:{server.port}/metrics" and not server.tls
        assert scrape(server.url, False, None).status_code == 200
    finally:
        server.close()
