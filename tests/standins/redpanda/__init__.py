"""A Redpanda Admin API stand-in: ``GET``/``PUT /v1/cluster_config`` with HTTP Basic auth.

Built from Redpanda's Admin API reference: ``GET /v1/cluster_config`` (``include_defaults``
true by default) answers a JSON object of properties, ``PUT /v1/cluster_config`` takes
``{"upsert": {...}, "remove": [...]}`` and answers ``{"config_version": N}``, 400 with
``{property: message}`` for a value it refuses or an unknown property, 401 without valid
credentials when ``admin_api_require_auth`` is on; optionally over TLS (``admin_api_tls``).
Calls are counted (reads, writes).
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["DEFAULTS", "RedpandaAdminStandin"]

#: The properties the stand-in knows, with Redpanda's defaults.
DEFAULTS: dict[str, Any] = {
    "raft_learner_recovery_rate": 104857600,
    "partition_autobalancing_concurrent_moves": 50,
    "admin_api_require_auth": False,
}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        users = self.server.standin.users
        if users is None:
            return True
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        return users.get(user) == password

    def do_GET(self) -> None:
        standin = self.server.standin
        url = urlsplit(self.path)
        if url.path != "/v1/cluster_config":
            self._send(404, {"message": "Not found", "code": 404})
            return
        standin.count("read")
        if not self._authorized():
            self._send(401, {"message": "Unauthorized", "code": 401})
            return
        with standin.lock:
            defaults = parse_qs(url.query).get("include_defaults", ["true"])[0] != "false"
            body = (dict(DEFAULTS) if defaults else {}) | standin.config
        self._send(200, body)

    def do_PUT(self) -> None:
        standin = self.server.standin
        if urlsplit(self.path).path != "/v1/cluster_config":
            self._send(404, {"message": "Not found", "code": 404})
            return
        standin.count("write")
        if not self._authorized():
            self._send(401, {"message": "Unauthorized", "code": 401})
            return
        length = int(self.headers.get("Content-Length", "0"))
        doc = json.loads(self.rfile.read(length) or b"{}")
        upsert, remove = doc.get("upsert", {}), doc.get("remove", [])
        errors = {k: "Unknown property" for k in [*upsert, *remove] if k not in DEFAULTS}
        for key, value in upsert.items():
            if key in DEFAULTS and isinstance(DEFAULTS[key], int) and not isinstance(value, int):
                errors[key] = "expected an integer"
        if errors:
            self._send(400, errors)
            return
        with standin.lock:
            standin.config.update(upsert)
            for key in remove:
                standin.config.pop(key, None)
            standin.version += 1
            standin.history.append({"upsert": upsert, "remove": remove})
            self._send(200, {"config_version": standin.version})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, standin: RedpandaAdminStandin, tls: ssl.SSLContext | None, port: int = 0
    ) -> None:
        self.standin = standin
        super().__init__(("127.0.0.1", port), _Handler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)


class RedpandaAdminStandin:
    """The Admin API on a loopback port; :attr:`config` holds the properties set."""

    def __init__(
        self,
        users: dict[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
        *,
        port: int = 0,
    ) -> None:
        self.users = users
        self.config: dict[str, Any] = {}
        self.version = 0
        self.history: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.scheme = "https" if tls is not None else "http"
        self._server = _Server(self, tls, port)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def recovery_rate(self) -> float:
        """``raft_learner_recovery_rate`` now (for the Kafka stand-in's ``node_rate``)."""
        with self.lock:
            return float(
                self.config.get(
                    "raft_learner_recovery_rate", DEFAULTS["raft_learner_recovery_rate"]
                )
            )

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._server.server_address[1]}"

    def count(self, kind: str) -> None:
        with self.lock:
            self.calls[kind] += 1

    def __enter__(self) -> RedpandaAdminStandin:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
