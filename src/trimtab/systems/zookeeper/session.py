"""ZooKeeper sessions: a kazoo client that outlives a server restart, and a clean end.

An ephemeral znode lives as long as its owner's session, so ending the session at once (rather
than letting it time out) is how a registered node leaves the registry without delay.

Every session trimtab opens is made here, with the security of its configuration
(:class:`~trimtab.systems.zookeeper.security.ZkSecurity`: credentials, TLS). A refusal is told
apart from an unreachable server by :func:`start_session`: kazoo reports a failed SASL login or
TLS handshake only in its log and keeps retrying (or closes the session after reporting it
connected), so each client gets a small log of its own that remembers the last failure.
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any, NoReturn
from urllib.parse import urlsplit

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, ConnectionClosedError, KazooException
from kazoo.handlers.threading import KazooTimeoutError

from trimtab.config.secrets import scrub
from trimtab.errors import MembershipError, ZooKeeperAccessError
from trimtab.systems.zookeeper.security import NO_SECURITY, ZkSecurity, ZkTls

__all__ = ["check_hosts", "end_session", "make_client", "start_session"]

_kazoo_log = logging.getLogger("kazoo.client")


class _SessionLog:
    """kazoo's logger for one client: passes records on to ``kazoo.client`` and remembers the
    last authentication or TLS failure, which kazoo reports nowhere else."""

    def __init__(self) -> None:
        self.auth_failed = False
        self.tls_failure: str | None = None
        self.dropped = False  # a connection accepted, then closed by the server unanswered

    def _note(self, msg: object, args: tuple[Any, ...]) -> None:
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = str(msg)
        if text.startswith("AUTH_FAILED"):
            self.auth_failed = True
        elif "SSL" in text or "TLS" in text or "certificate" in text:
            self.tls_failure = text
        elif "socket connection broken" in text:
            self.dropped = True

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if level >= logging.WARNING:
            self._note(msg, args)
        _kazoo_log.log(level, msg, *args, **kwargs)

    def debug(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self.log(logging.DEBUG, msg, *args, **kwargs)

    def info(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self.log(logging.INFO, msg, *args, **kwargs)

    def warning(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self.log(logging.WARNING, msg, *args, **kwargs)

    def error(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self.log(logging.ERROR, msg, *args, **kwargs)

    def exception(self, msg: object, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("exc_info", True)
        self.log(logging.ERROR, msg, *args, **kwargs)

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 (logging.Logger's name)
        return True


def check_hosts(hosts: str) -> None:
    """Refuse a ZooKeeper address kazoo could not parse (``host:notaport``, a port out of
    range, no host) with a :class:`MembershipError` naming it: kazoo raises a bare
    ``ValueError`` from deep in its client, which reads as a bug (issue 43). The entries are
    read as kazoo reads them: ``host[:port]`` separated by commas, an optional chroot after the
    first ``/``."""
    servers = hosts.split("/", 1)[0]
    for entry in servers.split(","):
        parts = urlsplit(f"zk://{entry.strip()}")
        try:
            port = parts.port
        except ValueError:
            port = 0
        if not parts.hostname or port == 0:
            where = "" if entry == hosts else f" in {hosts!r}"
            raise MembershipError(
                f"bad ZooKeeper address {entry.strip()!r}{where}: use HOST:PORT with a port "
                "from 1 to 65535 (several separated by commas)"
            )


def make_client(hosts: str, *, session_timeout: float, security: ZkSecurity = NO_SECURITY) -> Any:
    """A kazoo client that reconnects quickly and forever (until stopped).

    The connection retry never gives up, because an agent or a watcher must outlive a
    ZooKeeper restart; its delay is capped at one second so a restarted server is found again
    quickly. Commands are retried a few times over a short connection loss. ``security`` adds
    the credentials and TLS settings (none by default: the client is then exactly the plain
    one trimtab always made).
    """
    check_hosts(hosts)
    extra = security.client_options()
    return KazooClient(
        logger=_SessionLog(),
        hosts=hosts,
        timeout=session_timeout,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        command_retry={"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        **extra,
    )


def start_session(client: Any, *, hosts: str, timeout: float, security: ZkSecurity) -> None:
    """Start ``client`` (made by :func:`make_client` with ``security``) and make sure ZooKeeper
    accepted it. A refused login or TLS handshake is a :class:`ZooKeeperAccessError` naming
    ``hosts`` and what to fix; a server that does not answer within ``timeout`` raises kazoo's
    ``KazooTimeoutError``, for the caller's own message."""
    log = getattr(client, "logger", None)
    try:
        # with a chroot, start() itself reads "/" (and so meets a refused login); kazoo warns
        # (a Python warning on stderr) when the chroot does not exist: the commands say what
        # they did not find under it in their own error line instead
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No chroot path exists")
            client.start(timeout=timeout)
    except KazooTimeoutError:
        if isinstance(log, _SessionLog):
            _raise_refusal(log, hosts, security)
        raise
    except (AuthFailedError, ConnectionClosedError, KazooException):
        _refused(client, log, hosts, security)
    if security.sasl is None:
        return
    # kazoo reports CONNECTED before the SASL exchange: one round trip shows its outcome.
    try:
        client.exists_async("/").get(timeout=timeout)
    except (AuthFailedError, ConnectionClosedError, KazooException, KazooTimeoutError):
        _refused(client, log, hosts, security)


def _refused(client: Any, log: object, hosts: str, security: ZkSecurity) -> NoReturn:
    """End a session ZooKeeper closed while it started, and say why."""
    client.stop()
    client.close()
    if isinstance(log, _SessionLog):
        _raise_refusal(log, hosts, security)
    raise ZooKeeperAccessError(
        f"ZooKeeper {hosts} closed the session while it started {security.describe()}: check "
        "the credentials and the server's log"
    ) from None


#: What a TLS failure means, by a piece of OpenSSL's reason: (what happened, what to fix).
_TLS_REASONS = (
    ("certificate has expired", "the server's certificate has expired", "renew it"),
    (
        "mismatch",
        "the server's certificate does not name the host dialled",
        "dial a name the certificate holds, or reissue it with this host in its names",
    ),
    (
        "unable to get local issuer",
        "the server's certificate is not signed by a CA in zookeeper.ssl.trustStore",
        "set zookeeper.ssl.trustStore.location to the CA that signed it",
    ),
    (
        "self-signed",
        "the server's certificate is not signed by a CA in zookeeper.ssl.trustStore",
        "set zookeeper.ssl.trustStore.location to the CA that signed it",
    ),
    (
        "EOF",
        "the server does not speak TLS there",
        "dial its secure client port (secureClientPort), or set zookeeper.client.secure=false",
    ),
    (
        "WRONG_VERSION_NUMBER",
        "the server does not speak TLS there",
        "dial its secure client port (secureClientPort), or set zookeeper.client.secure=false",
    ),
)


#: OpenSSL's names for the server's refusal of the client's certificate (or of its absence).
_CLIENT_CERT_ALERTS = (
    "CERTIFICATE_REQUIRED",
    "ALERT_BAD_CERTIFICATE",
    "ALERT_CERTIFICATE_UNKNOWN",
    "ALERT_UNKNOWN_CA",
)


def _tls_reason(failure: str, tls: ZkTls | None = None) -> str:
    if any(alert in failure for alert in _CLIENT_CERT_ALERTS):
        if tls is None or tls.key_store is None:
            return (
                "the server requires a client certificate (mutual TLS): set "
                "zookeeper.ssl.keyStore.location to a PEM file with the client key and a "
                "certificate signed by a CA the server trusts"
            )
        return (
            f"the server refused the client certificate in {tls.key_store}: use one signed by "
            "a CA in the server's ssl.trustStore"
        )
    for piece, what, fix in _TLS_REASONS:
        if piece in failure:
            return f"{what}: {fix}"
    return (
        f"{scrub(failure)}: check that this is the secure client port (secureClientPort), that "
        "zookeeper.ssl.trustStore holds the CA that signed the server's certificate, and that "
        "the certificate names the host"
    )


def _raise_refusal(log: _SessionLog, hosts: str, security: ZkSecurity) -> None:
    if log.auth_failed:
        raise ZooKeeperAccessError(
            f"ZooKeeper {hosts} refused the login {security.describe()}: authentication "
            "failed; check the user and password (they must match the server's JAAS Server "
            "section) and that the server has SASL on (authProvider = SASLAuthenticationProvider)"
        )
    if log.tls_failure is not None and security.tls is not None:
        raise ZooKeeperAccessError(
            f"TLS to ZooKeeper {hosts} failed: {_tls_reason(log.tls_failure, security.tls)}"
        )
    if log.dropped and security.tls is None:
        raise ZooKeeperAccessError(
            f"ZooKeeper {hosts} accepted the connection but closed it before a session started: "
            "if it is the TLS port (secureClientPort), set zookeeper.client.secure=true and "
            "zookeeper.ssl.trustStore.location; otherwise see the server's log (maxClientCnxns)"
        )


def end_session(
    stop: threading.Event, wake: threading.Event, thread: threading.Thread | None, client: Any
) -> None:
    """Stop a worker thread that follows ZooKeeper, then close its session, so the session's
    ephemeral znodes go at once (a registered node leaves without waiting for the timeout)."""
    stop.set()
    wake.set()
    if thread is not None:
        thread.join(timeout=10.0)
    client.stop()
    client.close()
