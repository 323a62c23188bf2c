"""Racks where Pulsar keeps them: the ``/bookies`` znode, followed through a ZooKeeper watch.

A Pulsar-managed BookKeeper resolves racks with ``BookieRackAffinityMapping`` (formerly
``ZkBookieRackAffinityMapping``), which reads one JSON document from the metadata store, as
``pulsar-admin bookies set-bookie-rack`` writes it (``BookiesRackConfiguration``)::

    {"default": {"bk1.dc1:3181": {"rack": "/dc1/r1", "hostname": "bk1.dc1"}}}

that is ``group -> bookie address -> {rack, hostname}``. As upstream, a bookie is found by its
``host:port`` address and by its host alone (BookKeeper asks by host), and also by the entry's
``hostname`` field; a rack without a leading ``/`` gets one; an empty rack or ``/`` means
"unknown" (the default rack). Entries at the wrong depth of the document, whose rack is not a
valid location, or whose rack has another number of levels than the others are skipped with
one warning and the rest used (:func:`read_bookies_document`); a document that is not such
JSON keeps the last good table, so a bad write by hand never moves the whole cluster to the
default rack. A missing znode is an empty table.

The table lives in a :class:`~trimtab.topology.table.TableResolver`; every change of the znode
(kazoo's ``DataWatch`` re-arms the watch, also across reconnects) replaces it and tells the
table's listeners which hosts moved (upstream ``onBookieRackChange``). The topology's resolver
factory builds it for the kind ``pulsar``
(:func:`~trimtab.topology.resolvers.make_resolver`); it logs on the topology's logger.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trimtab.cluster import DEFAULT_RACK, validate_location
from trimtab.errors import ResolverError, ZooKeeperAccessError
from trimtab.systems.zookeeper.security import NO_SECURITY, ZkSecurity
from trimtab.topology._common import LOG
from trimtab.topology.table import RackChangeListener, TableResolver

__all__ = ["BOOKIES_PATH", "PulsarRackResolver", "parse_bookies_racks", "read_bookies_document"]

#: Upstream ``BookieRackAffinityMapping.BOOKIE_INFO_ROOT_PATH``.
BOOKIES_PATH = "/bookies"


def parse_bookies_racks(document: bytes | str) -> dict[str, str]:
    """``host:port``, host and ``hostname`` -> location from a ``/bookies`` document; the
    entries :func:`read_bookies_document` skips are one warning on the topology's logger.

    Raises :class:`ValueError` if the document is not a JSON object of groups.
    """
    table, skipped = read_bookies_document(document)
    if skipped:
        shown = "; ".join(skipped[:3]) + (
            f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        )
        LOG.warning(
            "/bookies: %d entr%s skipped, the rest used: %s",
            len(skipped),
            "y" if len(skipped) == 1 else "ies",
            shown,
        )
    return table


def read_bookies_document(document: bytes | str) -> tuple[dict[str, str], list[str]]:
    """The rack table of a ``/bookies`` document and a sentence per entry left out.

    An entry is left out, the others kept, when it sits at the wrong depth of
    ``{group: {address: {"rack": ...}}}`` (a group that is not an object, a bookie whose
    value is not an object), when its rack is not a location, or when its rack has another
    number of levels than most racks of the document (``/dc1/r1/x`` among ``/dc1/r1``): one
    tree holds one depth, and upstream's ``NetworkTopologyImpl`` refuses such a bookie too.
    Raises :class:`ValueError` only when the document is not a JSON object.
    """
    groups: Any = json.loads(document) if document else {}
    if not isinstance(groups, dict):
        raise ValueError("expected a JSON object of groups")
    found: list[tuple[str, Mapping[str, Any], str]] = []
    skipped: list[str] = []
    for group, bookies in groups.items():
        if not isinstance(bookies, dict):
            skipped.append(
                f"group {group!r} is {json.dumps(bookies)[:60]}, not an object of bookies"
            )
            continue
        for address, info in bookies.items():
            if not isinstance(info, dict):
                skipped.append(
                    f"{group}/{address} is {json.dumps(info)[:60]}, not "
                    '{"rack": "/rack", "hostname": ...} (a bookie entry one level too high?)'
                )
                continue
            location = _rack_of(info)
            if location is None:
                if str(info.get("rack") or "").strip() not in ("", "/"):
                    skipped.append(f"{group}/{address} has a bad rack {info.get('rack')!r}")
                continue
            found.append((str(address), info, location))
    depths = Counter(location.count("/") for _, _, location in found)
    depth = depths.most_common(1)[0][0] if depths else 0
    table: dict[str, str] = {}
    for address, info, location in found:
        if location.count("/") != depth:
            skipped.append(
                f"{address} has rack {location} of {location.count('/')} level(s), the others "
                f"have {depth}"
            )
            continue
        for key in _keys(address, info):
            table[key] = location
    return table, skipped


def _rack_of(info: Mapping[str, Any]) -> str | None:
    rack = str(info.get("rack") or "").strip()
    if rack in ("", "/"):
        return None
    try:
        return validate_location(rack if rack.startswith("/") else "/" + rack)
    except ValueError:
        return None


def _keys(address: str, info: Mapping[str, Any]) -> list[str]:
    address = address.strip().lower()  # as node ids: host names compare without case
    host = address.rsplit(":", 1)[0] if ":" in address else address
    hostname = str(info.get("hostname") or "").strip().lower()
    keys = dict.fromkeys((address, host, hostname))
    return [k for k in keys if k and not any(c.isspace() for c in k)]


class PulsarRackResolver:
    """Resolves bookies from Pulsar's ``/bookies`` znode and follows its changes.

    ``hosts`` is the ZooKeeper ensemble (``zkServers``), dialled with ``security``; ``client``
    may be a started kazoo client to share instead (it is then not stopped by :meth:`close`).
    """

    def __init__(
        self,
        hosts: str | None = None,
        *,
        path: str = BOOKIES_PATH,
        default_rack: str = DEFAULT_RACK,
        timeout_s: float = 10.0,
        client: Any = None,
        security: ZkSecurity = NO_SECURITY,
    ) -> None:
        self._table = TableResolver(default_rack=default_rack)
        self.default_rack = self._table.default_rack
        self.path = path
        self._own_client = client is None
        self._changed = threading.Condition()
        self._version = 0
        if client is None:
            if not hosts or not hosts.strip():
                raise ResolverError(
                    "the Pulsar rack resolver needs ZooKeeper servers (metadataStoreUrl,"
                    " zkServers or metadataServiceUri), and none is configured"
                )
            from trimtab.systems.zookeeper import make_client, start_session

            client = make_client(hosts, session_timeout=timeout_s, security=security)
            try:
                start_session(client, hosts=hosts, timeout=timeout_s, security=security)
            except ZooKeeperAccessError:
                raise  # a refusal is not a resolver to fall back from
            except Exception as exc:  # kazoo's time-out or a refused connection
                client.close()
                raise ResolverError(f"cannot reach ZooKeeper {hosts} for {path}: {exc}") from None
        self._client = client
        client.DataWatch(path, self._on_data)

    def _on_data(self, data: bytes | None, _stat: object) -> None:
        """kazoo's watch callback: replace the table, unless the document is unreadable."""
        try:
            table = parse_bookies_racks(data or b"")
        except (ValueError, UnicodeDecodeError) as exc:
            LOG.warning("%s is not a rack document (%s); keeping the last table", self.path, exc)
            table = None
        if table is not None:
            old = self._table.as_dict()
            self._table.update({h: table.get(h) for h in old.keys() | table.keys()})
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    @property
    def version(self) -> int:
        """How many times the znode has been read (the first read counts)."""
        return self._version

    def wait_for_version(self, version: int, timeout_s: float) -> bool:
        """Block until at least ``version`` reads happened; False on time-out."""
        with self._changed:
            return self._changed.wait_for(lambda: self._version >= version, timeout_s)

    def resolve(self, names: Sequence[str]) -> list[str]:
        """One location per name (``host`` or ``host:port``); unknown -> the default rack."""
        return self._table.resolve(names)

    def reload_cached_mappings(self) -> None:
        """Nothing to do: the watch keeps the table current (upstream: a no-op too)."""

    def as_dict(self) -> dict[str, str]:
        """The current table, key -> location."""
        return self._table.as_dict()

    def add_listener(self, callback: RackChangeListener) -> None:
        """Call ``callback`` with ``{key: (old, new)}`` after each change of the znode."""
        self._table.add_listener(callback)

    def remove_listener(self, callback: RackChangeListener) -> bool:
        return self._table.remove_listener(callback)

    def add_node_listener(self, callback: Callable[[list[str]], None]) -> None:
        """Call ``callback`` with the ``host:port`` bookies that moved, as upstream hands
        ``onBookieRackChange`` its bookie ids: ``add_node_listener(policy.on_rack_change)``."""
        self._table.add_listener(lambda changes: callback(sorted(k for k in changes if ":" in k)))

    def close(self) -> None:
        """Stop the ZooKeeper session this resolver opened (a shared client is left alone)."""
        if self._own_client:
            self._client.stop()
            self._client.close()

    def __repr__(self) -> str:
        return f"PulsarRackResolver({self.path}, {len(self._table)} keys)"
