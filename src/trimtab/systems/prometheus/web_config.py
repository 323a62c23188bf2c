"""The exporter-toolkit web configuration file (``--web-config``), parsed and checked.

Why strict: a security file that silently ignores a misspelt ``client_auth_type`` serves
metrics to anyone. As upstream (``yaml.UnmarshalStrict``), an unknown key is an error; here the
error names the key, its place and the nearest known key, in one line, before the command
starts anything. The format is upstream's (prometheus/exporter-toolkit
``docs/web-configuration.md``)::

    tls_server_config: {cert_file, key_file, client_auth_type, client_ca_file, client_ca,
                        client_allowed_sans, min_version, max_version,
                        prefer_server_cipher_suites}
    http_server_config: {http2, headers}
    basic_auth_users: {user: bcrypt hash}
    rate_limit: {interval, burst}

Relative file names are taken from the file's own directory, as upstream does. What trimtab
does not do is refused by name rather than ignored: inline ``cert``/``key`` (give files),
``cipher_suites``/``curve_preferences`` (Python's ``ssl`` takes OpenSSL's names, not Go's), and
the client auth types that accept a certificate without verifying it.

A password is never printed: a ``basic_auth_users`` value that is not a bcrypt hash is refused
by its user name only, and remembered by :mod:`trimtab.config.secrets` so it is scrubbed from
any later output.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trimtab.config.secrets import remember_secret
from trimtab.errors import ConfigError

__all__ = [
    "CLIENT_AUTH_TYPES",
    "HEADERS",
    "TLS_VERSIONS",
    "HttpServerConfig",
    "RateLimit",
    "TlsServerConfig",
    "WebConfig",
    "WebConfigError",
    "load_web_config",
]

#: ``client_auth_type`` values trimtab serves (each verifies a certificate it accepts).
CLIENT_AUTH_TYPES = ("NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert")
_UNVERIFIED_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
#: ``min_version``/``max_version`` values, oldest first.
TLS_VERSIONS = ("TLS10", "TLS11", "TLS12", "TLS13")

_TOP = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit")
_TLS_KEYS = (
    "cert_file",
    "key_file",
    "client_auth_type",
    "client_ca_file",
    "client_ca",
    "client_allowed_sans",
    "min_version",
    "max_version",
    "prefer_server_cipher_suites",
)
_TLS_REFUSED = {
    "cert": "inline certificates are not read: put it in a file and give cert_file",
    "key": "inline keys are not read: put it in a file of mode 600 and give key_file",
    "cipher_suites": "trimtab serves TLS with Python's OpenSSL, which has no Go cipher "
    "names: remove it (TLS 1.3 suites and OpenSSL's TLS 1.2 defaults apply)",
    "curve_preferences": "trimtab serves TLS with Python's OpenSSL, which takes no Go curve "
    "list: remove it (OpenSSL's default groups apply)",
}
_HTTP_KEYS = ("http2", "headers")
#: Headers upstream lets a file set, with the values it allows (None: any).
HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
_RATE_KEYS = ("interval", "burst")
_BCRYPT = re.compile(r"^\$2[abxy]?\$(\d\d)\$[./A-Za-z0-9]{53}$")
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_HASH_HOWTO = "htpasswd -nBC 10 \"\" | tr -d ':\\n'"


class WebConfigError(ConfigError):
    """A web configuration file that cannot be used; the message names the file and key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsServerConfig:
    """``tls_server_config``: files resolved against the web config's directory."""

    cert_file: Path
    key_file: Path
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    client_ca: str | None = None
    client_allowed_sans: tuple[str, ...] | None = None
    min_version: str = "TLS12"
    max_version: str = "TLS13"
    prefer_server_cipher_suites: bool = True

    @property
    def files(self) -> tuple[Path, ...]:
        ca = (self.client_ca_file,) if self.client_ca_file is not None else ()
        return (self.cert_file, self.key_file, *ca)


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpServerConfig:
    """``http_server_config``: ``http2`` (accepted; trimtab serves HTTP/1.1, which Prometheus
    scrapes with) and the extra response ``headers``."""

    http2: bool = True
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """``rate_limit``: a token bucket of ``burst`` requests refilled one per ``interval_s``."""

    interval_s: float
    burst: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WebConfig:
    """One web configuration file, checked; ``users`` maps a user to its bcrypt hash."""

    source: Path
    tls: TlsServerConfig | None = None
    http: HttpServerConfig = HttpServerConfig()
    users: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    rate_limit: RateLimit | None = None

    @property
    def files(self) -> tuple[Path, ...]:
        """The file and every file it names: what a reload watches."""
        return (self.source, *(self.tls.files if self.tls is not None else ()))


class _DuplicateKey(yaml.YAMLError):
    """A key given twice in one mapping (names the key: keys are no secrets)."""


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader refusing a key given twice (upstream's strict decoding does)."""


def _unique_keys(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise _DuplicateKey(f"line {key_node.start_mark.line + 1}: key {key!r} given twice")
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_keys)


class _Checker:
    """Reads one file's document, raising :class:`WebConfigError` with the file's name."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def fail(self, message: str) -> WebConfigError:
        return WebConfigError(f"web config {self.source}: {message}")

    def section(
        self, doc: Any, where: str, known: tuple[str, ...], refused: Mapping[str, str]
    ) -> dict[str, Any]:
        """``doc`` as a mapping of known keys; a typo names the nearest known key."""
        if doc is None:
            return {}
        if not isinstance(doc, dict):
            raise self.fail(f"{where or 'the file'} must be a mapping of keys")
        for key in doc:
            name = f"{where}.{key}" if where else str(key)
            if key in refused:
                raise self.fail(f"{name}: {refused[key]}")
            if key not in known:
                near = difflib.get_close_matches(str(key), [*known, *refused], n=1, cutoff=0.5)
                hint = f"; did you mean '{near[0]}'?" if near else f"; known: {', '.join(known)}"
                raise self.fail(f"unknown key '{name}'{hint}")
        return doc

    def text(self, doc: Mapping[str, Any], key: str, where: str) -> str | None:
        value = doc.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{where}.{key} must be a non-empty string")
        return value

    def path(self, doc: Mapping[str, Any], key: str, where: str) -> Path | None:
        value = self.text(doc, key, where)
        return None if value is None else self.source.parent / Path(value).expanduser()

    def boolean(self, doc: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
        value = doc.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(f"{where}.{key} must be true or false")
        return value

    def choice(
        self, doc: Mapping[str, Any], key: str, where: str, allowed: tuple[str, ...], default: str
    ) -> str:
        value = self.text(doc, key, where) or default
        if value not in allowed:
            near = difflib.get_close_matches(value, allowed, n=1, cutoff=0.5)
            hint = f"did you mean '{near[0]}'? " if near else ""
            raise self.fail(
                f"{where}.{key} {value!r} is not known: {hint}give one of {', '.join(allowed)}"
            )
        return value


def _tls(check: _Checker, doc: Any) -> TlsServerConfig | None:
    where = "tls_server_config"
    if isinstance(doc, dict) and isinstance(doc.get("key"), str):
        remember_secret(doc["key"])  # an inline key is a secret, even refused
    section = check.section(doc, where, _TLS_KEYS, _TLS_REFUSED)
    if not section:
        return None
    cert, key = check.path(section, "cert_file", where), check.path(section, "key_file", where)
    if cert is None or key is None:
        missing = "cert_file" if cert is None else "key_file"
        raise check.fail(f"{where}.{missing} is missing: TLS needs both cert_file and key_file")
    auth_type = section.get("client_auth_type")
    if auth_type in _UNVERIFIED_AUTH:
        raise check.fail(
            f"{where}.client_auth_type {auth_type} accepts a client certificate without "
            "verifying it, which trimtab does not serve: use RequireAndVerifyClientCert (or "
            "VerifyClientCertIfGiven) with client_ca_file"
        )
    auth = check.choice(section, "client_auth_type", where, CLIENT_AUTH_TYPES, "NoClientCert")
    tls = TlsServerConfig(
        cert_file=cert,
        key_file=key,
        client_auth_type=auth,
        client_ca_file=check.path(section, "client_ca_file", where),
        client_ca=check.text(section, "client_ca", where),
        client_allowed_sans=_sans(check, section.get("client_allowed_sans")),
        min_version=check.choice(section, "min_version", where, TLS_VERSIONS, "TLS12"),
        max_version=check.choice(section, "max_version", where, TLS_VERSIONS, "TLS13"),
        prefer_server_cipher_suites=check.boolean(
            section, "prefer_server_cipher_suites", where, True
        ),
    )
    _tls_consistent(check, tls)
    return tls


def _sans(check: _Checker, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise check.fail("tls_server_config.client_allowed_sans must be a list of names")
    return tuple(value)


def _tls_consistent(check: _Checker, tls: TlsServerConfig) -> None:
    """The combinations upstream refuses, and the one trimtab adds (verify needs a CA)."""
    where = "tls_server_config"
    has_ca = tls.client_ca_file is not None or tls.client_ca is not None
    if tls.client_ca_file is not None and tls.client_ca is not None:
        raise check.fail(f"{where}: give client_ca_file or client_ca, not both")
    if has_ca and tls.client_auth_type == "NoClientCert":
        raise check.fail(
            f"{where}.client_ca_file is set but client_auth_type is NoClientCert, so no client "
            "certificate would be asked for: set client_auth_type: RequireAndVerifyClientCert"
        )
    if not has_ca and tls.client_auth_type != "NoClientCert":
        raise check.fail(
            f"{where}.client_auth_type {tls.client_auth_type} needs client_ca_file: the CA "
            "certificates (PEM) that sign the clients' certificates"
        )
    if tls.client_allowed_sans is not None and tls.client_auth_type != CLIENT_AUTH_TYPES[2]:
        raise check.fail(
            f"{where}.client_allowed_sans needs client_auth_type: RequireAndVerifyClientCert"
        )
    if TLS_VERSIONS.index(tls.min_version) > TLS_VERSIONS.index(tls.max_version):
        raise check.fail(f"{where}.min_version {tls.min_version} is above max_version")


def _http(check: _Checker, doc: Any) -> HttpServerConfig:
    where = "http_server_config"
    section = check.section(doc, where, _HTTP_KEYS, {})
    headers = section.get("headers") or {}
    if not isinstance(headers, dict):
        raise check.fail(f"{where}.headers must be a mapping of header names to values")
    for name, value in headers.items():
        if name not in HEADERS:
            near = difflib.get_close_matches(str(name), list(HEADERS), n=1, cutoff=0.5)
            hint = f"did you mean '{near[0]}'? " if near else ""
            raise check.fail(
                f"{where}.headers: header {name!r} cannot be set: {hint}"
                f"give one of {', '.join(HEADERS)}"
            )
        allowed = HEADERS[name]
        if not isinstance(value, str) or (allowed is not None and value not in allowed):
            what = " or ".join(allowed) if allowed else "a string"
            raise check.fail(f"{where}.headers.{name} must be {what}")
    return HttpServerConfig(
        http2=check.boolean(section, "http2", where, True),
        headers=tuple((str(k), v) for k, v in headers.items() if v),
    )


def _users(check: _Checker, doc: Any) -> dict[str, bytes]:
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise check.fail("basic_auth_users must be a mapping of user names to bcrypt hashes")
    users: dict[str, bytes] = {}
    for user, hashed in doc.items():
        if isinstance(hashed, str | int | float) and not isinstance(hashed, bool):
            remember_secret(str(hashed))  # perhaps a password: never to be shown anywhere
        if not isinstance(user, str) or not user:
            raise check.fail("basic_auth_users: every user name must be a non-empty string")
        if not isinstance(hashed, str) or not _BCRYPT.match(hashed):
            raise check.fail(
                f"basic_auth_users.{user} is not a bcrypt hash (a password in clear is never "
                f"taken): store its hash, as {_HASH_HOWTO} prints it"
            )
        users[user] = hashed.encode("ascii")
    return users


def _duration_s(check: _Checker, value: Any) -> float:
    """A Go duration (``30s``, ``1m30s``, ``100ms``; ``0`` is none) in seconds."""
    text = str(value).strip() if isinstance(value, str | int) else ""
    if text == "0":
        return 0.0
    parts = _DURATION.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise check.fail(f"rate_limit.interval {value!r} is not a duration: write 1s, 500ms, 1m")
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _rate_limit(check: _Checker, doc: Any) -> RateLimit | None:
    section = check.section(doc, "rate_limit", _RATE_KEYS, {})
    interval = _duration_s(check, section.get("interval", "0"))
    if interval == 0:
        return None
    burst = section.get("burst")
    if not isinstance(burst, int) or isinstance(burst, bool) or burst < 1:
        raise check.fail("rate_limit.burst must be a whole number of requests, at least 1")
    return RateLimit(interval_s=interval, burst=burst)


def _document(check: _Checker) -> Any:
    try:
        text = check.source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise check.fail("no such file: give the path of an exporter-toolkit web config") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise check.fail(f"cannot read it: {reason}") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a safe loader
    except _DuplicateKey as exc:
        raise check.fail(str(exc)) from None
    except yaml.YAMLError as exc:
        # problem and position only: the snippet yaml would quote may hold a password
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        # and no quoted text: yaml quotes what it stumbled on ("undefined alias 'word'"),
        # which may be a piece of a password written without quotes
        problem = re.sub(r"(['\"]).*?\1", "…", getattr(exc, "problem", None) or "")
        problem = problem or "cannot be parsed"
        raise check.fail(f"not valid YAML: {where}{problem}") from None


def load_web_config(path: str | Path) -> WebConfig:
    """The web configuration in ``path``, every key checked (the files it names are read by
    :func:`~trimtab.systems.prometheus.web_tls.server_context`); :class:`WebConfigError`."""
    check = _Checker(Path(path))
    doc = check.section(_document(check), "", _TOP, {})
    return WebConfig(
        source=check.source,
        tls=_tls(check, doc.get("tls_server_config")),
        http=_http(check, doc.get("http_server_config")),
        users=_users(check, doc.get("basic_auth_users")),
        rate_limit=_rate_limit(check, doc.get("rate_limit")),
    )
