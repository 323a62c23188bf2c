"""The Pulsar admin token and TLS settings ``trimtab execute`` uses, and where each came from.

Why here: a token is a cluster's admin key. It comes only from a file or the environment,
never from an option value, and it never appears in any output: :class:`AdminAuth` shows
where the token came from, never the token, and every token read is remembered by
:func:`trimtab.config.secrets.remember_secret` so crash reports scrub it by value.

The token, first found of:

1. ``--pulsar-token-file FILE`` (the token, as ``pulsar-admin``'s ``file:`` parameter reads it);
2. the broker.conf given (``--config broker.conf``): ``brokerClientAuthenticationParameters``
   when ``brokerClientAuthenticationPlugin`` is upstream's ``AuthenticationToken`` or unset,
   read as upstream's ``AuthenticationToken.configure`` does: ``token:T``/``data:T`` (T
   itself), ``file:///path`` (the file's text), ``env:NAME`` (that environment variable), or
   the whole value as the token;
3. the environment variable ``PULSAR_TOKEN``.

TLS: ``--tls-ca`` (else broker.conf's ``brokerClientTrustCertsFilePath``, else its
``tlsTrustCertsFilePath``; else the system's CAs), and a client certificate with ``--tls-cert``
and ``--tls-key`` (else broker.conf's ``brokerClientCertificateFilePath`` and
``brokerClientKeyFilePath``). A token over cleartext ``http://`` is refused unless
``--allow-insecure``: upstream's docs say admin tokens must travel over TLS.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from trimtab.config.loader import read_upstream_keys
from trimtab.config.secrets import read_secret_file, remember_secret
from trimtab.errors import ConfigError, TargetError

__all__ = ["TOKEN_ENV", "AdminAuth", "resolve_auth", "ssl_context"]

#: The environment variable a token may come from (after the options and the broker.conf).
TOKEN_ENV = "PULSAR_TOKEN"
_TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
_KEYS = (
    "brokerClientAuthenticationPlugin",
    "brokerClientAuthenticationParameters",
    "brokerClientTrustCertsFilePath",
    "tlsTrustCertsFilePath",
    "brokerClientCertificateFilePath",
    "brokerClientKeyFilePath",
)


@dataclass(frozen=True, slots=True)
class AdminAuth:
    """What authenticates trimtab to the admin API; ``source`` says where the token came from
    (for messages: "the token file t.jwt"), and the token itself is never shown."""

    token: str | None = field(default=None, repr=False)
    source: str = "no token"
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    warnings: tuple[str, ...] = ()


def resolve_auth(
    *,
    token_file: Path | None,
    broker_conf: Path | None,
    tls_ca: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
) -> AdminAuth:
    """The token and TLS files, from the options first, then broker.conf, then the env."""
    conf = read_upstream_keys(broker_conf, _KEYS) if broker_conf is not None else {}
    token, source, warnings = _token(token_file, broker_conf, conf)
    ca = (
        tls_ca
        or _path(conf, "brokerClientTrustCertsFilePath")
        or _path(conf, "tlsTrustCertsFilePath")
    )
    cert = tls_cert or _path(conf, "brokerClientCertificateFilePath")
    key = tls_key or _path(conf, "brokerClientKeyFilePath")
    if (cert is None) != (key is None):
        raise ConfigError("a client certificate needs both --tls-cert and --tls-key")
    return AdminAuth(token, source, ca, cert, key, tuple(warnings))


def _path(conf: dict[str, str], key: str) -> Path | None:
    return Path(conf[key]) if key in conf else None


def _token(
    token_file: Path | None, broker_conf: Path | None, conf: dict[str, str]
) -> tuple[str | None, str, list[str]]:
    if token_file is not None:
        token, warnings = read_secret_file(token_file, "Pulsar token")
        return token, f"the token file {token_file}", warnings
    params = conf.get("brokerClientAuthenticationParameters")
    plugin = conf.get("brokerClientAuthenticationPlugin", _TOKEN_PLUGIN)
    if params and plugin == _TOKEN_PLUGIN:
        where = f"brokerClientAuthenticationParameters in {broker_conf}"
        return _upstream_token(params, where)
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        remember_secret(env)
        return env, f"the environment variable {TOKEN_ENV}", []
    return None, "no token", []


def _upstream_token(params: str, where: str) -> tuple[str, str, list[str]]:
    """``AuthenticationToken.configure``'s reading of the parameter string."""
    for prefix in ("token:", "data:"):
        if params.startswith(prefix):
            token = params[len(prefix) :].strip()
            remember_secret(token)
            return token, where, []
    if params.startswith("file:"):
        path = Path(unquote(urlsplit(params).path))
        token, warnings = read_secret_file(path, "Pulsar token")
        return token, f"the token file {path} (from {where})", warnings
    if params.startswith("env:"):
        name = params[len("env:") :].strip()
        token = os.environ.get(name, "").strip()
        if not token:
            raise ConfigError(f"{where} reads the token from ${name}, which is not set")
        remember_secret(token)
        return token, f"the environment variable {name} (from {where})", []
    remember_secret(params)
    return params, where, []


def ssl_context(auth: AdminAuth, endpoint: str) -> ssl.SSLContext:
    """The client TLS context: ``auth``'s CA (else the system's) and client certificate."""
    try:
        context = ssl.create_default_context(cafile=str(auth.tls_ca) if auth.tls_ca else None)
    except (OSError, ssl.SSLError) as exc:
        raise TargetError(
            f"cannot load the CA file {auth.tls_ca} (--tls-ca) for {endpoint}: {_reason(exc)}"
        ) from None
    if auth.tls_cert is not None and auth.tls_key is not None:
        try:
            context.load_cert_chain(str(auth.tls_cert), str(auth.tls_key))
        except (OSError, ssl.SSLError) as exc:
            raise TargetError(
                f"cannot load the client certificate {auth.tls_cert} with key {auth.tls_key} "
                f"(--tls-cert/--tls-key) for {endpoint}: {_reason(exc)}"
            ) from None
    return context


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or type(exc).__name__
