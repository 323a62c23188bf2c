"""TLS and mutual TLS on the agent's two ports, against the agent as a real process.

The agent runs with ``--tls-cert/--tls-key/--tls-ca --tls-client-auth``; clients are trimtab's own
readers (the library's routing client, and ``trimtab bookieinfo`` once end to end). Every intrusion
(a plaintext client, no client certificate, one from another CA) is refused with the sentence that
names the endpoint and the fix, and a good client is served right after it, on both ports. An
expired server certificate is refused by clients, and renewing the files fixes it without a
restart (certificate reload).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.online.conftest import AgentProcess, trimtab_command
from tests.tls_certs import TlsFiles
from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo import RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind, FetchResult
from trimtab.systems.bookkeeper.bookieinfo.tls import ClientTls

GRPC, V3 = NodeId("grpc-node:3181"), NodeId("v3-node:3181")


def _targets(agent: AgentProcess, *, tls: bool) -> dict[NodeId, str | None]:
    suffix = "+tls" if tls else ""
    return {
        GRPC: f"grpc{suffix}://{agent.ready['address']}",
        V3: f"bookie-rpc{suffix}://{agent.ready['bookie_address']}",
    }


def _ask(
    agent: AgentProcess, tls: ClientTls | None, *, registered_tls: bool = True
) -> dict[NodeId, FetchResult]:
    client = RoutingBookieInfoClient(tls=tls)
    try:
        return client.fetch_many(_targets(agent, tls=registered_tls), timeout=5)
    finally:
        client.close()


def _agent_command(node: str, ledgers: Path) -> list[str]:
    return [*trimtab_command(), "agent", "--id", node, "--ledger-dirs", str(ledgers)]


def _good(files: TlsFiles) -> ClientTls:
    return ClientTls(ca=files.ca, cert=files.client_cert, key=files.client_key)


def _assert_served(results: dict[NodeId, FetchResult]) -> None:
    for node, result in results.items():
        assert isinstance(result, BookieInfo), f"{node}: {result}"


def _assert_refused(results: dict[NodeId, FetchResult], *phrases: str) -> None:
    for node, result in results.items():
        assert isinstance(result, FetchError), f"{node} was served: {result}"
        assert any(p in result.detail for p in phrases), f"{node}: {result}"
        assert "127.0.0.1:" in result.detail or "EUA" in result.detail, result


@pytest.fixture
def mtls_agent(agents: list[AgentProcess], tmp_path: Path, tls_files: TlsFiles) -> AgentProcess:
    """An agent requiring client certificates signed by the test CA, on both ports."""
    agent = AgentProcess(
        tmp_path,
        "bk1:3181",
        None,
        "--tls-cert",
        str(tls_files.server_cert),
        "--tls-key",
        str(tls_files.server_key),
        "--tls-ca",
        str(tls_files.ca),
        "--tls-client-auth",
    )
    agents.append(agent.start())
    return agent


INTRUDERS = [
    pytest.param(
        None,
        False,
        ("speaks TLS on this port", "wants TLS or authentication"),
        id="a plaintext client on the TLS ports is refused",
    ),
    pytest.param(
        "no-cert",
        True,
        ("requires a client certificate",),
        id="a client without a certificate is refused under client auth",
    ),
    pytest.param(
        "other-ca",
        True,
        ("refused our client certificate",),
        id="a client certificate from another CA is refused",
    ),
]


@pytest.mark.parametrize(("who", "registered_tls", "phrases"), INTRUDERS)
def test_intruder_is_refused_and_good_clients_are_still_served(
    mtls_agent: AgentProcess,
    tls_files: TlsFiles,
    who: str | None,
    registered_tls: bool,
    phrases: tuple[str, ...],
) -> None:
    """Each intrusion gets its sentence on both ports; a good client is served after it."""
    _assert_served(_ask(mtls_agent, _good(tls_files)))
    intruder = {
        None: None,
        "no-cert": ClientTls(ca=tls_files.ca),
        "other-ca": ClientTls(
            ca=tls_files.ca, cert=tls_files.other_client_cert, key=tls_files.other_client_key
        ),
    }[who]
    _assert_refused(_ask(mtls_agent, intruder, registered_tls=registered_tls), *phrases)
    _assert_served(_ask(mtls_agent, _good(tls_files)))
    assert mtls_agent.proc is not None and mtls_agent.proc.poll() is None


def test_bookieinfo_cli_reads_the_tls_agent_and_names_what_to_fix(
    mtls_agent: AgentProcess, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """End to end: the registry's +tls addresses, the CLI's options, and the refusal's row."""
    registry = tmp_path / "nodes.csv"
    targets = _targets(mtls_agent, tls=True)
    registry.write_text(
        "id,state,address\n" + "".join(f"{n},writable,{a}\n" for n, a in targets.items())
    )
    base = [*trimtab_command(), "bookieinfo", "--registry", str(registry), "--json"]
    good = [
        "--tls-ca",
        str(tls_files.ca),
        "--tls-cert",
        str(tls_files.client_cert),
        "--tls-key",
        str(tls_files.client_key),
    ]
    done = subprocess.run([*base, *good], capture_output=True, text=True, timeout=60, check=True)
    rows = json.loads(done.stdout)["bookies"]
    assert [r["error"] for r in rows] == [None, None], rows
    refused = subprocess.run(
        [*base, "--tls-ca", str(tls_files.ca)], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 0, refused.stderr
    errors = [r["error"] for r in json.loads(refused.stdout)["bookies"]]
    assert all(e.startswith("tls: 127.0.0.1:") for e in errors), errors
    assert all("--tls-cert and --tls-key" in e for e in errors), errors
    assert "Traceback" not in refused.stderr


def test_expired_certificate_is_refused_and_a_renewal_is_taken_without_restart(
    agents: list[AgentProcess], tmp_path: Path, tls_files: TlsFiles
) -> None:
    """The agent starts with an expired certificate: clients refuse it, naming the expiry;
    the files are renewed in place and the next connections succeed, same process."""
    cert, key = tmp_path / "node.pem", tmp_path / "node.key"
    shutil.copy(tls_files.expired_cert, cert)
    shutil.copy(tls_files.expired_key, key)
    agent = AgentProcess(tmp_path, "bk1:3181", None, "--tls-cert", str(cert), "--tls-key", str(key))
    agents.append(agent.start())
    client_tls = ClientTls(ca=tls_files.ca)
    _assert_refused(_ask(agent, client_tls), "certificate has expired: renew it")
    pid = agent.proc.pid if agent.proc else None
    for source, target in ((tls_files.server_key, key), (tls_files.server_cert, cert)):
        staged = target.with_suffix(".new")
        shutil.copy(source, staged)
        staged.replace(target)  # as cert renewers do: a whole file renamed over the old one
    _assert_served(_ask(agent, client_tls))
    assert agent.proc is not None and agent.proc.pid == pid


def test_tls_client_on_a_plaintext_agent_is_told_so(
    agents: list[AgentProcess], tmp_path: Path, tls_files: TlsFiles
) -> None:
    """The reverse mismatch: TLS asked of ports that speak plaintext, on both protocols."""
    agent = AgentProcess(tmp_path, "bk1:3181", None)
    agents.append(agent.start())
    results = _ask(agent, ClientTls(ca=tls_files.ca), registered_tls=False)
    assert results[GRPC] == FetchError(
        FetchErrorKind.TLS,
        f"{agent.ready['address']} does not speak TLS on this port: start the node with a "
        "certificate, or reach it without TLS settings",
    )
    v3 = results[V3]
    assert isinstance(v3, FetchError) and "START_TLS answered EBADREQ" in v3.detail
    _assert_served(_ask(agent, None, registered_tls=False))


@pytest.mark.server
@pytest.mark.parametrize(
    ("config_lines", "needle"),
    [
        pytest.param(
            ["tlsKeyStoreType=JKS"], "tlsKeyStoreType=JKS", id="a JKS keystore names its key"
        ),
        pytest.param(
            ["tlsTrustStoreType=PKCS12"],
            "tlsTrustStoreType=PKCS12",
            id="a PKCS12 truststore names its key",
        ),
        pytest.param(
            ["tlsClientAuthentication=true"],
            "--tls-ca (tlsTrustStore)",
            id="client authentication without a CA says which CA to give",
        ),
    ],
)
def test_agent_refuses_tls_settings_it_cannot_use_in_one_line(
    tmp_path: Path, tls_files: TlsFiles, config_lines: list[str], needle: str
) -> None:
    """Upstream's key names are read; what trimtab cannot use is one error line, no traceback."""
    conf = tmp_path / "bk_server.conf"
    conf.write_text(
        f"tlsCertificatePath={tls_files.server_cert}\ntlsKeyStore={tls_files.server_key}\n"
        + "".join(f"{line}\n" for line in config_lines)
    )
    (tmp_path / "ledgers").mkdir()
    done = subprocess.run(
        [*_agent_command("bk1:3181", tmp_path / "ledgers"), "--config", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], done.stderr


def test_agent_takes_upstream_keys_and_a_wrong_key_file_is_one_line(
    agents: list[AgentProcess], tmp_path: Path, tls_files: TlsFiles
) -> None:
    """tlsCertificatePath/tlsKeyStore/tlsTrustStore/tlsClientAuthentication start a mutual-TLS
    agent; a key that is not the certificate's is refused at start, naming both files."""
    agent = AgentProcess(tmp_path, "bk1:3181", None)
    agent.config.write_text(
        f"tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory\n"
        f"tlsCertificatePath={tls_files.server_cert}\ntlsKeyStore={tls_files.server_key}\n"
        f"tlsKeyStoreType=PEM\ntlsTrustStore={tls_files.ca}\ntlsTrustStoreType=PEM\n"
        "tlsClientAuthentication=true\n"
    )
    agents.append(agent.start())
    _assert_served(_ask(agent, _good(tls_files)))
    _assert_refused(_ask(agent, ClientTls(ca=tls_files.ca)), "requires a client certificate")
    done = subprocess.run(
        [
            *_agent_command("bk2:3181", agent.ledger_dir),
            *("--tls-cert", str(tls_files.server_cert), "--tls-key", str(tls_files.client_key)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.startswith("error: cannot use the certificate")
    assert str(tls_files.client_key) in done.stderr and "Traceback" not in done.stderr


def test_reader_takes_a_renewed_client_certificate_without_restart(
    mtls_agent: AgentProcess, tmp_path: Path, tls_files: TlsFiles
) -> None:
    """One reader, kept across scans: its client certificate from the wrong CA is refused;
    the files are renewed in place and its next scan is served on both ports."""
    cert, key = tmp_path / "reader.pem", tmp_path / "reader.key"
    shutil.copy(tls_files.other_client_cert, cert)
    shutil.copy(tls_files.other_client_key, key)
    client = RoutingBookieInfoClient(tls=ClientTls(ca=tls_files.ca, cert=cert, key=key))
    try:
        targets = _targets(mtls_agent, tls=True)
        _assert_refused(client.fetch_many(targets, timeout=5), "refused our client certificate")
        for source, target in ((tls_files.client_key, key), (tls_files.client_cert, cert)):
            staged = target.with_suffix(".new")
            shutil.copy(source, staged)
            staged.replace(target)
        _assert_served(client.fetch_many(targets, timeout=5))
    finally:
        client.close()
