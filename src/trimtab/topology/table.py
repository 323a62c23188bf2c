"""A host -> location table resolver, from a mapping or a table file, that tells listeners
what moved.

Upstream has no table-based mapping: its tests use ``StaticDNSResolver``, an in-memory table
that calls ``onBookieRackChange`` when an entry changes, and Pulsar fills the role in production
with a ZooKeeper-backed rack map. This is that table as a first-class resolver.

The table comes from a mapping, or from a :class:`TableFile` that :meth:`TableResolver.reload`
re-reads: the file formats (``host location`` lines, or a CSV with ``host`` and ``location``
columns) are read by :mod:`trimtab.readers.rack_table`, outside this pure module. A bad
location is an :class:`InvalidTopologyError` naming the host (and, from a file, the line),
because a table someone wrote by hand should fail loudly rather than send nodes to the default
rack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from trimtab.cluster import DEFAULT_RACK
from trimtab.topology._common import checked_default_rack, checked_host, checked_location

__all__ = ["RackChangeListener", "RackChanges", "TableFile", "TableResolver"]

#: ``{host: (old location or None, new location or None)}`` for every host whose entry changed.
RackChanges = dict[str, tuple[str | None, str | None]]
#: Called with the changes after the table changed (BookKeeper's ``onBookieRackChange``).
RackChangeListener = Callable[[RackChanges], None]


class TableFile(Protocol):
    """A file a :class:`TableResolver` reads its entries from, and re-reads on :meth:`reload`
    (:class:`trimtab.readers.rack_table.RackTableFile`)."""

    @property
    def path(self) -> Path:
        """The file, for messages and :attr:`TableResolver.path`."""
        ...

    def read(self) -> dict[str, str]:
        """Every entry, host -> location, each checked (errors name the file and line);
        :class:`~trimtab.errors.ResolverError` when the file cannot be used at all."""
        ...


class TableResolver:
    """Resolves hosts from a table; hosts not in it get ``default_rack``.

    The table is replaced as a whole on every change, never edited in place, so a ``resolve``
    running on another thread sees either the old table or the new one.

    >>> t = TableResolver({"bk1": "/dc1/r1"})
    >>> t.resolve(["bk1", "bk2"])
    ['/dc1/r1', '/default-rack']
    """

    __slots__ = ("_file", "_listeners", "_table", "default_rack")

    def __init__(
        self,
        mapping: Mapping[str, str] | None = None,
        *,
        default_rack: str = DEFAULT_RACK,
        file: TableFile | None = None,
    ) -> None:
        """The table of ``mapping``, or of ``file``, read at once (:meth:`reload` re-reads it;
        :class:`~trimtab.errors.ResolverError` if the file cannot be used)."""
        if mapping is not None and file is not None:
            raise ValueError("a rack table comes from a mapping or from a file, not both")
        self.default_rack = checked_default_rack(default_rack)
        self._file = file
        self._listeners: list[RackChangeListener] = []
        self._table = (
            file.read()
            if file is not None
            else dict(_checked_entries(mapping or {}, source="rack table"))
        )

    @property
    def path(self) -> Path | None:
        """The file the table comes from, or None for a table built from a mapping."""
        return None if self._file is None else self._file.path

    def __len__(self) -> int:
        return len(self._table)

    def as_dict(self) -> dict[str, str]:
        """A copy of the table, host -> location, in host order."""
        return dict(sorted(self._table.items()))

    def resolve(self, names: Sequence[str]) -> list[str]:
        """One location per name, in order, whatever its letter case; names not in the table
        get the default rack."""
        table = self._table
        return [table.get(name.strip().lower(), self.default_rack) for name in names]

    def reload_cached_mappings(self) -> None:
        """Re-read the file, as upstream's ``reloadCachedMappings`` asks (see :meth:`reload`)."""
        self.reload()

    def reload(self) -> RackChanges:
        """Re-read the file and tell listeners what changed; returns the changes.

        The file is the source of truth: entries changed with :meth:`set` since the last read
        are replaced by what the file says. A table built from a mapping has nothing to re-read.
        """
        if self._file is None:
            return {}
        return self._replace(self._file.read())

    def set(self, host: str, location: str | None) -> None:
        """Put ``host`` at ``location``, or forget it with ``None`` (it then gets the default)."""
        self.update({host: location})

    def update(self, mapping: Mapping[str, str | None]) -> RackChanges:
        """Apply several entries at once (``None`` forgets a host); listeners hear one call.

        Every location is checked before any is applied, so a bad entry changes nothing.
        """
        table = dict(self._table)
        for host, location in mapping.items():
            key = checked_host(host, source="rack table update")
            if location is None:
                table.pop(key, None)
            else:
                table[key] = checked_location(location, what=f"rack table update: host {key!r}")
        return self._replace(table)

    def add_listener(self, callback: RackChangeListener) -> None:
        """Call ``callback`` with the changes after each change of the table."""
        self._listeners.append(callback)

    def remove_listener(self, callback: RackChangeListener) -> bool:
        """Stop calling ``callback``; True if it was registered."""
        try:
            self._listeners.remove(callback)
        except ValueError:
            return False
        return True

    def _replace(self, table: dict[str, str]) -> RackChanges:
        old = self._table
        changes: RackChanges = {
            host: (old.get(host), table.get(host))
            for host in sorted(old.keys() | table.keys())
            if old.get(host) != table.get(host)
        }
        self._table = table
        if changes:
            for listener in tuple(self._listeners):
                listener(dict(changes))
        return changes

    def __repr__(self) -> str:
        source = str(self._file.path) if self._file is not None else "mapping"
        return f"TableResolver({len(self)} hosts from {source}, default {self.default_rack!r})"


def _checked_entries(entries: Mapping[str, str], *, source: str) -> Iterator[tuple[str, str]]:
    for host, location in entries.items():
        key = checked_host(host, source=source)
        yield key, checked_location(location, what=f"{source}: host {key!r}")
