"""The one config loader: trimtab's TOML files and upstream's Java properties files.

:func:`read_config` reads a ``.toml`` file (trimtab's own: section tables, trimtab or upstream
names inside them) or a Java ``.properties``/``.conf`` file as upstream writes it
(``bk_server.conf``, ``broker.conf``, a BookKeeper client file), turns it into one flat mapping
of key names, and hands that to :func:`~trimtab.config.core.apply_keys`, the one place a key
name becomes a setting. In a properties file a key written with an empty value keeps its
default, as Pulsar reads ``broker.conf``.

This is the only module that reads files or imports a file-format library (``tomllib``,
``jproperties``): the engines import the settings modules, never this one.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trimtab.config.core import Config, LoadedConfig, apply_keys, lookup
from trimtab.config.secrets import is_secret_name, remember_secret
from trimtab.errors import ConfigError

__all__ = ["read_config", "read_properties", "read_upstream_keys"]


def read_config(path: str | Path, *, strict: bool = True) -> LoadedConfig:
    """Load a ``.toml`` or ``.properties``/``.conf`` file: the config, the upstream keys it
    ignored, and (with ``strict=False``) the unknown keys it skipped as warnings."""
    path = Path(path)
    if not path.is_file():  # is_file never opens it: a FIFO is refused here, not waited on
        what = "is not a regular file" if path.exists() else "does not exist"
        raise ConfigError(f"config file {path} {what}")
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        except UnicodeDecodeError:
            raise ConfigError(_not_utf8(path)) from None
        return apply_keys(_flatten(data), source=str(path), strict=strict)
    return apply_keys(_read_properties(path), source=str(path), strict=strict, blank_unset=True)


def read_upstream_keys(path: str | Path, names: tuple[str, ...]) -> dict[str, str]:
    """The values of the upstream keys ``names`` written (non-empty) in the properties file
    ``path`` (a ``broker.conf``), for the keys trimtab's settings do not hold but a system
    client needs (``brokerClientAuthenticationParameters``, ``tlsTrustCertsFilePath``). A
    secret's value is remembered, so it is scrubbed from every output."""
    path = Path(path)
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "does not exist"
        raise ConfigError(f"config file {path} {what}")
    found = {}
    for key, value in _read_properties(path).items():
        if key.strip() in names and value.strip():
            found[key.strip()] = value.strip()
            if is_secret_name(key):
                remember_secret(value.strip())
    return found


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML tables become dotted keys; a table named after a section keeps its prefix."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
        elif prefix and lookup(f"{prefix}{key}") is None and key in _upstream_in(prefix):
            flat[key] = value  # an upstream name written inside its section's table
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _upstream_in(prefix: str) -> set[str]:
    """Upstream key names that belong to the section table ``prefix`` (e.g. ``'placement.'``)."""
    section = prefix.rstrip(".")
    return {a for s in Config.settings() if s.section == section for a in s.aliases}


def _read_properties(path: Path) -> dict[str, str]:
    from jproperties import Properties

    props = Properties()
    try:
        with path.open("rb") as handle:
            props.load(handle, "utf-8")
    except UnicodeDecodeError:
        raise ConfigError(_not_utf8(path)) from None
    except Exception as exc:  # jproperties raises its own parse errors
        raise ConfigError(f"config file {path} is not a valid properties file: {exc}") from None
    return {key: value for key, (value, _meta) in props.items()}


def _not_utf8(path: Path) -> str:
    """Why a config file that is not UTF-8 is refused, and how to convert a UTF-16 one (as
    Windows editors save it)."""
    head = path.read_bytes()[:2]
    if head in (b"\xff\xfe", b"\xfe\xff"):
        return (
            f"config file {path} is UTF-16 text, not UTF-8: convert it with "
            f"iconv -f UTF-16 -t UTF-8 {path} > {path.stem}-utf8{path.suffix}"
        )
    return (
        f"config file {path} is not UTF-8 text (binary data, or another encoding such as "
        "Latin-1): give a broker.conf, bk_server.conf or .toml file saved as UTF-8"
    )


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file another tool owns (Kafka's ``--command-config``) as key ->
    value. Unlike :func:`read_config` it names no setting; a file that does not parse is a
    :class:`ConfigError` quoting no line, since a line may hold a password."""
    from jproperties import Properties

    props = Properties()
    try:
        with path.open("rb") as handle:
            props.load(handle, "utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except Exception:  # jproperties' own parse errors quote the line
        raise ConfigError(f"{path} is not a Java properties file (key=value lines)") from None
    return {str(key): str(value) for key, (value, _meta) in props.items()}
