"""The Pulsar target's token and TLS (issue 41 part 3): where the token comes from, the
refusal of cleartext, each TLS failure as one line, and the token in no output."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.standins.pulsar.standin import PulsarStandin, ServerTls
from tests.systems.pulsar.conftest import TOKEN, secret_file
from tests.tls_certs import TlsFiles
from trimtab.errors import TargetError
from trimtab.systems.pulsar.credentials import TOKEN_ENV, resolve_auth
from trimtab.systems.pulsar.target import PulsarTarget, PulsarTargetOptions

Start = Callable[..., PulsarStandin]
USER_TOKEN = "eyJhbGciOiJIUzI1NiJ9.dXNlcg.user-signature"
Connect = Callable[..., PulsarTarget]


def refusal(connect: Connect, url: str, **options: object) -> str:
    with pytest.raises(TargetError) as caught:
        connect(url, **options)
    return str(caught.value)


@pytest.fixture
def secured(pulsar_standin: Start, tls_files: TlsFiles) -> PulsarStandin:
    tls = ServerTls(tls_files.server_cert, tls_files.server_key)
    return pulsar_standin(brokers=3, namespaces={"t/ns": 6}, tokens={TOKEN: "admin"}, tls=tls)


# -- tokens ------------------------------------------------------------------------------------


def test_a_missing_token_says_how_to_give_one(connect: Connect, pulsar_standin: Start) -> None:
    standin = pulsar_standin(tokens={TOKEN: "admin"})
    message = refusal(connect, standin.admin_url)
    assert "401 Authentication required" in message
    assert "--pulsar-token-file" in message
    assert standin.admin_url in message


def test_a_wrong_token_names_its_file_not_its_value(
    connect: Connect, pulsar_standin: Start, tmp_path: Path
) -> None:
    standin = pulsar_standin(tokens={TOKEN: "admin"})
    wrong = secret_file(tmp_path, "not-the-token-at-all")
    message = refusal(connect, standin.admin_url, token_file=wrong, allow_insecure=True)
    assert f"check the token in the token file {wrong}" in message
    assert "not-the-token-at-all" not in message


def test_a_role_that_is_no_super_user_is_told_so(
    connect: Connect, pulsar_standin: Start, tmp_path: Path
) -> None:
    standin = pulsar_standin(tokens={TOKEN: "admin", USER_TOKEN: "app"})
    user = secret_file(tmp_path, USER_TOKEN)
    message = refusal(connect, standin.admin_url, token_file=user, allow_insecure=True)
    assert "is not a super-user" in message


def test_cleartext_with_a_token_is_refused_before_any_call(
    connect: Connect, pulsar_standin: Start, token_file: Path
) -> None:
    """http:// with a token: one line pointing at https:// or --allow-insecure; no call made."""
    standin = pulsar_standin(tokens={TOKEN: "admin"})
    message = refusal(connect, standin.admin_url, token_file=token_file)
    assert message.startswith("refusing to send the Pulsar admin token from the token file")
    assert "--allow-insecure" in message
    assert standin.cluster.counts() == {"reads": 0, "writes": 0}
    target = connect(standin.admin_url, token_file=token_file, allow_insecure=True)
    assert any("cleartext" in w for w in target.warnings)


def test_a_token_file_others_can_read_gets_a_warning(
    connect: Connect, pulsar_standin: Start, tmp_path: Path
) -> None:
    standin = pulsar_standin(tokens={TOKEN: "admin"})
    loose = secret_file(tmp_path, TOKEN, "loose.jwt")
    loose.chmod(0o644)
    target = connect(standin.admin_url, token_file=loose, allow_insecure=True)
    assert any(f"chmod 600 {loose}" in w for w in target.warnings)


@pytest.mark.parametrize(
    ("params", "source"),
    [
        pytest.param(f"token:{TOKEN}", "brokerClientAuthenticationParameters in", id="token:"),
        pytest.param("file://{dir}/t.jwt", "the token file", id="file:"),
        pytest.param("env:MY_PULSAR_TOKEN", "the environment variable MY_PULSAR_TOKEN", id="env:"),
        pytest.param(TOKEN, "brokerClientAuthenticationParameters in", id="bare"),
    ],
)
def test_broker_conf_token_forms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, params: str, source: str
) -> None:
    """brokerClientAuthenticationParameters as AuthenticationToken.configure reads it."""
    secret_file(tmp_path, TOKEN, "t.jwt")
    monkeypatch.setenv("MY_PULSAR_TOKEN", TOKEN)
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\n"
        f"brokerClientAuthenticationParameters={params.format(dir=tmp_path)}\n"
        f"brokerClientTrustCertsFilePath={tmp_path}/ca.pem\n"
    )
    auth = resolve_auth(token_file=None, broker_conf=conf, tls_ca=None, tls_cert=None, tls_key=None)
    assert auth.token == TOKEN
    assert auth.source.startswith(source)
    assert auth.tls_ca == tmp_path / "ca.pem"
    assert TOKEN not in repr(auth)


def test_the_token_file_option_wins_then_broker_conf_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "from-the-environment")
    none = {"broker_conf": None, "tls_ca": None, "tls_cert": None, "tls_key": None}
    assert resolve_auth(token_file=None, **none).source == f"the environment variable {TOKEN_ENV}"
    option = secret_file(tmp_path, TOKEN)
    assert resolve_auth(token_file=option, **none).token == TOKEN
    tls_plugin = tmp_path / "broker.conf"
    tls_plugin.write_text(
        "brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationTls\n"
        "brokerClientAuthenticationParameters=tlsCertFile:/c.pem,tlsKeyFile:/k.pem\n"
    )
    auth = resolve_auth(token_file=None, **(none | {"broker_conf": tls_plugin}))
    assert auth.token == "from-the-environment"  # a TLS plugin's parameters are no token


# -- TLS ---------------------------------------------------------------------------------------


def test_https_with_the_clusters_ca_unloads_through_redirects(
    connect: Connect, secured: PulsarStandin, tls_files: TlsFiles, token_file: Path
) -> None:
    from trimtab.plans.document import Action

    b = secured.brokers
    bundle = secured.cluster.owned_by(b[1])[0]
    action = Action("u1", "unload", bundle, {"owner": b[1]}, {"owner": b[2]})
    target = connect(secured.admin_url, token_file=token_file, tls_ca=tls_files.ca)
    target.submit([action])
    assert secured.cluster.owner(bundle) == b[2]
    assert target.guards([action]).loads.keys() == {b[1], b[2]}


def test_a_wrong_ca_is_one_line(
    connect: Connect, secured: PulsarStandin, tls_files: TlsFiles, token_file: Path
) -> None:
    message = refusal(connect, secured.admin_url, token_file=token_file, tls_ca=tls_files.other_ca)
    assert message.startswith(f"TLS to the Pulsar admin API at {secured.admin_url}")
    assert "not signed by a trusted CA" in message
    assert "--tls-ca" in message


@pytest.mark.parametrize(
    ("cert", "problem"),
    [("wrong_host", "is for another host"), ("expired", "has expired")],
)
def test_a_certificate_for_another_host_or_out_of_date(
    connect: Connect, pulsar_standin: Start, tls_files: TlsFiles, cert: str, problem: str
) -> None:
    tls = ServerTls(getattr(tls_files, f"{cert}_cert"), getattr(tls_files, f"{cert}_key"))
    standin = pulsar_standin(brokers=1, tls=tls)
    assert problem in refusal(connect, standin.admin_url, tls_ca=tls_files.ca)


def test_plaintext_to_a_tls_port_and_tls_to_a_plaintext_port(
    connect: Connect, pulsar_standin: Start, secured: PulsarStandin, tls_files: TlsFiles
) -> None:
    plain_to_tls = secured.admin_url.replace("https://", "http://")
    assert "is it a TLS port? use https://" in refusal(connect, plain_to_tls)
    plain = pulsar_standin(brokers=1)
    tls_to_plain = plain.admin_url.replace("http://", "https://")
    assert "the peer does not speak TLS" in refusal(connect, tls_to_plain, tls_ca=tls_files.ca)


def test_mutual_tls_wants_the_client_certificate(
    connect: Connect, pulsar_standin: Start, tls_files: TlsFiles
) -> None:
    tls = ServerTls(tls_files.server_cert, tls_files.server_key, client_ca=tls_files.ca)
    standin = pulsar_standin(brokers=2, tls=tls)
    assert "client certificate" in refusal(connect, standin.admin_url, tls_ca=tls_files.ca)
    target = connect(
        standin.admin_url,
        tls_ca=tls_files.ca,
        tls_cert=tls_files.client_cert,
        tls_key=tls_files.client_key,
    )
    assert target.observe([]) == {}


def test_an_unreachable_broker_is_one_line(connect: Connect) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    message = refusal(connect, f"http://127.0.0.1:{port}")
    assert message.startswith(f"cannot reach the Pulsar admin API at http://127.0.0.1:{port}")
    assert "check --pulsar-admin" in message


def test_the_token_is_in_no_message_after_failing_runs(
    connect: Connect, pulsar_standin: Start, tls_files: TlsFiles, token_file: Path, tmp_path: Path
) -> None:
    """Every refusal and representation a failing run can show, searched for the token."""
    standin = pulsar_standin(tokens={"another": "admin"}, brokers=2)
    shown = [
        refusal(connect, standin.admin_url, token_file=token_file),
        refusal(connect, standin.admin_url, token_file=token_file, allow_insecure=True),
        refusal(
            connect,
            standin.admin_url.replace("http", "https"),
            token_file=token_file,
            tls_ca=tls_files.ca,
        ),
        repr(PulsarTargetOptions(standin.admin_url, "standalone", token_file=token_file)),
    ]
    with_token = pulsar_standin(tokens={TOKEN: "admin"}, brokers=2)
    target = connect(with_token.admin_url, token_file=token_file, allow_insecure=True)
    shown += [repr(target), repr(target.admin.rest), target.describe(), *target.warnings]
    assert shown
    assert not [line for line in shown if TOKEN in line]
