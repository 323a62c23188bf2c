"""ZooKeeper security from upstream's settings, without a server: where the JAAS file is found,
what its Client section must hold, digest credentials, TLS stores and the ACL (issue 41)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.security import Permissions

from trimtab.config import Config
from trimtab.errors import ConfigError
from trimtab.systems.zookeeper import NO_SECURITY, ZkTarget, zk_security
from trimtab.systems.zookeeper.jaas import parse_jaas_section

JAAS = """
// the bookie's login
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="bookie"
  password="pa\\"ss";
};
/* the server's, ignored by clients */
Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bookie="x"; };
"""


def _jaas(tmp_path: Path, text: str = JAAS) -> Path:
    path = tmp_path / "jaas.conf"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_client_section_gives_user_and_password() -> None:
    login = parse_jaas_section(JAAS, "Client", source="f")
    assert (login.username, login.password) == ("bookie", 'pa"ss')
    assert 'pa"ss' not in repr(login)


def test_missing_section_and_kerberos_are_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"no 'Other' section .*sections: Client, Server"):
        parse_jaas_section(JAAS, "Other", source="f")
    krb = "Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };"
    with pytest.raises(ConfigError, match="DIGEST-MD5 only"):
        parse_jaas_section(krb, "Client", source="f")


@pytest.mark.parametrize(
    "where",
    ["config", "TRIMTAB_JAAS_CONFIG", "CLIENT_JVMFLAGS", "BOOKIE_EXTRA_OPTS", "PULSAR_EXTRA_OPTS"],
)
def test_jaas_file_is_found_where_upstream_puts_it(tmp_path: Path, where: str) -> None:
    """The config key, trimtab's variable, or a -D flag in upstream's JVM option variables."""
    path = _jaas(tmp_path)
    if where == "config":
        cfg, env = Config.of(**{"java.security.auth.login.config": str(path)}), {}
    elif where == "TRIMTAB_JAAS_CONFIG":
        cfg, env = Config(), {where: str(path)}
    else:
        cfg, env = Config(), {where: f"-Xmx1g -Djava.security.auth.login.config={path} -Dx=y"}
    security = zk_security(cfg, env=env)
    assert security.sasl is not None and security.sasl.username == "bookie"
    assert security.client_options()["sasl_options"]["mechanism"] == "DIGEST-MD5"


def test_sasl_client_false_ignores_the_jaas_file(tmp_path: Path) -> None:
    cfg = Config.of(**{"zookeeper.sasl.client": "false"})
    assert zk_security(cfg, env={"TRIMTAB_JAAS_CONFIG": str(_jaas(tmp_path))}) == NO_SECURITY


def test_no_settings_is_no_security() -> None:
    assert zk_security(Config(), env={}) == NO_SECURITY
    assert NO_SECURITY.client_options() == {} and NO_SECURITY.acls() is None
    assert ZkTarget("h:1").security == NO_SECURITY


def test_digest_from_the_environment_and_secure_acls() -> None:
    security = zk_security(
        Config.of(zkEnableSecurity=True), env={"TRIMTAB_ZK_DIGEST": "alice:pw-1234"}
    )
    assert security.client_options()["auth_data"] == [("digest", "alice:pw-1234")]
    acls = security.acls()
    assert acls is not None
    assert {(a.id.scheme, a.id.id, a.perms) for a in acls} == {
        ("auth", "", Permissions.ALL),
        ("world", "anyone", Permissions.READ),
    }
    assert "pw-1234" not in repr(security)


def test_malformed_digest_is_refused() -> None:
    with pytest.raises(ConfigError, match="must be user:password"):
        zk_security(Config(), env={"TRIMTAB_ZK_DIGEST": "just-a-password"})


def test_tls_reads_pem_stores_and_refuses_other_types(tmp_path: Path) -> None:
    ca, store = tmp_path / "ca.pem", tmp_path / "client.pem"
    ca.write_text("x")
    store.write_text("x")
    cfg = Config.of(
        **{
            "zookeeper.client.secure": "true",
            "zookeeper.ssl.trustStore.location": str(ca),
            "zookeeper.ssl.keyStore.location": str(store),
            "zookeeper.ssl.keyStore.type": "PEM",
            "zookeeper.ssl.hostnameVerification": "false",
        }
    )
    options = zk_security(cfg, env={}).client_options()
    assert options["use_ssl"] and options["ca"] == str(ca)
    assert options["certfile"] == options["keyfile"] == str(store)
    assert options["check_hostname"] is False
    jks = Config.of(
        **{
            "zookeeper.client.secure": "true",
            "zookeeper.ssl.trustStore.type": "JKS",
            "zookeeper.ssl.trustStore.location": str(ca),
        }
    )
    with pytest.raises(ConfigError, match="PEM files only"):
        zk_security(jks, env={})


@pytest.mark.parametrize(
    ("openssl", "said"),
    [
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired",
            "has expired: renew it",
        ),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch",
            "does not name the host dialled",
        ),
        (
            "certificate verify failed: unable to get local issuer certificate",
            "not signed by a CA in zookeeper.ssl.trustStore",
        ),
        ("[SSL: WRONG_VERSION_NUMBER] wrong version number", "does not speak TLS there"),
    ],
    ids=["expired", "wrong host", "wrong CA", "plaintext server"],
)
def test_tls_failures_are_told_apart(openssl: str, said: str) -> None:
    """OpenSSL's reason becomes what happened and what to fix."""
    from trimtab.systems.zookeeper.session import _tls_reason

    assert said in _tls_reason(f"Connection dropped: socket connection error: {openssl}")


def test_a_zookeeper_client_file_loads_as_it_is(tmp_path: Path) -> None:
    """ZooKeeper's client keys trimtab does not read are accepted and listed as ignored; a
    trust store password is one of them, and it is never shown."""
    from trimtab.config.loader import read_config

    conf = tmp_path / "zk-client.properties"
    conf.write_text(
        "zookeeper.client.secure=true\n"
        "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
        "zookeeper.ssl.trustStore.password=trust-pw-77\n"
        "zookeeper.ssl.protocol=TLSv1.3\n"
        "zookeeper.sasl.client.username=zookeeper\n"
    )
    loaded = read_config(conf)
    assert loaded.config.zookeeper.client_secure
    ignored = {i.key: i.defined_in for i in loaded.ignored}
    assert ignored["zookeeper.ssl.trustStore.password"] == ("ZooKeeper client (ZKClientConfig)",)
    assert set(ignored) == {
        "zookeeper.ssl.trustStore.password",
        "zookeeper.ssl.protocol",
        "zookeeper.sasl.client.username",
    }


def test_a_store_named_jks_is_refused_without_a_type(tmp_path: Path) -> None:
    """ZooKeeper infers the store type from the file name: trimtab refuses a .jks the same way."""
    store = tmp_path / "truststore.jks"
    store.write_text("x")
    cfg = Config.of(
        **{"zookeeper.client.secure": "true", "zookeeper.ssl.trustStore.location": str(store)}
    )
    with pytest.raises(ConfigError, match="JKS: trimtab reads PEM files only"):
        zk_security(cfg, env={})
