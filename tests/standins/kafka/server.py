"""The Kafka stand-in's network side: one real TCP listener per broker on loopback.

Each connection reads Kafka's size-prefixed frames, peeks the request header's API key and
version, decodes the request with kafka-python's class for it (which parses the header too) and
answers with the matching response class, encoded with its header and frame. Optional TLS (an
``ssl.SSLContext``) wraps every accepted socket; optional SASL (PLAIN, SCRAM) must complete
before any other request, as on a ``SASL_*`` listener. :meth:`KafkaStandin.drop_connections`
closes every open connection (a fault hook).
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import ssl
import struct
import threading
from collections.abc import Mapping
from typing import Any

from tests.standins.kafka.cluster import Cluster
from tests.standins.kafka.handlers import API, MAX_VERSIONS
from tests.standins.kafka.sasl import MECHANISMS, SaslFailedError, SaslServer

__all__ = ["KafkaStandin"]

_MAX_REQUEST = 104857600  # socket.request.max.bytes
_PRE_AUTH = (18, 17, 36)  # ApiVersions, SaslHandshake, SaslAuthenticate
_NAMES = {key: api[0].__name__.removesuffix("Request") for key, api in API.items()}


def _read_exact(sock: Any, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class _Connection(socketserver.BaseRequestHandler):
    server: _BrokerServer

    def handle(self) -> None:
        standin, sock = self.server.standin, self.request
        if standin.tls is not None:
            try:
                sock = standin.tls.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                return
        standin._track(sock, True, self.server.broker_id)
        sasl: SaslServer | None = None
        authenticated = standin.users is None
        try:
            while True:
                head = _read_exact(sock, 4)
                if head is None:
                    return
                (size,) = struct.unpack(">i", head)
                if not 4 <= size <= _MAX_REQUEST:
                    return  # "invalid receive size": what a broker does with a TLS hello
                payload = _read_exact(sock, size)
                if payload is None:
                    return
                api_key, version = struct.unpack(">hh", payload[:4])
                if api_key not in API or (not authenticated and api_key not in _PRE_AUTH):
                    return  # a broker closes the connection on what it does not serve
                req_cls, resp_cls, handler = API[api_key]
                if api_key == 18 and version > MAX_VERSIONS[18]:
                    version = 0
                request = req_cls.decode(payload, version=version, header=True)
                standin.cluster.count(_NAMES[api_key])
                if api_key == 17:
                    body, sasl = standin._handshake(request)
                elif api_key == 36:
                    body, authenticated = standin._authenticate(sasl, request)
                else:
                    assert handler is not None
                    body = handler(standin.cluster, self.server.broker_id, request)
                response = resp_cls(version=version, **body)
                response.with_header(correlation_id=request.header.correlation_id)
                sock.sendall(response.encode(header=True, framed=True))
        except (OSError, ssl.SSLError):
            return
        finally:
            standin._track(sock, False)
            with contextlib.suppress(OSError):
                sock.close()


class _BrokerServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, standin: KafkaStandin, broker_id: int, port: int) -> None:
        self.standin = standin
        self.broker_id = broker_id
        super().__init__(("127.0.0.1", port), _Connection)


class KafkaStandin:
    """Brokers of :attr:`cluster` served on loopback: one port each (0 = any free port)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        ports: Mapping[int, int] | None = None,
        tls: ssl.SSLContext | None = None,
        users: Mapping[str, str] | None = None,
        mechanisms: tuple[str, ...] = MECHANISMS,
    ) -> None:
        self.cluster = cluster
        self.tls = tls
        self.users = users
        self.mechanisms = mechanisms
        self._servers: dict[int, _BrokerServer] = {}
        self._threads: list[threading.Thread] = []
        self._owners: dict[Any, int] = {}  # open connection -> the broker it reached
        self._conns_lock = threading.Lock()
        for broker_id, broker in sorted(cluster.brokers.items()):
            server = _BrokerServer(self, broker_id, (ports or {}).get(broker_id, 0))
            broker.port = server.server_address[1]
            self._servers[broker_id] = server

    @property
    def bootstrap(self) -> str:
        """``host:port`` of every broker, comma-separated (``--bootstrap-servers``)."""
        return ",".join(f"127.0.0.1:{b.port}" for b in self.cluster.brokers.values())

    def start(self) -> KafkaStandin:
        for broker_id, server in self._servers.items():
            t = threading.Thread(
                target=server.serve_forever,
                args=(0.05,),
                name=f"kafka-standin-{broker_id}",
                daemon=True,
            )
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        self.drop_connections()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> KafkaStandin:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- fault hooks -------------------------------------------------------------------------

    def drop_connections(self) -> int:
        """Close every open client connection now; how many were open."""
        with self._conns_lock:
            conns = list(self._owners)
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return len(conns)

    def stop_broker(self, broker_id: int) -> None:
        """A broker goes away for good: it leaves the cluster and its port stops answering."""
        self.cluster.remove_broker(broker_id)
        server = self._servers.pop(broker_id)
        server.shutdown()
        server.server_close()
        with self._conns_lock:
            conns = [sock for sock, b in self._owners.items() if b == broker_id]
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _track(self, sock: Any, add: bool, broker_id: int = -1) -> None:
        with self._conns_lock:
            if add:
                self._owners[sock] = broker_id
            else:
                self._owners.pop(sock, None)

    # -- SASL ------------------------------------------------------------------------------

    def _handshake(self, request: Any) -> tuple[dict[str, Any], SaslServer | None]:
        mechanisms = list(self.mechanisms)
        if self.users is None or request.mechanism not in self.mechanisms:
            return {"error_code": 33, "mechanisms": mechanisms}, None  # UNSUPPORTED_SASL_MECHANISM
        sasl = SaslServer(request.mechanism, self.users)
        return {"error_code": 0, "mechanisms": mechanisms}, sasl

    def _authenticate(self, sasl: SaslServer | None, request: Any) -> tuple[dict[str, Any], bool]:
        if sasl is None:
            body = {"error_code": 34, "error_message": "SaslHandshake first", "auth_bytes": b""}
            return body, False  # ILLEGAL_SASL_STATE
        try:
            reply = sasl.step(bytes(request.auth_bytes))
        except SaslFailedError as exc:
            return {"error_code": 58, "error_message": str(exc), "auth_bytes": b""}, False
        body = {"error_code": 0, "error_message": None, "auth_bytes": reply}
        return body, sasl.done
