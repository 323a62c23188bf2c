"""Calls to Pulsar's admin REST API with httpx: the token, TLS, redirects, and one error line.

Redirects are followed here, not by httpx. A broker answers 307 Temporary Redirect when
another broker owns the bundle (``validateBundleOwnership``) or serves the broker asked about
(``maybeRedirectToBroker``), and the redirected call must go on as the same PUT with the same
token. httpx keeps the method on a 307 but drops the ``Authorization`` header whenever the
redirect leaves the origin, and another broker is another origin (another port at least), so
its own following would arrive unauthenticated. This module follows at most
:data:`MAX_REDIRECTS` hops itself, and only to a host of the cluster (the admin URL's host or
a broker's, from ``GET /admin/v2/brokers/{cluster}``) with the same scheme, or from http to
https, never down to http: the token goes nowhere else.

Every failure is one :class:`~trimtab.errors.TargetError` line naming the endpoint and what to
fix: unreachable, timed out, TLS refused (wrong CA, a certificate for another host or out of
date, a peer that does not speak TLS, a client certificate wanted), 401/403 (naming where the
token came from, never the token), or the broker's own ``{"reason": ...}``.
:class:`ConnectionDroppedError` is the one the caller may retry (the peer hung up without answer).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from trimtab.errors import TargetError
from trimtab.systems.pulsar.credentials import AdminAuth, ssl_context

__all__ = ["MAX_REDIRECTS", "AdminRest", "ConnectionDroppedError"]

MAX_REDIRECTS = 5


class ConnectionDroppedError(TargetError):
    """The connection closed without an answer: the call may or may not have happened."""


class AdminRest:
    """An httpx client for one cluster's admin API (see the module docstring)."""

    def __init__(
        self,
        admin_url: str,
        auth: AdminAuth,
        *,
        timeout_s: float,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.admin_url = admin_url.rstrip("/")
        self._auth = auth
        headers = {"Accept": "application/json", "User-Agent": "trimtab"}
        if auth.token is not None:
            headers["Authorization"] = f"Bearer {auth.token}"
        https = self.admin_url.startswith("https://")
        self._client = httpx.Client(
            headers=headers,
            timeout=timeout_s,
            verify=ssl_context(auth, self.admin_url) if https else True,
            follow_redirects=False,
            trust_env=False,  # no proxy from the environment sees the token
            transport=transport,
        )
        self._timeout = timeout_s
        self._hosts = {urlsplit(self.admin_url).hostname or ""}

    def __repr__(self) -> str:
        return f"AdminRest({self.admin_url!r}, {self._auth.source})"

    def trust(self, brokers: Iterable[str]) -> None:
        """Allow redirects to these brokers' hosts (``host:port`` broker ids)."""
        self._hosts.update(b.rpartition(":")[0] or b for b in brokers)

    def get(self, url: str) -> tuple[Any, str]:
        """The JSON answer of a GET and the URL that answered it; a dropped connection is
        retried once (a read changes nothing)."""
        try:
            response = self._send("GET", url)
        except ConnectionDroppedError:
            response = self._send("GET", url)
        try:
            return response.json(), str(response.url)
        except ValueError:
            raise TargetError(f"{self._where(response.url)} answered GET with no JSON") from None

    def put(self, url: str, params: Mapping[str, str]) -> str:
        """A PUT (not retried: the caller re-reads the cluster); the URL that answered it."""
        return str(self._send("PUT", url, params).url)

    def close(self) -> None:
        self._client.close()

    # -- one call, its redirects and its errors ----------------------------------------------

    def _send(
        self, method: str, url: str, params: Mapping[str, str] | None = None
    ) -> httpx.Response:
        target = httpx.URL(url, params=params) if params else httpx.URL(url)
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                response = self._client.request(method, target)
            except httpx.HTTPError as exc:
                raise self._transport_error(exc, target) from None
            if response.status_code not in (307, 308):
                self._check(response, method)
                return response
            target = self._redirect(response)
        raise TargetError(
            f"{self._where(target)} redirected {method} more than {MAX_REDIRECTS} times: "
            "the brokers disagree about who owns it; retry later"
        )

    def _redirect(self, response: httpx.Response) -> httpx.URL:
        location = response.headers.get("Location")
        if not location:
            raise TargetError(f"{self._where(response.url)} answered 307 with no Location")
        target = response.url.join(location)
        before = response.url.scheme
        same_scheme = target.scheme == before or (before, target.scheme) == ("http", "https")
        if not same_scheme or target.host not in self._hosts:
            elsewhere = f"{target.scheme}://{target.netloc.decode()}"
            raise TargetError(
                f"{self._where(response.url)} redirected to {elsewhere}, "
                "which is not a broker of this cluster over the same scheme: the token is not "
                "sent there; check the brokers' advertised web service URLs"
            )
        return target

    def _where(self, url: httpx.URL | str) -> str:
        url = httpx.URL(str(url))
        return f"the Pulsar admin API at {url.scheme}://{url.netloc.decode()}{url.path}"

    def _check(self, response: httpx.Response, method: str) -> None:
        status = response.status_code
        if status < 400:
            return
        reason = _reason(response)
        where = self._where(response.url)
        if status == 401 and "super-user" in reason:
            raise TargetError(
                f"{where} refused {method} (401 {reason}): the role of the token from "
                f"{self._auth.source} is not a super-user; use an admin token"
            )
        if status == 401:
            fix = (
                f"check the token in {self._auth.source}"
                if self._auth.token is not None
                else "give one with --pulsar-token-file FILE"
            )
            raise TargetError(f"{where} refused {method} (401 {reason or 'unauthorized'}): {fix}")
        if status == 403:
            raise TargetError(
                f"{where} refused {method} (403 {reason or 'forbidden'}): the role of the token "
                f"from {self._auth.source} lacks admin permission"
            )
        raise TargetError(
            f"{where} answered {method} with {status}: {reason or response.reason_phrase}"
        )

    def _transport_error(self, exc: httpx.HTTPError, url: httpx.URL) -> TargetError:
        where = self._where(url)
        if isinstance(exc, httpx.TimeoutException):
            return TargetError(
                f"{where} did not answer within {self._timeout:g} s: is the broker up?"
            )
        tls = _tls_problem(exc)
        if tls is not None:
            return TargetError(f"TLS to {where} failed: {tls}")
        text = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectError):
            return TargetError(f"cannot reach {where}: {text}: check --pulsar-admin and the broker")
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            hint = " (is it a TLS port? use https://)" if url.scheme == "http" else ""
            return ConnectionDroppedError(f"{where} closed the connection without an answer{hint}")
        return TargetError(f"the call to {where} failed: {text}")


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
    return str(body.get("reason", "")) if isinstance(body, dict) else ""


def _tls_problem(exc: BaseException) -> str | None:
    """What went wrong in a TLS handshake, with what to fix; ``None`` if it was no TLS error."""
    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, ssl.SSLError):
        seen = seen.__cause__ or seen.__context__
    text = str(seen if seen is not None else exc)
    if isinstance(seen, ssl.SSLCertVerificationError):
        message = seen.verify_message or text
        if "expired" in message:
            return f"the broker's certificate has expired ({message}): renew it"
        if "mismatch" in message.lower() or "not valid for" in message:
            return (
                f"the broker's certificate is for another host ({message}): use a host name "
                "the certificate names, or reissue it"
            )
        return (
            f"the broker's certificate is not signed by a trusted CA ({message}): give the "
            "cluster's CA with --tls-ca (tlsTrustCertsFilePath)"
        )
    if any(w in text for w in ("WRONG_VERSION_NUMBER", "wrong version number", "record layer")):
        return "the peer does not speak TLS: use http:// for this port"
    if "certificate required" in text or "CERTIFICATE_REQUIRED" in text:
        return "the broker wants a client certificate: give --tls-cert and --tls-key"
    if seen is not None:
        return f"{text}: check --tls-ca, --tls-cert and --tls-key"
    return None
