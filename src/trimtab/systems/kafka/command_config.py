"""``--command-config FILE``: the client properties Kafka's own tools take, for kafka-python.

An operator already has this file for ``kafka-reassign-partitions.sh --command-config``::

    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="admin" password="...";
    ssl.truststore.type=PEM
    ssl.truststore.location=/etc/kafka/ca.pem

Read here: ``security.protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), ``sasl.mechanism``
(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), ``sasl.jaas.config`` (``PlainLoginModule`` or
``ScramLoginModule`` with ``username`` and ``password``), ``ssl.truststore.location`` and
``ssl.keystore.location`` of ``type=PEM`` (a keystore PEM holds the key and its certificate
chain), ``ssl.key.password`` and ``ssl.endpoint.identification.algorithm`` (``https``, the
default, checks the host name; empty does not). A JKS or PKCS12 store is refused with what to
use: Python's TLS reads PEM only. Other client keys (``client.id``, timeouts) are accepted and
ignored; an unknown ``sasl.*``/``ssl.*`` key is a warning.

The password never leaves :class:`ClientSecurity` but for the client library: it is left out
of ``repr``, remembered by :func:`trimtab.config.secrets.remember_secret` so every output
scrubs it, and a file others can read gets a ``warning:`` as ssh gives for a private key.
"""

from __future__ import annotations

import re
import ssl
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trimtab.config.secrets import remember_secret
from trimtab.errors import ConfigError, TargetError

__all__ = ["PROTOCOLS", "ClientSecurity", "read_command_config"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_KNOWN = {
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "ssl.protocol",
    "ssl.enabled.protocols",
}
_JAAS = re.compile(r"^\s*(\S+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$", re.S)
_OPTION = re.compile(r"([A-Za-z0-9_.\-]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^\s;]+)")


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """How to reach the brokers: protocol, SASL login and TLS files (password not in repr)."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    truststore: Path | None = None
    keystore: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    warnings: tuple[str, ...] = ()

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def ssl_context(self, source: str) -> ssl.SSLContext | None:
        """The client TLS context (None without TLS); a file it cannot load is a TargetError."""
        if not self.tls:
            return None
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        ctx.check_hostname = self.check_hostname
        try:
            if self.truststore is not None:
                ctx.load_verify_locations(cafile=str(self.truststore))
            if self.keystore is not None:
                ctx.load_cert_chain(str(self.keystore), password=self.key_password)
        except (OSError, ssl.SSLError) as exc:
            raise TargetError(
                f"{source}: cannot load the TLS files ({_reason(exc)}): ssl.truststore.location "
                "and ssl.keystore.location must be readable PEM files"
            ) from None
        return ctx

    def client_kwargs(self, source: str) -> dict[str, Any]:
        """The KafkaAdminClient keyword arguments for this security."""
        kwargs: dict[str, Any] = {"security_protocol": self.protocol}
        context = self.ssl_context(source)
        if context is not None:
            kwargs["ssl_context"] = context
        if self.sasl:
            kwargs.update(
                sasl_mechanism=self.mechanism,
                sasl_plain_username=self.username,
                sasl_plain_password=self.password,
            )
        return kwargs


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _properties(path: Path) -> dict[str, str]:
    from trimtab.config.loader import read_properties

    try:
        return read_properties(path)
    except ConfigError as exc:
        raise TargetError(f"--command-config: {exc}") from None


def _jaas_login(text: str, source: str) -> tuple[str, str]:
    """``username`` and ``password`` of a ``sasl.jaas.config`` value."""
    match = _JAAS.match(text)
    module = match.group(1) if match else ""
    if not module.endswith(("PlainLoginModule", "ScramLoginModule")):
        raise TargetError(
            f"{source}: sasl.jaas.config uses {module or 'no login module'}: trimtab logs in with "
            "org.apache.kafka.common.security.plain.PlainLoginModule or "
            "org.apache.kafka.common.security.scram.ScramLoginModule (username=... password=...)"
        )
    assert match is not None
    options = {k: v[1:-1] if v.startswith('"') else v for k, v in _OPTION.findall(match.group(3))}
    if "username" not in options or "password" not in options:
        raise TargetError(f'{source}: sasl.jaas.config needs username="..." and password="..."')
    return options["username"], options["password"]


def _pem_store(props: dict[str, str], kind: str, source: str) -> Path | None:
    location = props.get(f"ssl.{kind}.location", "").strip()
    store_type = props.get(f"ssl.{kind}.type", "JKS" if location else "PEM").strip().upper()
    if not location:
        return None
    if store_type != "PEM":
        raise TargetError(
            f"{source}: ssl.{kind}.type={store_type} is not supported: convert the store to PEM "
            f"(keytool -exportcert -rfc / openssl pkcs12 -nodes) and set ssl.{kind}.type=PEM"
        )
    path = Path(location)
    if not path.is_file():
        raise TargetError(f"{source}: ssl.{kind}.location {path} does not exist")
    return path


def _security_from(props: dict[str, str], source: str) -> ClientSecurity:
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise TargetError(
            f"{source}: security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}"
        )
    username = password = mechanism = None
    if protocol.startswith("SASL_"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            raise TargetError(
                f"{source}: sasl.mechanism={mechanism} is not supported: use one of "
                f"{', '.join(MECHANISMS)}"
            )
        if "sasl.jaas.config" not in props:
            raise TargetError(f"{source}: {protocol} needs sasl.jaas.config with the login")
        username, password = _jaas_login(props["sasl.jaas.config"], source)
        remember_secret(password)
    key_password = props.get("ssl.key.password") or None
    if key_password:
        remember_secret(key_password)
    warnings = tuple(
        f"{source}: unknown client property {key} is ignored"
        for key in sorted(props)
        if key.startswith(("sasl.", "ssl.")) and key not in _KNOWN
    )
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    return ClientSecurity(
        protocol=protocol,
        mechanism=mechanism,
        username=username,
        password=password,
        truststore=_pem_store(props, "truststore", source),
        keystore=_pem_store(props, "keystore", source),
        key_password=key_password,
        check_hostname=algorithm == "https",
        warnings=warnings,
    )


def read_command_config(path: Path | None) -> ClientSecurity:
    """The :class:`ClientSecurity` of a ``--command-config`` file (PLAINTEXT without one)."""
    if path is None:
        return ClientSecurity()
    source = f"--command-config {path}"
    props = _properties(path)
    security = _security_from(props, source)
    holds_secret = security.password is not None or security.key_password is not None
    mode = stat.S_IMODE(path.stat().st_mode)
    if holds_secret and mode & 0o077:
        more = (
            f"{source} holds a password and is accessible by others (mode {mode:04o}): "
            f"run chmod 600 {path}"
        )
        security = replace(security, warnings=(*security.warnings, more))
    return security
