"""ZooKeeper secured as a production cluster is (issue 41): SASL DIGEST-MD5 from a JAAS file,
digest, TLS to the secure port, and BookKeeper's ACL on every znode trimtab creates.

Against a real ZooKeeper (Debian's package) started with SASL and a TLS port: a session
without the registration's credentials can neither delete nor overwrite it, the agent keeps
it, and a wrong password or a wrong CA is one ``error:`` line naming the ZooKeeper and what to
fix.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import Permissions

from tests.online.conftest import AgentProcess, ZooKeeperServer, trimtab_command
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import ConfigError, ZooKeeperAccessError
from trimtab.systems.bookkeeper.registry import ZooKeeperRegistrar, read_membership
from trimtab.systems.zookeeper import (
    ZkSecurity,
    ZkTarget,
    make_client,
    start_session,
    zk_security,
)

pytestmark = pytest.mark.online

PASSWORD = "bookie-pw-7f3a"  # searched for in every output
OTHER_PASSWORD = "other-pw-91c2"
_roots = itertools.count()


@dataclass(frozen=True)
class _Tls:
    ca: Path
    other_ca: Path
    server_store: Path  # PKCS#8 key + chain, ZooKeeper's PEM key store
    client_store: Path  # key + chain, signed by ``ca``
    other_client_store: Path  # signed by ``other_ca``


def _store(leaf: trustme.LeafCert, path: Path) -> Path:
    """A PEM key store as ZooKeeper reads one: the PKCS#8 key, then the certificate chain."""
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(pkcs8 + b"".join(p.bytes() for p in leaf.cert_chain_pems))
    path.chmod(0o600)
    return path


def _make_tls(directory: Path) -> _Tls:
    ca, other = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    other.cert_pem.write_to_path(str(directory / "other-ca.pem"))
    return _Tls(
        directory / "ca.pem",
        directory / "other-ca.pem",
        _store(ca.issue_cert("localhost", "127.0.0.1"), directory / "server-store.pem"),
        _store(ca.issue_cert("trimtab-client"), directory / "client-store.pem"),
        _store(other.issue_cert("intruder"), directory / "other-client-store.pem"),
    )


@pytest.fixture(scope="module")
def zk_tls(tmp_path_factory: pytest.TempPathFactory) -> _Tls:
    return _make_tls(tmp_path_factory.mktemp("zk-tls"))


@pytest.fixture(scope="module")
def secure_zk(tmp_path_factory: pytest.TempPathFactory, zk_tls: _Tls) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(
        tmp_path_factory.mktemp("secure-zookeeper"),
        sasl_users={"bookie": PASSWORD, "other": OTHER_PASSWORD},
        tls_key_store=zk_tls.server_store,
        tls_trust_store=zk_tls.ca,
    )
    server.start()
    yield server
    server.stop()


def _jaas(path: Path, user: str, password: str) -> Path:
    path.write_text(
        "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  username="{user}"\n  password="{password}";\n}};\n'
    )
    path.chmod(0o600)
    return path


def _sasl(directory: Path, user: str, password: str, *, acls: bool = False) -> ZkSecurity:
    """The security of a config that names a JAAS file for ``user`` (and zkEnableSecurity)."""
    jaas = _jaas(directory / f"jaas-{user}-{next(_roots)}.conf", user, password)
    keys: dict[str, object] = {"java.security.auth.login.config": str(jaas)}
    if acls:
        keys["zkEnableSecurity"] = True
    return zk_security(Config.of(**keys))


def _config(path: Path, **keys: object) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
    return path


def _anonymous(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=4)
    client.start(timeout=10)
    return client


def _root() -> str:
    return f"/s{os.getpid()}-{next(_roots)}/ledgers"


def test_registration_is_readable_by_all_and_writable_only_by_its_creator(
    secure_zk: ZooKeeperServer, tmp_path: Path
) -> None:
    """With zkEnableSecurity, the registration and its registry paths carry BookKeeper's ACL;
    a session without the credentials can neither delete nor overwrite it, nor add a node."""
    target = ZkTarget(secure_zk.hosts, _root(), _sasl(tmp_path, "bookie", PASSWORD, acls=True))
    node = NodeId("127.0.0.1:3181")
    registrar = ZooKeeperRegistrar(target, node, "127.0.0.1:9", session_timeout=4.0)
    registrar.start()
    anonymous = _anonymous(secure_zk.hosts)
    path = target.node_path(node, readonly=False)
    try:
        for znode in (path, target.available, target.readonly):
            acls, _ = anonymous.get_acls(znode)
            assert {(a.id.scheme, a.id.id, a.perms) for a in acls} == {
                ("sasl", "bookie", Permissions.ALL),
                ("world", "anyone", Permissions.READ),
            }, znode
        data, _ = anonymous.get(path)  # readable by all
        with pytest.raises(NoAuthError):
            anonymous.delete(path)
        with pytest.raises(NoAuthError):
            anonymous.set(path, b"intruder")
        with pytest.raises(NoAuthError):
            anonymous.create(f"{target.available}/10.0.0.1:3181", b"", ephemeral=True)
        assert registrar.registered
        assert anonymous.get(path)[0] == data
        assert read_membership(target).writable == {node}
    finally:
        anonymous.stop()
        anonymous.close()
        registrar.stop()


def test_another_sasl_user_cannot_delete_a_registration(
    secure_zk: ZooKeeperServer, tmp_path: Path
) -> None:
    """An authenticated session of another identity is refused too: writable by the creator."""
    owner = _sasl(tmp_path, "bookie", PASSWORD, acls=True)
    intruder = _sasl(tmp_path, "other", OTHER_PASSWORD)
    target = ZkTarget(secure_zk.hosts, _root(), owner)
    node = NodeId("127.0.0.1:3182")
    registrar = ZooKeeperRegistrar(target, node, "127.0.0.1:9", session_timeout=4.0)
    registrar.start()
    other = make_client(secure_zk.hosts, session_timeout=4.0, security=intruder)
    start_session(other, hosts=secure_zk.hosts, timeout=10, security=intruder)
    try:
        with pytest.raises(NoAuthError):
            other.delete(target.node_path(node, readonly=False))
        assert registrar.registered
    finally:
        other.stop()
        other.close()
        registrar.stop()


def test_digest_credentials_make_the_creator_a_digest_identity(
    secure_zk: ZooKeeperServer, tmp_path: Path
) -> None:
    """digest_file (user:password, as addauth digest takes it) gives a digest creator ACL."""
    secret = tmp_path / "digest"
    secret.write_text("alice:alice-pw-55\n")
    secret.chmod(0o600)
    cfg = Config.of(zkEnableSecurity=True, digest_file=str(secret))
    target = ZkTarget(secure_zk.hosts, _root(), zk_security(cfg))
    node = NodeId("127.0.0.1:3183")
    registrar = ZooKeeperRegistrar(target, node, "127.0.0.1:9", session_timeout=4.0)
    registrar.start()
    anonymous = _anonymous(secure_zk.hosts)
    try:
        acls, _ = anonymous.get_acls(target.node_path(node, readonly=False))
        assert {a.id.scheme for a in acls} == {"digest", "world"}
        with pytest.raises(NoAuthError):
            anonymous.delete(target.node_path(node, readonly=False))
    finally:
        anonymous.stop()
        anonymous.close()
        registrar.stop()


def test_agent_process_keeps_its_registration_against_an_intruder(
    secure_zk: ZooKeeperServer, tmp_path: Path, agents: list[AgentProcess]
) -> None:
    """The real agent, secured by its config file alone: an anonymous session's delete is
    refused and the agent stays registered and answering."""
    target = ZkTarget(secure_zk.hosts, _root())
    agent = AgentProcess(tmp_path, "127.0.0.1:3184", target)
    jaas = _jaas(tmp_path / "jaas.conf", "bookie", PASSWORD)
    agent.config.write_text(
        agent.config.read_text()
        + f"zkEnableSecurity=true\njava.security.auth.login.config={jaas}\n"
    )
    agents.append(agent.start())
    anonymous = _anonymous(secure_zk.hosts)
    path = target.node_path(agent.node, readonly=False)
    try:
        assert anonymous.exists(path) is not None
        with pytest.raises(NoAuthError):
            anonymous.delete(path)
        with pytest.raises(NoAuthError):
            anonymous.set(path, b"")
        assert anonymous.exists(path) is not None
        assert read_membership(target).writable == {agent.node}
    finally:
        anonymous.stop()
        anonymous.close()
    assert agent.stop() == 0
    log = (tmp_path / "agent-127.0.0.1_3184.log").read_text()
    assert PASSWORD not in log


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*trimtab_command(), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_wrong_password_is_one_error_line(secure_zk: ZooKeeperServer, tmp_path: Path) -> None:
    """A refused SASL login names the ZooKeeper, the user and what to fix; no traceback, and
    neither password is shown."""
    jaas = _jaas(tmp_path / "jaas.conf", "bookie", "not-the-password")
    conf = _config(tmp_path / "c.properties", **{"java.security.auth.login.config": jaas})
    run = _run("bookieinfo", "--zk", secure_zk.hosts, "-c", str(conf))
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: ZooKeeper 127.0.0.1:")
    assert "authentication failed" in lines[0] and "'bookie'" in lines[0]
    assert "not-the-password" not in run.stderr + run.stdout


@pytest.mark.subprocess
def test_security_on_without_credentials_is_a_config_error(tmp_path: Path) -> None:
    """zkEnableSecurity with no JAAS file or digest credentials is refused before dialling."""
    conf = _config(tmp_path / "c.properties", zkEnableSecurity="true")
    run = _run("bookieinfo", "--zk", "127.0.0.1:1", "-c", str(conf))
    assert run.returncode == 2
    assert run.stderr.startswith("error: zkEnableSecurity is on but trimtab has no ZooKeeper")
    with pytest.raises(ConfigError):
        zk_security(Config.of(zkEnableSecurity=True), env={})


def test_tls_to_the_secure_port_with_sasl(
    secure_zk: ZooKeeperServer, zk_tls: _Tls, tmp_path: Path
) -> None:
    """zookeeper.client.secure with a PEM trust store reaches the TLS port and logs in."""
    cfg = Config.of(
        zkEnableSecurity=True,
        **{
            "zookeeper.client.secure": True,
            "zookeeper.ssl.trustStore.location": str(zk_tls.ca),
            "zookeeper.ssl.trustStore.type": "PEM",
            "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
            "java.security.auth.login.config": str(_jaas(tmp_path / "j", "bookie", PASSWORD)),
        },
    )
    target = ZkTarget(secure_zk.secure_hosts, _root(), zk_security(cfg))
    node = NodeId("127.0.0.1:3185")
    registrar = ZooKeeperRegistrar(target, node, "127.0.0.1:9", session_timeout=4.0)
    registrar.start()
    try:
        assert registrar.registered
        assert read_membership(target).writable == {node}
    finally:
        registrar.stop()


def test_tls_with_the_wrong_ca_is_one_error_line(
    secure_zk: ZooKeeperServer, zk_tls: _Tls, tmp_path: Path
) -> None:
    """A server certificate the trust store does not vouch for names the port and the fix."""
    conf = _config(
        tmp_path / "c.properties",
        **{
            "zookeeper.client.secure": "true",
            "zookeeper.ssl.trustStore.location": zk_tls.other_ca,
        },
    )
    run = _run("bookieinfo", "--zk", secure_zk.secure_hosts, "-c", str(conf), "--timeout", "3")
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: TLS to ZooKeeper {secure_zk.secure_hosts} failed")
    assert "trustStore" in lines[0]


def test_wrong_password_in_process_is_an_access_error(
    secure_zk: ZooKeeperServer, tmp_path: Path
) -> None:
    """The registrar refuses to start with a wrong password: ZooKeeperAccessError, no thread."""
    target = ZkTarget(secure_zk.hosts, _root(), _sasl(tmp_path, "bookie", "nope-nope"))
    registrar = ZooKeeperRegistrar(target, NodeId("127.0.0.1:3186"), "127.0.0.1:9")
    with pytest.raises(ZooKeeperAccessError, match="authentication failed"):
        registrar.start(timeout=10)


SAMPLE = Path(__file__).parents[2] / "src" / "trimtab" / "data" / "sample_inventory.csv"


def _commands(hosts: str, tmp: Path) -> dict[str, list[str]]:
    (tmp / "ledgers").mkdir(exist_ok=True)
    inv = ["-i", str(SAMPLE), "--cluster", "bk-prod"]
    return {
        "agent": [
            "agent",
            "--id",
            "127.0.0.1:3190",
            "--ledger-dirs",
            str(tmp / "ledgers"),
            "--listen",
            "127.0.0.1:0",
            "--zk",
            hosts,
        ],
        "bookieinfo": ["bookieinfo", "--zk", hosts],
        "watch": ["watch", "--zk", hosts, "--metrics-port", "0"],
        "shed --zk": ["shed", "--zk", hosts],
        "topology --pulsar-racks": ["topology", *inv, "--pulsar-racks", hosts],
    }


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("agent", marks=pytest.mark.server),  # a trimtab agent process
        "bookieinfo",
        "watch",
        "shed --zk",
        "topology --pulsar-racks",
    ],
)
def test_every_command_that_dials_zookeeper_logs_in_from_the_config(
    secure_zk: ZooKeeperServer, tmp_path: Path, command: str
) -> None:
    """Each command takes ZooKeeper security from its config file alone: a wrong password is
    the same one error line for all (so all of them tried to log in), and never a traceback."""
    jaas = _jaas(tmp_path / "jaas.conf", "bookie", "wrong-password-4d")
    conf = _config(
        tmp_path / "c.properties",
        **{
            "java.security.auth.login.config": jaas,
            "zkServers": secure_zk.hosts,
            "reppDnsResolverClass": "pulsar",  # watch's policy reads /bookies too
            "enforceMinNumRacksPerWriteQuorum": "true",
        },
    )
    run = _run(*_commands(secure_zk.hosts, tmp_path)[command], "-c", str(conf))
    assert run.returncode == 2, (run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: ZooKeeper {secure_zk.hosts} refused the login"), lines[0]
    assert "authentication failed" in lines[0]
    assert "wrong-password-4d" not in run.stdout + run.stderr


def test_plaintext_client_on_the_tls_port_is_one_error_line(
    secure_zk: ZooKeeperServer, tmp_path: Path
) -> None:
    """A session without TLS to the secure port: the server closes it; the line says to turn
    zookeeper.client.secure on (not "cannot reach")."""
    run = _run("bookieinfo", "--zk", secure_zk.secure_hosts)
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"error: ZooKeeper {secure_zk.secure_hosts} accepted the connection")
    assert "zookeeper.client.secure=true" in line


def test_tls_client_on_the_plaintext_port_is_one_error_line(
    secure_zk: ZooKeeperServer, zk_tls: _Tls, tmp_path: Path
) -> None:
    """TLS to the plaintext client port: the line says the server does not speak TLS there."""
    conf = _config(
        tmp_path / "c.properties",
        **{"zookeeper.client.secure": "true", "zookeeper.ssl.trustStore.location": zk_tls.ca},
    )
    run = _run("bookieinfo", "--zk", secure_zk.hosts, "-c", str(conf))
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"error: TLS to ZooKeeper {secure_zk.hosts} failed: the server does")
    assert "secureClientPort" in line


def test_an_open_registry_path_is_reported(
    secure_zk: ZooKeeperServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A registry path made earlier with the open ACL leaves registrations deletable (a delete
    is checked on the parent): the registrar says so in a warning naming the path."""
    target = ZkTarget(secure_zk.hosts, _root(), _sasl(tmp_path, "bookie", PASSWORD, acls=True))
    anonymous = _anonymous(secure_zk.hosts)
    anonymous.ensure_path(target.readonly)  # world:anyone:cdrwa
    registrar = ZooKeeperRegistrar(target, NodeId("127.0.0.1:3187"), "127.0.0.1:9")
    try:
        with caplog.at_level("WARNING", logger="trimtab"):
            registrar.start()
        assert any(
            target.available in r.getMessage() and "writable by anyone" in r.getMessage()
            for r in caplog.records
        )
        anonymous.delete(target.node_path(NodeId("127.0.0.1:3187"), readonly=False))
    finally:
        anonymous.stop()
        anonymous.close()
        registrar.stop()


@pytest.mark.zookeeper
def test_a_login_refused_after_a_restart_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server's password changes while the agent runs: kazoo gives up reconnecting, and the
    registrar says once that the node is no longer registered and what to do."""
    import time

    server = ZooKeeperServer(tmp_path / "zk", sasl_users={"bookie": PASSWORD})
    server.start()
    target = ZkTarget(server.hosts, "/ledgers", _sasl(tmp_path, "bookie", PASSWORD))
    registrar = ZooKeeperRegistrar(target, NodeId("127.0.0.1:3188"), "127.0.0.1:9")
    try:
        registrar.start()
        server.stop()
        assert server.jaas is not None
        server.jaas.write_text(server.jaas.read_text().replace(PASSWORD, "changed-pw-1"))
        with caplog.at_level("WARNING", logger="trimtab"):
            server.start()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and registrar.last_error is None:
                time.sleep(0.2)
        assert registrar.last_error == "ZooKeeper refused the login"
        assert not registrar.registered
        assert [r for r in caplog.records if "no longer registered" in r.getMessage()]
    finally:
        registrar.stop()
        server.stop()


def test_shed_on_a_locked_metadata_tree_is_one_error_line(
    secure_zk: ZooKeeperServer, tmp_path: Path
) -> None:
    """``shed --zk`` creates /loadbalance/brokers when missing; a tree the brokers' identity owns
    refuses that (NoAuth): one line naming the path, not a traceback."""
    owner = _sasl(tmp_path, "bookie", PASSWORD, acls=True)
    chroot = f"/p{os.getpid()}-{next(_roots)}"
    client = make_client(secure_zk.hosts, session_timeout=4.0, security=owner)
    start_session(client, hosts=secure_zk.hosts, timeout=10, security=owner)
    try:
        client.ensure_path(f"{chroot}/loadbalance", acl=owner.acls())
    finally:
        client.stop()
        client.close()
    run = _run("shed", "--zk", f"{secure_zk.hosts}{chroot}")
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"error: ZooKeeper {secure_zk.hosts}{chroot} refused creating")
    assert "(NoAuth)" in line


@pytest.fixture(scope="module")
def mutual_tls_zk(
    tmp_path_factory: pytest.TempPathFactory, zk_tls: _Tls
) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(
        tmp_path_factory.mktemp("mtls-zookeeper"),
        tls_key_store=zk_tls.server_store,
        tls_trust_store=zk_tls.ca,
        tls_client_auth="need",
    )
    server.start()
    yield server
    server.stop()


def _tls_conf(path: Path, ca: Path, key_store: Path | None) -> Path:
    keys: dict[str, object] = {
        "zookeeper.client.secure": "true",
        "zookeeper.ssl.trustStore.location": ca,
    }
    if key_store is not None:
        keys["zookeeper.ssl.keyStore.location"] = key_store
        keys["zookeeper.ssl.keyStore.type"] = "PEM"
    return _config(path, **keys)


def test_mutual_tls_with_the_client_key_store(
    mutual_tls_zk: ZooKeeperServer, zk_tls: _Tls, tmp_path: Path
) -> None:
    """ssl.clientAuth=need: the PEM key store (key + chain in one file) is the client's proof."""
    conf = _tls_conf(tmp_path / "c.properties", zk_tls.ca, zk_tls.client_store)
    run = _run("bookieinfo", "--zk", mutual_tls_zk.secure_hosts, "-c", str(conf), "--json")
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(
    ("store", "said"),
    [
        (None, "the server requires a client certificate"),
        ("other", "the server refused the client certificate"),
    ],
    ids=["no client certificate", "client certificate from another CA"],
)
def test_mutual_tls_refusals_are_one_error_line(
    mutual_tls_zk: ZooKeeperServer, zk_tls: _Tls, tmp_path: Path, store: str | None, said: str
) -> None:
    """Without a client certificate, or with one from the wrong CA: refused, one line."""
    key_store = zk_tls.other_client_store if store == "other" else None
    conf = _tls_conf(tmp_path / "c.properties", zk_tls.ca, key_store)
    run = _run("bookieinfo", "--zk", mutual_tls_zk.secure_hosts, "-c", str(conf))
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"error: TLS to ZooKeeper {mutual_tls_zk.secure_hosts} failed: ")
    assert said in line


def test_wrong_password_with_a_chroot_is_one_error_line(
    secure_zk: ZooKeeperServer, tmp_path: Path
) -> None:
    """With a chroot kazoo reads "/" while it starts, and meets the refusal there: the same
    one line, not a kazoo exception."""
    jaas = _jaas(tmp_path / "jaas.conf", "bookie", "wrong-password-5e")
    conf = _config(tmp_path / "c.properties", **{"java.security.auth.login.config": jaas})
    hosts = f"{secure_zk.hosts}/some/chroot"
    run = _run("shed", "--zk", hosts, "-c", str(conf))
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"error: ZooKeeper {hosts} refused the login"), line
