"""Which names hold secrets, and how a secret is read and kept out of every output (issue 41).

A password, token or key never comes from an option value (it would sit in the shell history,
``ps`` and the crash report); it comes from a file or an environment variable, and it never
appears in stdout, stderr, ``--json``, a log or the crash report. This module is the one place
that says which names hold secrets, so every output redacts the same ones:

- :data:`SECRET_NAMES` and :func:`is_secret_name`: option and config key names whose *value*
  is a secret (``zookeeper.ssl.keyStore.password``, Pulsar's
  ``brokerClientAuthenticationParameters``, Kafka's ``sasl.jaas.config``...); a name that
  ends in ``Path``/``File``/``Location`` names where a secret is kept, which is no secret;
- :func:`redact_argv` (the crash report's command line), :func:`redact_setting` (``trimtab
  config``), :func:`scrub` (any text: the secret values read in this process, by value);
- :func:`read_secret_file`: read a secret file, remember its value for :func:`scrub`, and warn
  (as ssh does for a private key) when others can read it.

It reads only the files it is given and imports no file-format library.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Sequence
from pathlib import Path

from trimtab.errors import ConfigError

__all__ = [
    "REDACTED",
    "SECRET_NAMES",
    "is_secret_name",
    "read_secret_file",
    "redact_argv",
    "redact_setting",
    "remember_secret",
    "scrub",
]

#: What a redacted value is shown as.
REDACTED = "***"

#: The names (options without their dashes, config keys in any accepted spelling) whose value
#: is a secret, compared without case, ``-``, ``_`` and ``.``. Words below catch the rest.
SECRET_NAMES: frozenset[str] = frozenset(
    {
        # ZooKeeper client TLS (issue 41 part 2)
        "zookeeper.ssl.keyStore.password",
        "zookeeper.ssl.trustStore.password",
        "zookeeper.key_store_password",
        # BookKeeper's TLS and the Pulsar/Kafka clients' credentials
        "tlsKeyStorePassword",
        "tlsTrustStorePassword",
        "brokerClientAuthenticationParameters",
        "bookkeeperClientAuthenticationParameters",
        "authParams",
        "sasl.jaas.config",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "basic_auth_users",
    }
)

#: Words that make any name a secret's, unless the name says where the secret is kept.
_SECRET_WORDS = ("password", "passwd", "secret", "token", "credential", "authparam")
_WHERE_KEPT = ("path", "file", "location", "dir", "env")


def _norm(name: str) -> str:
    return re.sub(r"[-_.\s]", "", name.strip().lstrip("-")).lower()


_NORMALISED = frozenset(_norm(n) for n in SECRET_NAMES)


def is_secret_name(name: str) -> bool:
    """Whether an option or config key named ``name`` holds a secret as its value."""
    norm = _norm(name)
    if norm in _NORMALISED:
        return True
    if norm.endswith(_WHERE_KEPT):
        return False
    return any(word in norm for word in _SECRET_WORDS)


def redact_setting(name: str, value: object) -> object:
    """``value``, or :data:`REDACTED` if ``name`` holds a secret and a value is set."""
    return REDACTED if value is not None and is_secret_name(name) else value


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line safe to keep: the value of every secret option (``--x-password V``,
    ``--x-password=V``) and of every secret ``key=value`` (``--conf spark.ssl.keyPassword=V``)
    replaced by :data:`REDACTED`, and every remembered secret value scrubbed."""
    shown: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            shown.append(REDACTED)
            hide_next = False
            continue
        name, eq, _value = arg.partition("=")
        if arg.startswith("-") and is_secret_name(name):
            if eq:
                shown.append(f"{name}={REDACTED}")
            else:
                shown.append(arg)
                hide_next = True
            continue
        if eq and not arg.startswith("-") and is_secret_name(name):
            shown.append(f"{name}={REDACTED}")
            continue
        shown.append(scrub(arg))
    return shown


_KNOWN: set[str] = set()
_WARNED: set[str] = set()  # secret files already warned about
_LOCK = threading.Lock()
#: Shorter values are not scrubbed by value (they would mangle ordinary text); names still are.
_MIN_SCRUBBED = 4


def remember_secret(value: str) -> None:
    """Note a secret read in this process, so :func:`scrub` removes it from any text."""
    if len(value) >= _MIN_SCRUBBED:
        with _LOCK:
            _KNOWN.add(value)


def scrub(text: str) -> str:
    """``text`` with every remembered secret value replaced by :data:`REDACTED`."""
    with _LOCK:
        known = sorted(_KNOWN, key=len, reverse=True)
    for value in known:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def read_secret_file(path: str | Path, what: str) -> tuple[str, list[str]]:
    """The secret in ``path`` (its text without the final line break) and the warnings about
    it: one if the file can be read or written by its group or others (mode & 0o077), as ssh
    warns of an unprotected private key, once per file and process however often it is read.
    ``what`` names the secret in messages."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(f"cannot read the {what} file {path}: {reason}") from None
    secret = text.rstrip("\r\n")
    if not secret:
        raise ConfigError(f"the {what} file {path} is empty")
    remember_secret(secret)
    warnings = []
    with _LOCK:
        first = str(path.resolve()) not in _WARNED
        _WARNED.add(str(path.resolve()))
    if first and stat.S_IMODE(mode) & 0o077 and os.name == "posix":
        warnings.append(
            f"the {what} file {path} is accessible by others (mode "
            f"{stat.S_IMODE(mode):04o}): run chmod 600 {path}"
        )
    return secret, warnings
