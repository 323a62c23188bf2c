"""Small pieces the resolvers share: the logger and location checks with errors that say where."""

from __future__ import annotations

import logging

from trimtab.cluster import validate_location
from trimtab.errors import InvalidTopologyError

__all__ = ["LOG", "checked_default_rack", "checked_host", "checked_location"]

#: One logger for the whole topology package, so operators can raise or silence it in one place.
LOG = logging.getLogger("trimtab.topology")


def checked_location(location: str, *, what: str) -> str:
    """``location`` normalised, or :class:`InvalidTopologyError` saying ``what`` it belonged to."""
    try:
        return validate_location(location)
    except ValueError as exc:
        raise InvalidTopologyError(f"{what}: {exc}") from None


def checked_default_rack(default_rack: str) -> str:
    """A resolver's default rack, checked when the resolver is built rather than on first miss."""
    return checked_location(default_rack, what="bad default rack")


def checked_host(host: str, *, source: str) -> str:
    """``host`` stripped and in lower case (host names compare as DNS compares them, as node
    ids do), or :class:`InvalidTopologyError` naming ``source`` when it is empty or holds
    whitespace."""
    key = host.strip().lower()
    if not key or any(c.isspace() for c in key):
        raise InvalidTopologyError(f"{source}: bad host name {host!r}")
    return key
