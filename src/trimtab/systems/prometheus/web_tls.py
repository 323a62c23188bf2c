"""``tls_server_config`` as an ``ssl.SSLContext``, and the client-name check upstream adds.

Why here and not in the parser: the files are read each time the context is built, at start
(so a wrong file is an ``error:`` line naming its key before anything serves) and again when a
renewed file is picked up (:mod:`~trimtab.systems.prometheus.server`). The context mirrors
upstream's ``ConfigToTLSConfig``: TLS 1.2 to 1.3 by default, the server's cipher order,
``client_auth_type`` as a verify mode, the CA from ``client_ca_file`` or inline ``client_ca``.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from trimtab.systems.prometheus.web_config import (
    TlsServerConfig,
    WebConfig,
    WebConfigError,
    load_web_config,
)

__all__ = ["checked_web_config", "client_name_allowed", "server_context"]

_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
_VERIFY = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    return str(getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc)


def server_context(tls: TlsServerConfig, source: Path) -> ssl.SSLContext:
    """A server context from the files as they are now; :class:`WebConfigError` naming the key
    (and ``source``, the web config file) when one cannot be used."""
    where = f"web config {source}: tls_server_config"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.minimum_version = _VERSIONS[tls.min_version]
        context.maximum_version = _VERSIONS[tls.max_version]
    except (ValueError, ssl.SSLError) as exc:
        raise WebConfigError(f"{where}.min_version/max_version: {_reason(exc)}") from None
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise WebConfigError(
            f"{where}.cert_file {tls.cert_file} with key_file {tls.key_file}: {_reason(exc)}: "
            "give a PEM certificate and its own unencrypted PEM key"
        ) from None
    if tls.client_ca_file is not None or tls.client_ca is not None:
        key = "client_ca_file" if tls.client_ca_file is not None else "client_ca"
        try:
            context.load_verify_locations(cafile=tls.client_ca_file, cadata=tls.client_ca)
        except (OSError, ssl.SSLError) as exc:
            shown = f" {tls.client_ca_file}" if tls.client_ca_file is not None else ""
            raise WebConfigError(
                f"{where}.{key}{shown}: {_reason(exc)}: give the CA certificates in PEM"
            ) from None
    context.verify_mode = _VERIFY[tls.client_auth_type]
    if tls.prefer_server_cipher_suites:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    context.num_tickets = 0  # a scrape every few seconds gains nothing from resumption
    return context


def client_name_allowed(conn: ssl.SSLSocket, allowed: tuple[str, ...] | None) -> bool:
    """Whether the client's certificate carries one of ``allowed`` among its subject
    alternative names (DNS, IP, e-mail or URI), as upstream's ``client_allowed_sans``;
    always true when no list is given."""
    if allowed is None:
        return True
    cert = conn.getpeercert() or {}
    names = [entry[1] for entry in cert.get("subjectAltName", ()) if len(entry) == 2]
    return any(str(name).strip() in allowed for name in names)


def checked_web_config(path: str | Path) -> WebConfig:
    """The web configuration in ``path`` with its TLS files read once, so every problem is an
    error before a command starts anything (registers, polls, binds)."""
    config = load_web_config(path)
    if config.tls is not None:
        server_context(config.tls, config.source)
    return config
