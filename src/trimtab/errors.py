"""The exceptions trimtab raises, one tree so callers can catch broadly or narrowly.

::

    TrimtabError
     ├── ConfigError                      (also a ValueError)
     │    ├── UnknownConfigKeyError        a key no setting answers to; carries a suggestion
     │    └── ConfigValueError             a known key with a value outside what it allows
     ├── InputError                       an input table that cannot be used at all
     ├── InvalidTopologyError             (also a ValueError) mixed depths, bad rack names
     ├── ResolverError                    a DNS-to-switch resolver that cannot start
     └── NotEnoughNodesError              a placement the cluster cannot satisfy, with the numbers

Row-level problems in input files are not exceptions: they are reported as rejected rows
(see :mod:`trimtab.tables`) so that one bad line never hides the good ones.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ConfigValueError",
    "InputError",
    "InvalidTopologyError",
    "NotEnoughNodesError",
    "ResolverError",
    "TrimtabError",
    "UnknownConfigKeyError",
]


class TrimtabError(Exception):
    """Base of every error trimtab raises on purpose."""


class ConfigError(TrimtabError, ValueError):
    """A configuration that cannot be used."""


class UnknownConfigKeyError(ConfigError):
    """A key that no setting answers to."""

    def __init__(self, key: str, suggestion: str | None, source: str | None = None) -> None:
        self.key = key
        self.suggestion = suggestion
        self.source = source
        where = f" in {source}" if source else ""
        hint = f"; did you mean '{suggestion}'?" if suggestion else ""
        super().__init__(f"unknown config key '{key}'{where}{hint}")


class ConfigValueError(ConfigError):
    """A known key whose value is outside what it allows."""

    def __init__(self, key: str, value: object, allowed: str, source: str | None = None) -> None:
        self.key = key
        self.value = value
        self.allowed = allowed
        self.source = source
        where = f" in {source}" if source else ""
        super().__init__(f"bad value {value!r} for config key '{key}'{where}: {allowed}")


class InputError(TrimtabError):
    """An input table that cannot be read at all (missing file, missing column, no rows)."""


class InvalidTopologyError(TrimtabError, ValueError):
    """A network location that does not fit the topology (mixed depths, empty or '/' names)."""


class ResolverError(TrimtabError):
    """A DNS-to-switch resolver that cannot start (e.g. its script fails validation)."""


class NotEnoughNodesError(TrimtabError):
    """Fewer eligible nodes than a placement asks for (BookKeeper's BKNotEnoughBookiesException).

    Carries the numbers so that the message explains itself: how many were asked for, how many
    nodes the cluster has that could serve, and how many of those were excluded.
    """

    def __init__(
        self, *, requested: int, available: int, excluded: int = 0, detail: str = ""
    ) -> None:
        self.requested = requested
        self.available = available
        self.excluded = excluded
        self.detail = detail
        msg = (
            f"not enough nodes: asked for {requested}, {available} available ({excluded} excluded)"
        )
        super().__init__(f"{msg}: {detail}" if detail else msg)
