"""DNS-to-switch resolvers: where does each host sit? (upstream ``DNSToSwitchMapping``)

A resolver turns host names into network locations, one answer per name and in order; a name it
cannot place gets its default rack. Three come built in:

* :class:`DefaultResolver` puts everything on the default rack (upstream's fallback);
* :class:`~trimtab.topology.table.TableResolver` looks hosts up in a host -> location table;
* :class:`~trimtab.topology.script.ScriptResolver` runs an executable (upstream's default);
* :class:`~trimtab.topology.pulsar.PulsarRackResolver` follows Pulsar's ``/bookies`` znode.

Any other class with ``resolve`` and ``reload_cached_mappings`` can be named by import path.

:func:`make_resolver` follows upstream's start-up rule: a resolver that cannot start (no script
configured, a script that fails its check, an import path that does not load) is logged and
replaced by :class:`DefaultResolver`, unless ``strict`` (upstream: when
``enforceMinNumRacksPerWriteQuorum`` is on, since a cluster on one default rack could never meet
the minimum) re-raises the :class:`ResolverError`.

:func:`resolve_locations` is the one place that asks a resolver about nodes. Like upstream's
``DNSResolverDecorator`` it never trusts a plug-in's answer: an exception, a list of the wrong
length or an answer that is not a location sends the affected nodes to the default rack.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, cast, runtime_checkable

from trimtab.cluster import DEFAULT_RACK, NodeId, validate_location
from trimtab.errors import ResolverError
from trimtab.topology._common import LOG, checked_default_rack
from trimtab.topology.pulsar import PulsarRackResolver
from trimtab.topology.script import ScriptResolver
from trimtab.topology.table import RackChangeListener, RackChanges, TableFile, TableResolver

__all__ = [
    "DefaultResolver",
    "PulsarRackResolver",
    "RackChangeListener",
    "RackChanges",
    "Resolver",
    "ScriptResolver",
    "TableResolver",
    "load_resolver",
    "make_resolver",
    "resolve_locations",
]

# The built-in kinds :func:`make_resolver` knows by name; anything else is an import path.
_KINDS = ("default", "script", "table", "pulsar")


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


def load_resolver(import_path: str, **kwargs: object) -> Resolver:
    """Import ``"package.module:ClassName"`` (or ``"package.module.ClassName"``), build it.

    Raises :class:`ResolverError` naming the path if the module or class is missing, the
    constructor fails, or the object lacks ``resolve`` / ``reload_cached_mappings``.
    """
    path = import_path.strip()
    if ":" in path:
        module_name, _, attribute = path.partition(":")
    else:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise ResolverError(
            f"bad resolver import path {import_path!r}: expected 'package.module:ClassName'"
        )
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise ResolverError(
            f"cannot load resolver {import_path!r}: module {module_name!r} not importable ({exc})"
        ) from None
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise ResolverError(
                f"cannot load resolver {import_path!r}: {module_name!r} has no {attribute!r}"
            )
        target = getattr(target, name)
    if not callable(target):
        raise ResolverError(f"cannot load resolver {import_path!r}: it is not a class")
    try:
        resolver = target(**kwargs)
    except ResolverError:
        raise
    except Exception as exc:  # a plug-in's constructor may fail in any way; say which one failed
        raise ResolverError(
            f"cannot construct resolver {import_path!r}: {type(exc).__name__}: {exc}"
        ) from exc
    missing = [m for m in ("resolve", "reload_cached_mappings") if not _has_method(resolver, m)]
    if missing:
        raise ResolverError(
            f"{import_path!r} is not a resolver: it has no {' or '.join(missing)} method"
        )
    return cast(Resolver, resolver)


def _has_method(obj: object, name: str) -> bool:
    return callable(getattr(obj, name, None))


def make_resolver(
    *,
    kind: str,
    script: str | os.PathLike[str] | None = None,
    number_args: int = 100,
    timeout_s: float = 10.0,
    table: Mapping[str, str] | TableFile | None = None,
    default_rack: str = DEFAULT_RACK,
    strict: bool = False,
    zk_servers: str | None = None,
) -> Resolver:
    """Build the resolver ``kind`` names: ``script``, ``table``, ``default``, ``pulsar`` (the
    ``/bookies`` znode on ``zk_servers``) or an import path. ``table`` is a mapping or a
    :class:`~trimtab.topology.table.TableFile` the caller opened
    (:class:`trimtab.readers.rack_table.RackTableFile`): this module reads no file format.

    A resolver that cannot start is logged and replaced by ``DefaultResolver(default_rack)``;
    with ``strict`` the :class:`ResolverError` is raised instead. An unknown ``kind`` that is
    not an import path either is a configuration mistake, so it raises ``ValueError`` always.
    """
    fallback = DefaultResolver(default_rack)
    name = kind.strip()
    try:
        return _build(
            name,
            script=script,
            number_args=number_args,
            timeout_s=timeout_s,
            table=table,
            default_rack=fallback.default_rack,
            zk_servers=zk_servers,
        )
    except ResolverError as exc:
        if strict:
            raise
        LOG.warning(
            "resolver %r could not start (%s); every node goes to the default rack %s",
            name,
            exc,
            fallback.default_rack,
        )
        return fallback


def _build(
    name: str,
    *,
    script: str | os.PathLike[str] | None,
    number_args: int,
    timeout_s: float,
    table: Mapping[str, str] | TableFile | None,
    default_rack: str,
    zk_servers: str | None = None,
) -> Resolver:
    match name.lower():
        case "default":
            return DefaultResolver(default_rack)
        case "script":
            if script is None or not str(script).strip():
                raise ResolverError(
                    "resolver kind 'script' needs a script (networkTopologyScriptFileName),"
                    " and none is configured"
                )
            return ScriptResolver(
                Path(script),
                number_args=number_args,
                timeout_s=timeout_s,
                default_rack=default_rack,
            )
        case "table":
            if table is None:
                raise ResolverError("resolver kind 'table' needs a table file or mapping")
            if isinstance(table, Mapping):
                return TableResolver(table, default_rack=default_rack)
            return TableResolver(default_rack=default_rack, file=table)
        case "pulsar":
            return PulsarRackResolver(zk_servers, default_rack=default_rack, timeout_s=timeout_s)
    if "." in name or ":" in name:
        return load_resolver(name)
    raise ValueError(
        f"unknown resolver kind {name!r}: expected one of {', '.join(_KINDS)}"
        " or an import path such as 'package.module:ClassName'"
    )


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
