"""DNS-to-switch resolvers: where does each host sit? (upstream ``DNSToSwitchMapping``)

A resolver turns host names into network locations, one answer per name and in order; a name it
cannot place gets its default rack. Three come built in:

* :class:`DefaultResolver` puts everything on the default rack (upstream's fallback);
* :class:`~trimtab.topology.table.TableResolver` looks hosts up in a host -> location table;
* :class:`~trimtab.topology.script.ScriptResolver` runs an executable (upstream's default);
* :class:`~trimtab.systems.pulsar.bookies.PulsarRackResolver` follows Pulsar's ``/bookies``
  znode. It talks to ZooKeeper, so it lives with Pulsar's adapters.

Building the resolver a configuration names (``reppDnsResolverClass``, a script, a table file,
Pulsar's znode, an import path) reads files and dials servers, so it is not the tree's job:
:func:`trimtab.systems.bookkeeper.placement_setup.make_resolver` does it.

:func:`resolve_locations` is the one place that asks a resolver about nodes. Like upstream's
``DNSResolverDecorator`` it never trusts a plug-in's answer: an exception, a list of the wrong
length or an answer that is not a location sends the affected nodes to the default rack.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from trimtab.cluster import DEFAULT_RACK, NodeId, validate_location
from trimtab.topology._common import LOG, checked_default_rack
from trimtab.topology.script import ScriptResolver
from trimtab.topology.table import RackChangeListener, RackChanges, TableResolver

__all__ = [
    "DefaultResolver",
    "RackChangeListener",
    "RackChanges",
    "Resolver",
    "ScriptResolver",
    "TableResolver",
    "resolve_locations",
]


@runtime_checkable
class Resolver(Protocol):
    """What placement needs from a DNS-to-switch mapping."""

    def resolve(self, names: Sequence[str]) -> list[str]:
        """One location per name, same order; ``[]`` for ``[]``; unknown names -> default rack."""
        ...

    def reload_cached_mappings(self) -> None:
        """Drop any cached answers so that later lookups see new data."""
        ...


class DefaultResolver:
    """Every host on ``default_rack``: what a cluster gets when no resolver is configured."""

    __slots__ = ("default_rack",)

    def __init__(self, default_rack: str = DEFAULT_RACK) -> None:
        self.default_rack = checked_default_rack(default_rack)

    def __repr__(self) -> str:
        return f"DefaultResolver({self.default_rack!r})"

    def resolve(self, names: Sequence[str]) -> list[str]:
        return [self.default_rack] * len(names)

    def reload_cached_mappings(self) -> None:
        """Nothing is cached."""


def resolve_locations(
    resolver: Resolver, nodes: Iterable[NodeId], *, default_rack: str | None = None
) -> dict[NodeId, str]:
    """Each node's location, asking ``resolver`` about every distinct host in one call.

    Answers that cannot be used (see the module docstring) become ``default_rack``, which
    defaults to the resolver's own ``default_rack`` attribute, or ``/default-rack`` without one.
    The result is in node id order.
    """
    ordered = sorted({NodeId(n) for n in nodes})
    if not ordered:
        return {}
    if default_rack is None:
        own = getattr(resolver, "default_rack", None)
        default_rack = own if isinstance(own, str) else DEFAULT_RACK
    fallback = checked_default_rack(default_rack)
    hosts = list(dict.fromkeys(n.host for n in ordered))
    located = dict(zip(hosts, _ask(resolver, hosts, fallback), strict=True))
    return {n: located[n.host] for n in ordered}


def _ask(resolver: Resolver, hosts: list[str], fallback: str) -> list[str]:
    try:
        answers: object = resolver.resolve(hosts)
    except Exception as exc:  # a plug-in may fail in any way; placement must go on
        LOG.warning(
            "resolver %r failed for %d host(s) (%s: %s); using the default rack %s",
            resolver,
            len(hosts),
            type(exc).__name__,
            exc,
            fallback,
        )
        return [fallback] * len(hosts)
    if not isinstance(answers, Sequence) or isinstance(answers, str) or len(answers) != len(hosts):
        if isinstance(answers, Sequence) and not isinstance(answers, str):
            reply = f"{len(answers)} answers"
        else:
            reply = f"a {type(answers).__name__} instead of a list"
        LOG.warning(
            "resolver %r gave %s for %d host(s); using the default rack %s",
            resolver,
            reply,
            len(hosts),
            fallback,
        )
        return [fallback] * len(hosts)
    out: list[str] = []
    bad: list[str] = []
    for host, answer in zip(hosts, answers, strict=True):
        location = _usable(answer)
        if location is None and answer is not None:  # None is upstream's "unknown": no noise
            bad.append(f"{host}={answer!r}")
        out.append(fallback if location is None else location)
    if bad:
        LOG.warning(
            "resolver %r gave answers that are not locations (%s); using the default rack %s",
            resolver,
            ", ".join(bad[:5]),
            fallback,
        )
    return out


def _usable(answer: object) -> str | None:
    if not isinstance(answer, str):
        return None
    try:
        return validate_location(answer)
    except ValueError:
        return None
