"""One Prometheus ``/metrics`` endpoint, plain or secured by a web configuration file.

Why not ``prometheus_client.start_http_server`` with its ``certfile``: it runs the TLS
handshake inside ``accept`` on the one serving thread, so a client that connects and sends
nothing stops every scrape, and it reads its certificates once. Here the listening socket stays
plain; each connection gets its own thread, and TLS is started there, with a deadline:

* a refused client (no certificate, one from another CA, plaintext on the TLS port, a client
  name not in ``client_allowed_sans``) ends only its own connection; a plaintext HTTP request
  on the TLS port is answered ``400`` as Go's server answers it, so a curl user sees why;
* the web config file and the files it names are watched as upstream reads them at each
  connection: when one changes (modification time, size or inode), the next connection uses
  the new file. A change that cannot be used yet (a renewal caught half-written) keeps the
  previous configuration, with a ``warning:`` line, and is tried again at the next connection.

The default bind is loopback. :func:`registry_of` makes the registry a command serves.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.registry import Collector

from trimtab.errors import AgentError
from trimtab.systems.prometheus.basic_auth import guarded_app
from trimtab.systems.prometheus.web_config import WebConfig, WebConfigError, load_web_config
from trimtab.systems.prometheus.web_tls import client_name_allowed, server_context
from trimtab.systems.stamps import Stamp, file_stamps

__all__ = ["MetricsServer", "registry_of"]

_log = logging.getLogger(__name__)

#: Seconds a client has to finish its TLS handshake and send its request.
HANDSHAKE_TIMEOUT_S = 10.0
_PLAIN_ON_TLS = (
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
)


def registry_of(*collectors: Collector) -> CollectorRegistry:
    """A fresh registry holding ``collectors`` (never the global default registry)."""
    registry = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        registry.register(collector)
    return registry


class _LiveConfig:
    """The web config in force and its TLS context, re-read when one of its files changes."""

    def __init__(self, config: WebConfig) -> None:
        self._lock = threading.Lock()
        self._stamp = file_stamps(config.files)
        self._config = config
        self._context = server_context(config.tls, config.source) if config.tls else None
        self.reloads = 0

    def current(self) -> tuple[WebConfig, ssl.SSLContext | None]:
        with self._lock:
            stamp = file_stamps(self._config.files)
            if stamp != self._stamp:
                self._reload(stamp)
            return self._config, self._context

    def _reload(self, stamp: Stamp) -> None:
        self._stamp = stamp  # a bad change is reported once, not at every connection
        try:
            config = load_web_config(self._config.source)
            context = server_context(config.tls, config.source) if config.tls else None
        except WebConfigError as exc:
            _log.warning("metrics endpoint keeps its previous web config: %s", exc)
            return
        self._config, self._context = config, context
        self._stamp = file_stamps(config.files)
        self.reloads += 1
        _log.info("metrics endpoint reloaded %s", config.source)


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr (a scrape every few seconds would flood it)."""

    def log_message(self, format: str, *args: Any) -> None:  # the base's name
        _log.debug("metrics request: " + format, *args)


class _Server(ThreadingMixIn, WSGIServer):
    """A thread per connection; TLS, when configured, started in that thread."""

    daemon_threads = True
    live: _LiveConfig | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(HANDSHAKE_TIMEOUT_S)
        if self.live is None:
            super().finish_request(request, client_address)
            return
        config, context = self.live.current()
        if context is None:
            super().finish_request(request, client_address)
            return
        conn = _start_tls(request, context, client_address)
        if conn is None:
            return
        try:
            if client_name_allowed(conn, config.tls.client_allowed_sans if config.tls else None):
                super().finish_request(conn, client_address)
            else:
                _log.info("metrics: refused %s: client name not allowed", client_address[0])
        finally:
            _close(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that goes away mid-request is its own business: no traceback on stderr."""
        _log.debug("metrics: request from %s failed", client_address, exc_info=True)


def _start_tls(raw: socket.socket, context: ssl.SSLContext, client: Any) -> ssl.SSLSocket | None:
    """The connection after the server side of the handshake, or None (answered, closed)."""
    try:
        head = raw.recv(8, socket.MSG_PEEK)
        if head[:1].isalpha():  # a request line ("GET /metrics"), not a TLS ClientHello
            raw.sendall(_PLAIN_ON_TLS)
            _log.info("metrics: refused %s: plaintext HTTP on the TLS port", client[0])
            return None
        return context.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "reason", None) or type(exc).__name__
        _log.info("metrics: refused %s: TLS handshake failed: %s", client[0], reason)
        return None


def _close(conn: ssl.SSLSocket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)
    conn.close()


def _server_class(host: str, port: int) -> type[_Server]:
    """:class:`_Server` for ``host``'s address family (IPv4 or IPv6)."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)

    class _Bound(_Server):
        address_family = family[0][0]

    return _Bound


class MetricsServer:
    """A ``/metrics`` endpoint for one registry; binds loopback unless told otherwise. With
    ``web_config`` (see :func:`~trimtab.systems.prometheus.web_config.load_web_config`) it
    serves as an exporter given that ``--web.config.file`` does: TLS, client certificates,
    Basic auth, extra headers, a rate limit."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        port: int,
        host: str = "127.0.0.1",
        web_config: WebConfig | None = None,
    ) -> None:
        live = _LiveConfig(web_config) if web_config is not None else None
        app = make_wsgi_app(registry)
        if live is not None:
            app = guarded_app(app, lambda: live.current()[0])
        try:
            server = make_server(host, port, app, _server_class(host, port), _QuietHandler)
        except OSError as exc:  # taken since the command checked it: still one error line
            reason = (exc.strerror or type(exc).__name__).lower()
            raise AgentError(f"cannot serve metrics on {host}:{port}: {reason}") from None
        server.live = live
        self._server: _Server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="metrics-server", daemon=True
        )
        self._thread.start()
        self.port: int = server.server_port
        self.host = host
        self.tls = web_config is not None and web_config.tls is not None
        self._live = live

    @property
    def url(self) -> str:
        """Where Prometheus scrapes: ``http(s)://host:port/metrics``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/metrics"

    @property
    def reloads(self) -> int:
        """How many times a changed web config (or certificate) was taken up."""
        return self._live.reloads if self._live is not None else 0

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)
