"""TLS settings from the command line and BookKeeper's ``tls*`` keys, checked before anything runs.

Why apart from :mod:`~trimtab.systems.bookkeeper.bookieinfo.tls`: this is where the two sources
meet (an option wins over its key), and where what trimtab cannot read is refused with the key's
name: a ``tlsKeyStoreType`` or ``tlsTrustStoreType`` other than PEM (convert the JKS or PKCS12
store to PEM files), or a ``tlsKeyStorePasswordPath`` (give the key unencrypted, readable by the
agent only). The files are loaded once here, so a wrong path or a key that does not match its
certificate is an ``error:`` line at start, not a failure at the first connection.
"""

from __future__ import annotations

from pathlib import Path

from trimtab.config import TlsConfig
from trimtab.systems.bookkeeper.bookieinfo.tls import ClientTls, ServerTls, TlsSettingsError

__all__ = ["client_tls", "server_tls"]


def _pem_only(config: TlsConfig) -> None:
    for key, value in (
        ("tlsKeyStoreType", config.key_store_type),
        ("tlsTrustStoreType", config.trust_store_type),
    ):
        if value.strip().upper() != "PEM":
            raise TlsSettingsError(
                f"{key}={value}: trimtab reads PEM files only; convert the store to a PEM "
                f"certificate, key and CA (openssl pkcs12 -nodes ...) and set {key}=PEM"
            )
    if config.key_store_password_path:
        raise TlsSettingsError(
            f"tlsKeyStorePasswordPath={config.key_store_password_path}: trimtab reads "
            "unencrypted keys only; decrypt the key (openssl pkey) into a file of mode 600 "
            "and drop tlsKeyStorePasswordPath"
        )


def _path(option: Path | None, key: str | None) -> Path | None:
    return option if option is not None else (Path(key) if key else None)


def server_tls(
    config: TlsConfig,
    *,
    cert: Path | None = None,
    key: Path | None = None,
    ca: Path | None = None,
    client_auth: bool = False,
) -> ServerTls | None:
    """The agent's TLS: options over ``tlsCertificatePath``/``tlsKeyStore``/``tlsTrustStore``/
    ``tlsClientAuthentication``; ``None`` when neither gives a certificate."""
    cert_path = _path(cert, config.certificate_path)
    key_path = _path(key, config.key_store)
    if cert_path is None and key_path is None:
        if client_auth:
            raise TlsSettingsError("--tls-client-auth needs TLS: give --tls-cert and --tls-key")
        return None
    if cert_path is None or key_path is None:
        raise TlsSettingsError(
            "TLS needs both a certificate and its key: give --tls-cert and --tls-key "
            "(tlsCertificatePath and tlsKeyStore)"
        )
    _pem_only(config)
    tls = ServerTls(
        cert=cert_path,
        key=key_path,
        ca=_path(ca, config.trust_store),
        client_auth=client_auth or config.client_authentication,
    )
    tls.build()
    return tls


def client_tls(
    config: TlsConfig,
    *,
    ca: Path | None = None,
    cert: Path | None = None,
    key: Path | None = None,
) -> ClientTls | None:
    """The readers' TLS: options over the keys; ``None`` (TLS only where the registry asks,
    with the system's CAs) when nothing is given (``tlsHostnameVerificationEnabled=false``
    alone: the same, without the name check on bookie ports). Given anything, TLS goes to
    every node, as upstream's client with a TLS provider."""
    ca_path = _path(ca, config.trust_store)
    cert_path = _path(cert, config.certificate_path)
    key_path = _path(key, config.key_store)
    check_hostname = config.hostname_verification_enabled
    if not (ca_path or cert_path or key_path or config.provider_factory_class):
        return None if check_hostname else ClientTls(everywhere=False, check_hostname=False)
    _pem_only(config)
    tls = ClientTls(ca=ca_path, cert=cert_path, key=key_path, check_hostname=check_hostname)
    tls.build()
    return tls
