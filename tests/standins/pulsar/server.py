"""The Pulsar admin REST stand-in: one real HTTP(S) server per broker on loopback, each
answering the calls ``trimtab execute`` makes as upstream's resources do.

Served (upstream ``admin/v2/Brokers``, ``BrokersBase``, ``v2/BrokerStats``, ``v2/Namespaces``,
``NamespacesBase``, ``PulsarWebResource``, ``AdminResource``):

=====================================================================  ==========================
``GET  /admin/v2/clusters``                                            the cluster names
``GET  /admin/v2/brokers/{cluster}``                                   active broker ids (JSON)
``GET  /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``          307 to ``broker`` unless it
                                                                       is this one; then bundle ->
                                                                       NamespaceOwnershipStatus
``GET  /admin/v2/broker-stats/load-report``                            this broker's LocalBrokerData
                                                                       (500 if it cannot make it)
``GET  /admin/v2/namespaces/{tenant}/{ns}/bundles``                    BundlesData
``PUT  /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload``            204; 307 to the owner;
       ``?destinationBroker=&authoritative=``                          409 inactive destination
``PUT  /admin/v2/namespaces/{tenant}/{ns}/{bundle}/split``             204; 307 to the owner;
       ``?unload=&splitAlgorithmName=``                                412 unknown algorithm
=====================================================================  ==========================

Errors carry upstream's ``ErrorData`` body ``{"reason": ...}``: 404 for an unknown cluster,
namespace or broker, 412 for a bundle range the namespace does not have, 409 (``CONFLICT``,
from ``NotAllowedException``) for a destination broker that is not active. Authentication
(tokens configured in the cluster): no or an unknown ``Authorization: Bearer`` token is 401
``Authentication required`` (upstream's ``AuthenticationFilter``), a role that is not a
super-user is 401 ``This operation requires super-user access`` (``validateSuperUserAccess``).
An unload of a bundle nobody owns is a 204 that does nothing, as upstream's. A redirect keeps
the request's path and query, sets ``authoritative=false`` and names the owner's host and port
(``validateBundleOwnership``); the scheme stays the request's.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from tests.standins.pulsar.cluster import Call, PulsarCluster

__all__ = ["SPLIT_ALGORITHMS", "BrokerServer"]

#: upstream ``supportedNamespaceBundleSplitAlgorithms`` (ServiceConfiguration default)
SPLIT_ALGORITHMS = (
    "range_equally_divide",
    "topic_count_equally_divide",
    "specified_positions_divide",
    "flow_or_qps_equally_divide",
)
_PREFIX = "/admin/v2/"


class _Answer(Exception):  # noqa: N818 - raised for every answer, 204 and 307 too
    """An answer other than 200: status, JSON body (``None``: no body), extra headers."""

    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _error(status: int, reason: str) -> _Answer:
    return _Answer(status, {"reason": reason})


class BrokerServer(ThreadingHTTPServer):
    """One broker's web service: plain HTTP, or TLS with ``context``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        cluster: PulsarCluster,
        context: ssl.SSLContext | None = None,
        *,
        name: str | None = None,
        port: int = 0,
    ) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.cluster = cluster
        self.context = context
        self.scheme = "https" if context else "http"
        address = f"127.0.0.1:{self.server_address[1]}"
        # the load manager's name for the broker: its own address, unless the stand-in plays
        # brokers named in saved load reports (redirects still go to the address it listens on)
        self.broker = name or address
        self.url = f"{self.scheme}://{address}"
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and cut every open connection (a broker that went away)."""
        self.shutdown()
        self.server_close()
        with self._open_lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def finish_request(self, request: Any, client_address: Any) -> None:
        # in the connection's own thread: a slow or plaintext TLS peer blocks nobody else
        if self.context is not None:
            try:
                request = self.context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                request.close()
                return
        with self._open_lock:
            self._open.add(request)
        try:
            super().finish_request(request, client_address)
        finally:
            with self._open_lock:
                self._open.discard(request)
            if self.context is not None:
                request.close()  # the wrapper took the socket over: socketserver closes neither

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A peer that hangs up is no error of the stand-in's (kept off stderr)."""


class _Handler(BaseHTTPRequestHandler):
    server: BrokerServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the cluster's ``calls`` is the log."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def _serve(self, method: str) -> None:
        cluster, url = self.server.cluster, urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if cluster.take_drop(url.path):
            cluster.record(Call(self.server.broker, method, url.path, 0))
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        try:
            self._authenticate()
            body = self._route(method, url.path, parse_qs(url.query))
            answer = _Answer(200, body)
        except _Answer as done:
            answer = done
        cluster.record(Call(self.server.broker, method, url.path, answer.status))
        self._send(answer)

    def _send(self, answer: _Answer) -> None:
        data = b"" if answer.body is None else json.dumps(answer.body).encode()
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authenticate(self) -> None:
        tokens = self.server.cluster.tokens
        if not tokens:
            return  # authenticationEnabled=false
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        role = tokens.get(token) if scheme == "Bearer" else None
        if role is None:
            raise _error(401, "Authentication required")
        if role not in self.server.cluster.superusers:
            raise _error(401, "This operation requires super-user access")

    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> Any:
        if not path.startswith(_PREFIX):
            raise _error(404, "Not Found")
        parts = [unquote(p) for p in path[len(_PREFIX) :].split("/")]
        match method, parts:
            case "GET", ["brokers", cluster]:
                self._check_cluster(cluster)
                return self.server.cluster.brokers
            case "GET", ["brokers", cluster, broker, "ownedNamespaces"]:
                return self._owned(cluster, broker)
            case "GET", ["clusters"]:
                return [self.server.cluster.name]
            case "GET", ["broker-stats", "load-report"]:
                failure = self.server.cluster.report_error(self.server.broker)
                if failure is not None:  # BrokerStatsBase: RestException(e), 500
                    raise _error(500, failure)
                return self.server.cluster.load_report(self.server.broker)
            case "GET", ["namespaces", tenant, namespace, "bundles"]:
                ranges = self._ranges(f"{tenant}/{namespace}")
                edges = [r.split("_")[0] for r in ranges] + [ranges[-1].split("_")[1]]
                return {"boundaries": edges, "numBundles": len(ranges)}
            case "PUT", ["namespaces", tenant, namespace, hash_range, "unload"]:
                return self._unload(f"{tenant}/{namespace}", hash_range, query)
            case "PUT", ["namespaces", tenant, namespace, hash_range, "split"]:
                return self._split(f"{tenant}/{namespace}", hash_range, query)
        raise _error(405 if method == "PUT" else 404, "HTTP 404 Not Found")

    def _check_cluster(self, cluster: str) -> None:
        if cluster != self.server.cluster.name:
            raise _error(404, f"Cluster does not exist: cluster={cluster}")

    def _owned(self, cluster: str, broker: str) -> dict[str, Any]:
        broker = broker.removeprefix("http://").removeprefix("https://")
        if broker != self.server.broker:  # BrokersBase.maybeRedirectToBroker
            if broker not in self.server.cluster.brokers:
                raise _error(404, f"Broker id '{broker}' not found in available brokers.")
            raise self._redirect(broker, authoritative=None)
        self._check_cluster(cluster)
        status = {"broker_assignment": "shared", "is_controlled": False, "is_active": True}
        return {b: dict(status) for b in self.server.cluster.owned_by(broker)}

    def _ranges(self, namespace: str) -> list[str]:
        ranges = self.server.cluster.namespaces().get(namespace)
        if ranges is None:
            raise _error(404, "Namespace does not exist")
        return ranges

    def _owner_here(self, namespace: str, hash_range: str) -> str | None:
        """The bundle's owner if it is this broker; raises the redirect or error otherwise."""
        if hash_range not in self._ranges(namespace):
            raise _error(412, f"Invalid bundle range {hash_range} for namespace {namespace}")
        owner = self.server.cluster.owner(f"{namespace}/{hash_range}")
        if owner is not None and owner != self.server.broker:
            raise self._redirect(owner, authoritative=False)
        return owner

    def _unload(self, namespace: str, hash_range: str, query: dict[str, list[str]]) -> None:
        cluster = self.server.cluster
        wanted = (query.get("destinationBroker") or [""])[0].strip()
        destination = wanted.removeprefix("http://").removeprefix("https://") or None
        if destination is not None and destination not in cluster.brokers:
            raise _error(409, "Not allowed unload namespace bundle to inactive destination broker")
        if self._owner_here(namespace, hash_range) is None:
            raise _Answer(204)  # "Namespace bundle is not owned by any broker": nothing to do
        cluster.unload(f"{namespace}/{hash_range}", destination)
        raise _Answer(204)

    def _split(self, namespace: str, hash_range: str, query: dict[str, list[str]]) -> None:
        algorithm = (query.get("splitAlgorithmName") or [""])[0]
        if algorithm and algorithm not in SPLIT_ALGORITHMS:
            raise _error(
                412,
                "Unsupported namespace bundle split algorithm, supported algorithms are "
                f"[{', '.join(SPLIT_ALGORITHMS)}]",
            )
        if self._owner_here(namespace, hash_range) is None:
            raise _error(412, f"Failed to find ownership for ServiceUnit:{namespace}/{hash_range}")
        unload = (query.get("unload") or ["false"])[0].lower() == "true"
        self.server.cluster.split(f"{namespace}/{hash_range}", unload=unload)
        raise _Answer(204)

    def _redirect(self, broker: str, *, authoritative: bool | None) -> _Answer:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if authoritative is not None:
            query["authoritative"] = [str(authoritative).lower()]
        target = f"{self.server.cluster.web_url(broker)}{url.path}"
        if query:
            target += "?" + urlencode(query, doseq=True)
        return _Answer(307, None, {"Location": target})
