"""Redpanda's Admin API (``--redpanda-admin URL``): the cluster configuration, with httpx.

``GET /v1/cluster_config?include_defaults=false`` answers the properties set explicitly (a JSON
object); ``PUT /v1/cluster_config`` takes ``{"upsert": {key: value}, "remove": [key]}``, answers
200 with ``{"config_version": N}``, and 400 with the refused properties. When
``admin_api_require_auth`` is on, every call carries HTTP Basic credentials (401 or 403
without them): they come from ``--redpanda-auth-file`` (one line ``user:password``) or the
``RPK_USER``/``RPK_PASS`` environment variables rpk reads, never from an option value, and the
password is scrubbed from every output. An ``https://`` Admin API is verified against the CAs of
``--command-config``'s ``ssl.truststore.location`` when it has one (one cluster, one CA).
"""

from __future__ import annotations

import os
import ssl
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trimtab.config.secrets import read_secret_file, remember_secret, scrub
from trimtab.errors import TargetError

__all__ = ["RedpandaAdmin", "cleartext_warning", "read_basic_auth"]


def read_basic_auth(path: Path | None) -> tuple[tuple[str, str] | None, list[str]]:
    """``(user, password)`` from ``path`` (``user:password``) or ``RPK_USER``/``RPK_PASS``,
    None without either, and the warnings about the file (others can read it)."""
    if path is not None:
        try:
            text, warnings = read_secret_file(path, "--redpanda-auth-file")
        except Exception as exc:
            raise TargetError(str(exc)) from None
        user, sep, password = text.strip().partition(":")
        if not sep or not user or not password:
            raise TargetError(f"--redpanda-auth-file {path} must hold one line user:password")
        remember_secret(password)
        return (user, password), warnings
    env_user, env_password = os.environ.get("RPK_USER"), os.environ.get("RPK_PASS")
    if env_user and env_password:
        remember_secret(env_password)
        return (env_user, env_password), []
    return None, []


def cleartext_warning(url: str, auth: tuple[str, str] | None) -> list[str]:
    """A warning when Basic credentials would cross the network unencrypted (http://)."""
    if auth is None or urlsplit(url).scheme != "http":
        return []
    return [
        f"--redpanda-admin {url} is plain HTTP: the Admin API password travels in clear text; "
        "use https:// (admin_api_tls)"
    ]


class RedpandaAdmin:
    """The cluster-config calls of the Admin API, counted in :attr:`calls`."""

    def __init__(
        self,
        url: str,
        auth: tuple[str, str] | None,
        timeout_s: float,
        ca: Path | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.username or parts.password:
            raise TargetError(
                "--redpanda-admin must not carry credentials (user:password@ in the URL would "
                "show in ps, the shell history and the journal): put them in --redpanda-auth-file"
            )
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TargetError(
                f"--redpanda-admin {url!r} is not an http(s) URL (for example http://redpanda-0:9644)"
            )
        self.url = url.rstrip("/")
        self.endpoint = f"redpanda admin {self.url}"
        self.calls: Counter[str] = Counter()
        self._auth = auth
        self._timeout = timeout_s
        self._ca = ca  # the PEM CAs of an https:// Admin API (else the system's)

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        self.calls[f"{method} {path}"] += 1
        try:
            verify: ssl.SSLContext | bool = True
            if self._ca is not None:
                verify = ssl.create_default_context(cafile=str(self._ca))
            with httpx.Client(auth=self._auth, timeout=self._timeout, verify=verify) as client:
                response = client.request(method, self.url + path, **kwargs)
        except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
            hint = ""
            if "CERTIFICATE_VERIFY_FAILED" in str(exc):
                hint = ": check ssl.truststore.location (PEM) in --command-config"
            raise TargetError(scrub(f"cannot reach {self.endpoint}: {exc}{hint}")) from None
        if response.status_code in (401, 403):
            raise TargetError(
                f"{self.endpoint}: authentication failed (HTTP {response.status_code}): check "
                "the user:password of --redpanda-auth-file (or RPK_USER/RPK_PASS)"
            )
        if response.status_code != 200:
            body = scrub(response.text.strip().replace("\n", " "))[:300]
            raise TargetError(
                f"{self.endpoint}: {method} {path} answered HTTP {response.status_code}: {body}"
            )
        try:
            return response.json()
        except ValueError:
            raise TargetError(f"{self.endpoint}: {method} {path} did not answer JSON") from None

    def cluster_config(self) -> dict[str, Any]:
        """The properties set explicitly (defaults left out)."""
        doc = self._request("GET", "/v1/cluster_config", params={"include_defaults": "false"})
        if not isinstance(doc, dict):
            raise TargetError(f"{self.endpoint}: /v1/cluster_config is not a JSON object")
        return doc

    def patch_cluster_config(self, upsert: dict[str, Any], remove: list[str]) -> int:
        """Set and reset properties; the new ``config_version``."""
        doc = self._request("PUT", "/v1/cluster_config", json={"upsert": upsert, "remove": remove})
        return int(doc.get("config_version", -1)) if isinstance(doc, dict) else -1
