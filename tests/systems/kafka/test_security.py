"""``--command-config`` for the Kafka target: SASL (PLAIN, SCRAM) and TLS with PEM files,
against the broker stand-in; every failure is one line naming the endpoint, never a password."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.standins.kafka import Cluster, KafkaStandin
from tests.systems.kafka.helpers import move
from tests.tls_certs import TlsFiles
from trimtab.config.secrets import scrub
from trimtab.errors import TargetError
from trimtab.plans.target import Check
from trimtab.systems.kafka.command_config import read_command_config
from trimtab.systems.kafka.target import KafkaTargetOptions, connect_kafka

PASSWORD = "s3cret-Pa55word"


def _props(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def _jaas(module: str, password: str = PASSWORD) -> str:
    return f'sasl.jaas.config={module} required username="admin" password="{password}";\n'


def _reaches(bootstrap: str, config: Path) -> None:
    """Connect with ``config`` and check one action: the cluster was reached and answered."""
    target = connect_kafka(KafkaTargetOptions(bootstrap, command_config=config))
    try:
        assert target.observe([move(0, [1, 2, 3], [1, 2, 4])])["orders/0"].check is Check.READY
    finally:
        target.close()


PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.fixture
def tls_server(tls_files: TlsFiles) -> ssl.SSLContext:
    """A broker's TLS context: the test CA's server certificate for localhost."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(str(tls_files.server_cert), str(tls_files.server_key))
    return server


@pytest.fixture
def sasl_standin(kafka_cluster: Cluster) -> Iterator[KafkaStandin]:
    with KafkaStandin(kafka_cluster, users={"admin": PASSWORD}) as standin:
        yield standin


@pytest.mark.server
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_login_with_the_tools_properties(
    sasl_standin: KafkaStandin, tmp_path: Path, mechanism: str
) -> None:
    """A SASL_PLAINTEXT listener is reached with the properties kafka-*.sh take."""
    module = PLAIN if mechanism == "PLAIN" else SCRAM
    config = _props(
        tmp_path / "client.properties",
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n" + _jaas(module),
    )
    _reaches(sasl_standin.bootstrap, config)


@pytest.mark.server
def test_wrong_password_is_one_line_without_the_password(
    sasl_standin: KafkaStandin, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """SASL_AUTHENTICATION_FAILED is one TargetError naming the endpoint; no password anywhere."""
    wrong = "not-the-Pa55word"
    config = _props(
        tmp_path / "client.properties",
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" + _jaas(PLAIN, wrong),
    )
    with pytest.raises(TargetError) as err:
        connect_kafka(
            KafkaTargetOptions(sasl_standin.bootstrap, command_config=config, timeout_s=5)
        )
    message = str(err.value)
    assert "authentication failed" in message and sasl_standin.bootstrap in message
    assert "\n" not in message and wrong not in message
    out, errors = capfd.readouterr()
    assert wrong not in out + errors
    assert scrub(f"x {wrong} y") == "x *** y"  # remembered: every output scrubs it


@pytest.mark.server
def test_tls_with_a_pem_truststore(
    kafka_cluster: Cluster, tls_files: TlsFiles, tls_server: ssl.SSLContext, tmp_path: Path
) -> None:
    """An SSL listener whose certificate the PEM truststore verifies is reached."""
    config = _props(
        tmp_path / "tls.properties",
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={tls_files.ca}\n",
    )
    with KafkaStandin(kafka_cluster, tls=tls_server) as standin:
        _reaches(standin.bootstrap, config)


@pytest.mark.server
def test_tls_with_the_wrong_ca_is_refused(
    kafka_cluster: Cluster, tls_files: TlsFiles, tls_server: ssl.SSLContext, tmp_path: Path
) -> None:
    """A certificate the truststore does not verify: one line saying to check the truststore."""
    config = _props(
        tmp_path / "tls.properties",
        "security.protocol=SSL\nssl.truststore.type=PEM\n"
        f"ssl.truststore.location={tls_files.other_ca}\n",
    )
    with KafkaStandin(kafka_cluster, tls=tls_server) as standin, pytest.raises(TargetError) as err:
        connect_kafka(KafkaTargetOptions(standin.bootstrap, command_config=config, timeout_s=5))
    assert "does not verify" in str(err.value) and "ssl.truststore.location" in str(err.value)


def test_tls_to_a_plaintext_listener_is_named(
    kafka_standin: KafkaStandin, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """security.protocol=SSL against a PLAINTEXT listener says the peer does not speak TLS."""
    config = _props(
        tmp_path / "tls.properties",
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={tls_files.ca}\n",
    )
    with pytest.raises(TargetError) as err:
        connect_kafka(
            KafkaTargetOptions(kafka_standin.bootstrap, command_config=config, timeout_s=3)
        )
    assert "does not speak TLS" in str(err.value)


def test_unreachable_brokers_are_one_line() -> None:
    """No broker answering: one line naming every bootstrap server tried."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens here once closed
    with pytest.raises(TargetError) as err:
        connect_kafka(KafkaTargetOptions(f"127.0.0.1:{port}", timeout_s=2))
    assert f"cannot reach kafka 127.0.0.1:{port}" in str(err.value)


@pytest.mark.parametrize(
    ("servers", "expected"),
    [("", "is empty"), ("kafka-1", "is not host:port"), ("kafka-1:99999", "is not host:port")],
    ids=["empty", "no port", "port out of range"],
)
def test_bad_bootstrap_servers_are_refused_before_connecting(servers: str, expected: str) -> None:
    """--bootstrap-servers is checked before any connection."""
    with pytest.raises(TargetError, match=expected):
        connect_kafka(KafkaTargetOptions(servers))


class TestCommandConfig:
    """Reading the client properties file of Kafka's tools."""

    def test_sasl_ssl_file_is_read(self, tmp_path: Path, tls_files: TlsFiles) -> None:
        """Protocol, mechanism, login and PEM files come through; the password not in repr."""
        path = _props(
            tmp_path / "c.properties",
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            + _jaas(SCRAM)
            + f"ssl.truststore.type=PEM\nssl.truststore.location={tls_files.ca}\n"
            + "ssl.endpoint.identification.algorithm=\nclient.id=ops\n",
        )
        security = read_command_config(path)
        assert (security.protocol, security.mechanism, security.username) == (
            "SASL_SSL",
            "SCRAM-SHA-512",
            "admin",
        )
        assert security.password == PASSWORD and PASSWORD not in repr(security)
        assert security.truststore == tls_files.ca and not security.check_hostname
        assert security.warnings == ()

    def test_a_jks_store_is_refused_with_what_to_use(self, tmp_path: Path) -> None:
        """Python's TLS reads PEM only: a JKS truststore is refused, saying to convert it."""
        path = _props(
            tmp_path / "c.properties",
            "security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n",
        )
        with pytest.raises(TargetError, match=r"ssl\.truststore\.type=JKS.*PEM"):
            read_command_config(path)

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n", "GSSAPI is not"),
            ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n", "needs sasl.jaas.config"),
            ("security.protocol=TLS\n", "security.protocol=TLS is not one of"),
            (
                "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                "com.sun.security.auth.module.Krb5LoginModule required;\n",
                "Krb5LoginModule",
            ),
        ],
        ids=["kerberos", "no login", "unknown protocol", "kerberos module"],
    )
    def test_unusable_settings_are_one_line(self, tmp_path: Path, text: str, expected: str) -> None:
        """Each unusable setting is refused naming the file and the key."""
        with pytest.raises(TargetError, match=expected) as err:
            read_command_config(_props(tmp_path / "c.properties", text))
        assert "--command-config" in str(err.value)

    def test_readable_secret_file_and_unknown_keys_warn(self, tmp_path: Path) -> None:
        """A password in a file others can read warns as ssh does; unknown ssl.* keys too."""
        path = _props(
            tmp_path / "c.properties",
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            + _jaas(PLAIN)
            + "ssl.cipher.suitez=x\n",
            mode=0o644,
        )
        warnings = read_command_config(path).warnings
        assert any("chmod 600" in w for w in warnings)
        assert any("ssl.cipher.suitez" in w for w in warnings)
        assert not any(PASSWORD in w for w in warnings)

    def test_no_file_is_plaintext(self) -> None:
        """Without --command-config the client speaks PLAINTEXT, as Kafka's tools do."""
        assert read_command_config(None).protocol == "PLAINTEXT"


@pytest.mark.server
def test_mutual_tls_with_a_pem_keystore(
    kafka_cluster: Cluster, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """A listener that requires client certificates takes the PEM keystore (key + chain)."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(tls_files.ca))
    server.load_cert_chain(str(tls_files.server_cert), str(tls_files.server_key))
    server.verify_mode = ssl.CERT_REQUIRED
    keystore = tmp_path / "client-keystore.pem"
    keystore.write_bytes(tls_files.client_key.read_bytes() + tls_files.client_cert.read_bytes())
    keystore.chmod(0o600)
    base = (
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={tls_files.ca}\n"
    )
    with_key = _props(
        tmp_path / "mtls.properties",
        base + f"ssl.keystore.type=PEM\nssl.keystore.location={keystore}\n",
    )
    without = _props(tmp_path / "tls.properties", base)
    with KafkaStandin(kafka_cluster, tls=server) as standin:
        _reaches(standin.bootstrap, with_key)
        with pytest.raises(TargetError) as err:
            connect_kafka(
                KafkaTargetOptions(standin.bootstrap, command_config=without, timeout_s=3)
            )
        assert "client certificate" in str(err.value)


@pytest.mark.server
def test_a_certificate_for_another_host_is_named(
    kafka_cluster: Cluster, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """Host-name checking (ssl.endpoint.identification.algorithm=https, the default) refuses a
    certificate for another name, and says so; turning it off accepts it."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(str(tls_files.wrong_host_cert), str(tls_files.wrong_host_key))
    base = (
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={tls_files.ca}\n"
    )
    checked = _props(tmp_path / "checked.properties", base)
    unchecked = _props(
        tmp_path / "unchecked.properties", base + "ssl.endpoint.identification.algorithm=\n"
    )
    with KafkaStandin(kafka_cluster, tls=server) as standin:
        with pytest.raises(TargetError, match="does not name this host"):
            connect_kafka(
                KafkaTargetOptions(standin.bootstrap, command_config=checked, timeout_s=3)
            )
        target = connect_kafka(KafkaTargetOptions(standin.bootstrap, command_config=unchecked))
        target.close()
