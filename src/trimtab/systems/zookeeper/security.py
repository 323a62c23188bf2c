"""How trimtab logs in to ZooKeeper, over what, and which ACL its znodes carry (issue 41).

:func:`zk_security` turns the ``zookeeper`` section of the configuration
(:mod:`trimtab.config.zookeeper`: upstream's ``zkEnableSecurity``, the JAAS file, ZooKeeper's
client TLS properties) and the environment into one :class:`ZkSecurity`, which every session
trimtab opens is made with (:func:`~trimtab.systems.zookeeper.session.make_client`):

- *credentials*: SASL DIGEST-MD5 with the JAAS file's ``Client`` section (the file's path from
  ``java.security.auth.login.config`` in the config, ``TRIMTAB_JAAS_CONFIG``, or a
  ``-Djava.security.auth.login.config=`` in ``JVMFLAGS``, ``CLIENT_JVMFLAGS``,
  ``BOOKIE_EXTRA_OPTS`` or ``PULSAR_EXTRA_OPTS``, as upstream's scripts pass it), and/or digest
  (``addauth digest user:password``) from ``digest_file`` or ``TRIMTAB_ZK_DIGEST``;
- *TLS* to the secure port (``zookeeper.client.secure``) with the PEM trust and key stores;
- *ACLs*: with ``zkEnableSecurity``, every znode trimtab creates is readable by everyone and
  writable only by its creator, as BookKeeper's ``ZkUtils.getACLs`` makes them
  (``CREATOR_ALL_ACL`` + ``READ_ACL_UNSAFE``). That needs credentials, so security on without
  any is a configuration error, not a session that fails on its first write.

Secrets are read here from files and environment variables only, remembered for redaction
(:mod:`trimtab.config.secrets`), and a secret file others can read gets a warning.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trimtab.config.core import Config
from trimtab.config.secrets import read_secret_file, remember_secret
from trimtab.config.zookeeper import ZooKeeperConfig
from trimtab.errors import ConfigError
from trimtab.systems.zookeeper.jaas import parse_jaas_section

__all__ = [
    "JAAS_ENV",
    "JVM_FLAG_ENVS",
    "NO_SECURITY",
    "ZK_DIGEST_ENV",
    "ZkCredentials",
    "ZkSecurity",
    "ZkTls",
    "zk_security",
]

_log = logging.getLogger(__name__)

#: trimtab's own variable naming the JAAS file.
JAAS_ENV = "TRIMTAB_JAAS_CONFIG"
#: The variables upstream's scripts pass JVM flags in; a ``-Djava.security.auth.login.config``
#: found there names the JAAS file when nothing else does.
JVM_FLAG_ENVS = ("JVMFLAGS", "CLIENT_JVMFLAGS", "BOOKIE_EXTRA_OPTS", "PULSAR_EXTRA_OPTS")
#: ``user:password`` for digest authentication.
ZK_DIGEST_ENV = "TRIMTAB_ZK_DIGEST"

_JAAS_FLAG = re.compile(r"-Djava\.security\.auth\.login\.config=(\"[^\"]*\"|\S+)")


@dataclass(frozen=True, slots=True)
class ZkCredentials:
    """Who trimtab is to ZooKeeper: a SASL or digest user (the password never in ``repr``)."""

    scheme: str  # "sasl" or "digest"
    username: str
    password: str = field(repr=False)
    source: str  # where it came from, for messages: a file or a variable name

    def describe(self) -> str:
        kind = "SASL DIGEST-MD5" if self.scheme == "sasl" else "digest"
        return f"{kind} user '{self.username}' (from {self.source})"


@dataclass(frozen=True, slots=True)
class ZkTls:
    """TLS to ZooKeeper's secure port: the CA file (None: the system's), the PEM key store
    (key and certificate chain in one file, as ZooKeeper's PEM key store holds them)."""

    ca: str | None = None
    key_store: str | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True


@dataclass(frozen=True, slots=True)
class ZkSecurity:
    """Credentials (any), TLS (or None) and whether created znodes carry BookKeeper's ACL."""

    credentials: tuple[ZkCredentials, ...] = ()
    tls: ZkTls | None = None
    secure_acls: bool = False

    @property
    def sasl(self) -> ZkCredentials | None:
        return next((c for c in self.credentials if c.scheme == "sasl"), None)

    def describe(self) -> str:
        """Who and how, for error lines: "as SASL DIGEST-MD5 user 'bookie' (from …) over TLS"."""
        who = " and ".join(c.describe() for c in self.credentials)
        parts = [f"as {who}" if who else "without credentials"]
        if self.tls is not None:
            parts.append("over TLS")
        return " ".join(parts)

    def client_options(self) -> dict[str, Any]:
        """kazoo ``KazooClient`` keyword arguments for these settings."""
        options: dict[str, Any] = {}
        sasl = self.sasl
        if sasl is not None:
            options["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": sasl.username,
                "password": sasl.password,
            }
        digest = [c for c in self.credentials if c.scheme == "digest"]
        if digest:
            options["auth_data"] = [("digest", f"{c.username}:{c.password}") for c in digest]
        if self.tls is not None:
            options.update(
                use_ssl=True,
                ca=self.tls.ca,
                certfile=self.tls.key_store,
                keyfile=self.tls.key_store,
                keyfile_password=self.tls.key_password,
                verify_certs=True,
                check_hostname=self.tls.check_hostname,
            )
        return options

    def acls(self) -> list[Any] | None:
        """The ACL of every znode trimtab creates: BookKeeper's with ``zkEnableSecurity``
        (all rights for the creator, read for everyone), else None (ZooKeeper's open ACL)."""
        if not self.secure_acls:
            return None
        from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

        return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]


NO_SECURITY = ZkSecurity()


def zk_security(
    config: Config | ZooKeeperConfig, env: Mapping[str, str] | None = None
) -> ZkSecurity:
    """The security every ZooKeeper session of this configuration uses (see the module doc);
    :class:`ConfigError` naming the setting and what to fix if it cannot be used."""
    zk = config.zookeeper if isinstance(config, Config) else config
    env = os.environ if env is None else env
    credentials = [*_digest(zk, env), *_sasl(zk, env)]
    if zk.enable_security and not credentials:
        raise ConfigError(
            "zkEnableSecurity is on but trimtab has no ZooKeeper credentials: give a JAAS file "
            f"with a '{zk.sasl_client_config}' section (java.security.auth.login.config or "
            f"{JAAS_ENV}) or digest credentials (zookeeper.digest_file or {ZK_DIGEST_ENV})"
        )
    tls = _tls(zk) if zk.client_secure else None
    return ZkSecurity(tuple(credentials), tls, zk.enable_security)


def _digest(zk: ZooKeeperConfig, env: Mapping[str, str]) -> list[ZkCredentials]:
    if zk.digest_file is not None:
        text, warnings = read_secret_file(zk.digest_file, "ZooKeeper digest credentials")
        _warn(warnings)
        source = zk.digest_file
    elif env.get(ZK_DIGEST_ENV):
        text, source = env[ZK_DIGEST_ENV].strip(), ZK_DIGEST_ENV
        remember_secret(text)
    else:
        return []
    user, colon, password = text.partition(":")
    if not colon or not user or not password:
        raise ConfigError(
            f"ZooKeeper digest credentials in {source} must be user:password (as addauth "
            "digest takes them)"
        )
    remember_secret(password)
    return [ZkCredentials("digest", user, password, source)]


def _jaas_path(zk: ZooKeeperConfig, env: Mapping[str, str]) -> str | None:
    if zk.jaas_config:
        return zk.jaas_config
    if env.get(JAAS_ENV):
        return env[JAAS_ENV]
    for name in JVM_FLAG_ENVS:
        found = _JAAS_FLAG.search(env.get(name, ""))
        if found:
            return found.group(1).strip('"')
    return None


def _sasl(zk: ZooKeeperConfig, env: Mapping[str, str]) -> list[ZkCredentials]:
    path = _jaas_path(zk, env) if zk.sasl_client else None
    if path is None:
        return []
    text, warnings = read_secret_file(path, "JAAS")
    _warn(warnings)
    login = parse_jaas_section(text, zk.sasl_client_config, source=path)
    remember_secret(login.password)
    return [ZkCredentials("sasl", login.username, login.password, path)]


def _pem_file(location: str | None, kind: str | None, key: str) -> str | None:
    if location is None:
        return None
    if kind is None and location.lower().endswith((".jks", ".p12", ".pfx", ".bcfks")):
        kind = location.rsplit(".", 1)[1].upper()  # ZooKeeper infers the type from the name
    if kind is not None and kind.strip().upper() != "PEM":
        raise ConfigError(
            f"{key}.type is {kind}: trimtab reads PEM files only; convert the store to PEM "
            "(openssl pkcs12 -in STORE -out FILE.pem -nodes) and set the type to PEM"
        )
    if not Path(location).is_file():
        raise ConfigError(f"{key}.location {location} does not exist")
    return location


def _tls(zk: ZooKeeperConfig) -> ZkTls:
    ca = _pem_file(zk.trust_store_location, zk.trust_store_type, "zookeeper.ssl.trustStore")
    key_store = _pem_file(zk.key_store_location, zk.key_store_type, "zookeeper.ssl.keyStore")
    password = zk.key_store_password
    if zk.key_store_password_path is not None:
        password, warnings = read_secret_file(zk.key_store_password_path, "key store password")
        _warn(warnings)
    elif password is not None:
        remember_secret(password)
    return ZkTls(ca, key_store, password, zk.hostname_verification)


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        _log.warning("%s", warning)
