"""TLS for GetBookieInfo on both ports: the settings, contexts that follow renewed files, gRPC
credentials.

Why a module of its own: the agent's gRPC port, its v3 bookie port and both clients need the same
three things, and each must behave the same way:

* settings read once from options or upstream's keys (:class:`ServerTls`, :class:`ClientTls`),
  checked at start so a wrong file is an ``error:`` line naming it, never a traceback later;
* certificate reload without a restart, as upstream's ``TLSContextFactory`` does with
  ``FileModifiedTimeUpdater``: :class:`ReloadingContext` looks at the files' modification time,
  size and inode at each new connection (a ``stat`` each, cheap next to a handshake) and builds a
  new context when any changed; a renewal caught half-written keeps the previous context (logged)
  and is tried again at the next connection. The gRPC server gets the same through gRPC's dynamic
  credentials: gRPC asks :func:`grpc_server_credentials`' fetcher at each handshake;
* which nodes get TLS (:meth:`ClientTls.applies`): every node when the reader is configured with
  TLS (as upstream's client with a TLS provider starts TLS on every connection), else the nodes
  whose registration says so (``+tls`` addresses), checked against the system's CAs.

What a failed handshake means for people is :mod:`~trimtab.systems.bookkeeper.bookieinfo.tlserrors`.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

from trimtab.errors import AgentError
from trimtab.systems.bookkeeper.bookieinfo.tls_sessions import ResumingContext
from trimtab.systems.stamps import file_stamps

__all__ = [
    "SYSTEM_CAS",
    "ClientTls",
    "ReloadingContext",
    "ServerTls",
    "TlsSettingsError",
    "grpc_channel_credentials",
    "grpc_server_credentials",
]

_log = logging.getLogger(__name__)


class TlsSettingsError(AgentError):
    """A TLS file that cannot be used, or settings that do not fit together."""


def _read(path: Path, what: str, option: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TlsSettingsError(
            f"cannot read the {what} {path}: {exc.strerror or exc}: fix {option}"
        ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerTls:
    """TLS on the agent's ports: its certificate and key, and the CA its clients must carry
    when ``client_auth`` (upstream ``tlsClientAuthentication``)."""

    cert: Path
    key: Path
    ca: Path | None = None
    client_auth: bool = False

    def __post_init__(self) -> None:
        if self.client_auth and self.ca is None:
            raise TlsSettingsError(
                "client authentication needs the CA that signs client certificates: "
                "give --tls-ca (tlsTrustStore)"
            )

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.cert, self.key) + ((self.ca,) if self.ca is not None else ())

    def build(self) -> ssl.SSLContext:
        """A server context from the files as they are now; :class:`TlsSettingsError` if not."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        _load_chain(context, self.cert, self.key)
        if self.ca is not None:
            _load_ca(context, self.ca)
        context.verify_mode = ssl.CERT_REQUIRED if self.client_auth else ssl.CERT_NONE
        context.num_tickets = 1  # one ticket: the readers resume their next connection with it
        return context

    def pem(self) -> tuple[bytes, bytes, bytes | None]:
        """(key, certificate chain, CA) as bytes, for gRPC."""
        ca = _read(self.ca, "CA file", "--tls-ca") if self.ca is not None else None
        return (
            _read(self.key, "key", "--tls-key"),
            _read(self.cert, "certificate", "--tls-cert"),
            ca,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientTls:
    """TLS as the readers dial nodes: the CA to check them with (``None``: the system's), and a
    client certificate for nodes that require one. ``everywhere``: TLS to every node, not only to
    those whose registration asks for it. ``check_hostname`` False (upstream's
    ``tlsHostnameVerificationEnabled=false``): a bookie port's certificate needs the CA's
    signature only; gRPC, which has no such switch, always checks the name."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    everywhere: bool = True
    check_hostname: bool = True

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise TlsSettingsError(
                "a client certificate needs its key and a key its certificate: "
                "give both --tls-cert and --tls-key"
            )

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.ca, self.cert, self.key) if p is not None)

    def applies(self, registered_tls: bool) -> bool:
        """Whether a node gets TLS: its registration asks for it, or this reader wants it on all."""
        return self.everywhere or registered_tls

    def build(self) -> ssl.SSLContext:
        """A client context (host names checked) from the files as they are now."""
        context = ResumingContext(ssl.PROTOCOL_TLS_CLIENT)  # checks host names and chains
        context.check_hostname = self.check_hostname  # the chain is checked either way
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.ca is not None:
            _load_ca(context, self.ca)
        else:
            context.load_default_certs()
        if self.cert is not None and self.key is not None:
            _load_chain(context, self.cert, self.key)
        return context

    def pem(self) -> tuple[bytes | None, bytes | None, bytes | None]:
        """(CA, key, certificate chain) as bytes, for gRPC (``None``: not given)."""
        ca = _read(self.ca, "CA file", "--tls-ca") if self.ca is not None else None
        key = _read(self.key, "key", "--tls-key") if self.key is not None else None
        cert = _read(self.cert, "certificate", "--tls-cert") if self.cert is not None else None
        return ca, key, cert


#: what a reader without TLS settings uses for nodes whose registration asks for TLS
SYSTEM_CAS = ClientTls(everywhere=False)


def _load_chain(context: ssl.SSLContext, cert: Path, key: Path) -> None:
    try:
        context.load_cert_chain(cert, key)
    except FileNotFoundError as exc:
        raise TlsSettingsError(
            f"cannot read {exc.filename}: no such file: fix --tls-cert/--tls-key "
            "(tlsCertificatePath/tlsKeyStore)"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        raise TlsSettingsError(
            f"cannot use the certificate {cert} with the key {key}: "
            f"{getattr(exc, 'reason', None) or exc}: give a PEM certificate and its own PEM "
            "private key, unencrypted (--tls-cert/--tls-key, tlsCertificatePath/tlsKeyStore)"
        ) from None


def _load_ca(context: ssl.SSLContext, ca: Path) -> None:
    try:
        context.load_verify_locations(cafile=ca)
    except FileNotFoundError:
        raise TlsSettingsError(
            f"cannot read the CA file {ca}: no such file: fix --tls-ca (tlsTrustStore)"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        raise TlsSettingsError(
            f"cannot use the CA file {ca}: {getattr(exc, 'reason', None) or exc}: "
            "give the CA certificates in PEM (--tls-ca, tlsTrustStore)"
        ) from None


class ReloadingContext:
    """An ``ssl.SSLContext`` rebuilt when one of its files changes; :meth:`get` at each
    connection. The first build's error is raised; a later one keeps the previous context."""

    def __init__(self, files: tuple[Path, ...], build: Callable[[], ssl.SSLContext]) -> None:
        self._files = files
        self._build = build
        self._lock = threading.Lock()
        self._stamp = file_stamps(files)
        self._context = build()
        self.reloads = 0

    def get(self) -> ssl.SSLContext:
        stamp = file_stamps(self._files)
        with self._lock:
            if stamp == self._stamp:
                return self._context
            try:
                context = self._build()
            except TlsSettingsError as exc:
                _log.warning("TLS files changed but cannot be used yet, keeping the old: %s", exc)
                return self._context
            self._context, self._stamp = context, stamp
            self.reloads += 1
            _log.info("TLS files reloaded: %s", ", ".join(str(f) for f in self._files))
            return context


def grpc_server_credentials(tls: ServerTls) -> grpc.ServerCredentials:
    """gRPC server credentials that pick up renewed files at the next handshake."""
    tls.build()  # the files' errors as clear lines, before gRPC's own less clear ones
    state = {"stamp": file_stamps(tls.files)}
    lock = threading.Lock()

    def configuration() -> grpc.ServerCertificateConfiguration:
        key, cert, ca = tls.pem()
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=ca)

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        stamp = file_stamps(tls.files)
        with lock:
            if stamp == state["stamp"]:
                return None
            try:
                tls.build()
                renewed = configuration()
            except TlsSettingsError as exc:
                _log.warning("TLS files changed but cannot be used yet, keeping the old: %s", exc)
                return None
            state["stamp"] = stamp
        _log.info("TLS files reloaded for the gRPC port: %s", tls.cert)
        return renewed

    return grpc.dynamic_ssl_server_credentials(
        configuration(),
        fetch,  # type: ignore[arg-type]  # gRPC documents None as "no change"; the stub omits it
        require_client_authentication=tls.client_auth,
    )


def grpc_channel_credentials(tls: ClientTls) -> grpc.ChannelCredentials:
    """gRPC channel credentials from the files as they are now."""
    ca, key, cert = tls.pem()
    return grpc.ssl_channel_credentials(
        root_certificates=ca, private_key=key, certificate_chain=cert
    )
