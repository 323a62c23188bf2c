"""``basic_auth_users``, ``http_server_config.headers`` and ``rate_limit`` around a WSGI app.

Why as upstream does it (exporter-toolkit ``web/handler.go``): a scrape without credentials, or
with a wrong password or an unknown user, gets ``401`` with ``WWW-Authenticate: Basic``; an
unknown user is checked against a fixed hash, so timing does not tell which users exist;
bcrypt runs one check at a time (it is made to be slow) and its verdict is cached per (user,
hash, password), so a Prometheus scraping every few seconds pays it once. The cache keys are
SHA-256 digests: no password is kept in memory beyond the request. Passwords are never logged.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import bcrypt

from trimtab.systems.prometheus.web_config import RateLimit, WebConfig

__all__ = ["BasicAuth", "TokenBucket", "guarded_app"]

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]

_CACHE_SIZE = 1024


class BasicAuth:
    """Checks ``Authorization: Basic`` headers against a config's users (bcrypt)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one bcrypt at a time, as upstream
        self._verdicts: dict[bytes, bool] = {}
        self._decoy: bytes | None = None

    def _decoy_hash(self) -> bytes:
        if self._decoy is None:  # under the lock; made once, at cost 10 like htpasswd's
            self._decoy = bcrypt.hashpw(b"trimtab decoy", bcrypt.gensalt(10))
        return self._decoy

    def allows(self, users: dict[str, bytes], header: str | None) -> bool:
        """Whether ``header`` names a user of ``users`` with its password."""
        credentials = _credentials(header)
        if credentials is None:
            return False
        user, password = credentials
        known = user in users
        key = hashlib.sha256(b"\0".join((user.encode(), users.get(user, b""), password))).digest()
        with self._lock:
            verdict = self._verdicts.get(key)
            if verdict is None:
                hashed = users[user] if known else self._decoy_hash()
                verdict = _checks(password, hashed) and known  # the decoy costs the same
                if len(self._verdicts) >= _CACHE_SIZE:
                    self._verdicts.clear()
                self._verdicts[key] = verdict
        return verdict


def _checks(password: bytes, hashed: bytes) -> bool:
    try:
        return bcrypt.checkpw(password, hashed)
    except ValueError:  # bcrypt 5 refuses passwords over 72 bytes: no user has one
        return False


def _credentials(header: str | None) -> tuple[str, bytes] | None:
    scheme, _, token = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    return user.decode("utf-8", "replace"), password


class TokenBucket:
    """``burst`` requests at once, one more per ``interval_s`` (upstream's ``rate.Limiter``)."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._tokens = float(limit.burst)
        self._at = clock()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self._clock()
            refill = (now - self._at) / self.limit.interval_s
            self._tokens = min(float(self.limit.burst), self._tokens + refill)
            self._at = now
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True


def _refuse(start: StartResponse, status: str, extra: list[tuple[str, str]]) -> list[bytes]:
    body = status.split(" ", 1)[1].encode() + b"\n"
    start(status, [("Content-Type", "text/plain; charset=utf-8"), *extra])
    return [body]


def guarded_app(app: WsgiApp, current: Callable[[], WebConfig | None]) -> WsgiApp:
    """``app`` behind the rate limit, the headers and the users of ``current()`` (called at
    each request, so a reloaded file applies to the next one)."""
    auth = BasicAuth()
    buckets: dict[RateLimit, TokenBucket] = {}

    def guarded(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        config = current()
        if config is None:
            return app(environ, start_response)
        headers = list(config.http.headers)
        if config.rate_limit is not None:
            bucket = buckets.setdefault(config.rate_limit, TokenBucket(config.rate_limit))
            if not bucket.take():
                return _refuse(start_response, "429 Too Many Requests", headers)
        if config.users and not auth.allows(dict(config.users), environ.get("HTTP_AUTHORIZATION")):
            return _refuse(
                start_response, "401 Unauthorized", [*headers, ("WWW-Authenticate", "Basic")]
            )

        def start_with_headers(status: str, response: list[tuple[str, str]], *exc: Any) -> Any:
            return start_response(status, [*response, *headers], *exc)

        return app(environ, start_with_headers)

    return guarded
