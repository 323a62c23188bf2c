"""A host -> location table resolver, from a mapping or a file, that tells listeners what moved.

Upstream has no table-based mapping: its tests use ``StaticDNSResolver``, an in-memory table
that calls ``onBookieRackChange`` when an entry changes, and Pulsar fills the role in production
with a ZooKeeper-backed rack map. This is that table as a first-class resolver.

File formats (one per file, chosen by the suffix):

* ``*.csv``: a header row with the columns ``host`` and ``location`` (others are ignored)::

      host,location
      bk1.dc1,/dc1/r1

* anything else: ``host location`` per line, separated by whitespace::

      bk1.dc1  /dc1/r1   # text after '#' is a comment

In both, blank lines and lines starting with ``#`` are skipped. A host may appear once; a bad
location is an :class:`InvalidTopologyError` naming the file, the line and the host, because a
table someone wrote by hand should fail loudly rather than send nodes to the default rack.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from trimtab.cluster import DEFAULT_RACK
from trimtab.errors import InvalidTopologyError, ResolverError
from trimtab.topology._common import checked_default_rack, checked_location

__all__ = ["RackChangeListener", "RackChanges", "TableResolver"]

#: ``{host: (old location or None, new location or None)}`` for every host whose entry changed.
RackChanges = dict[str, tuple[str | None, str | None]]
#: Called with the changes after the table changed (BookKeeper's ``onBookieRackChange``).
RackChangeListener = Callable[[RackChanges], None]


class TableResolver:
    """Resolves hosts from a table; hosts not in it get ``default_rack``.

    The table is replaced as a whole on every change, never edited in place, so a ``resolve``
    running on another thread sees either the old table or the new one.

    >>> t = TableResolver({"bk1": "/dc1/r1"})
    >>> t.resolve(["bk1", "bk2"])
    ['/dc1/r1', '/default-rack']
    """

    __slots__ = ("_listeners", "_path", "_table", "default_rack")

    def __init__(
        self, mapping: Mapping[str, str] | None = None, *, default_rack: str = DEFAULT_RACK
    ) -> None:
        self.default_rack = checked_default_rack(default_rack)
        self._path: Path | None = None
        self._listeners: list[RackChangeListener] = []
        self._table = dict(_checked_entries(mapping or {}, source="rack table"))

    @classmethod
    def from_file(cls, path: str | Path, *, default_rack: str = DEFAULT_RACK) -> TableResolver:
        """Read the table from ``path`` (formats in the module docstring); ``reload`` re-reads it.

        Raises :class:`ResolverError` if the file cannot be read or has no host/location columns.
        """
        resolver = cls(default_rack=default_rack)
        resolver._path = Path(path)
        resolver._table = _read_table(resolver._path)
        return resolver

    @property
    def path(self) -> Path | None:
        """The file the table comes from, or None for a table built from a mapping."""
        return self._path

    def __len__(self) -> int:
        return len(self._table)

    def as_dict(self) -> dict[str, str]:
        """A copy of the table, host -> location, in host order."""
        return dict(sorted(self._table.items()))

    def resolve(self, names: Sequence[str]) -> list[str]:
        """One location per name, in order; names not in the table get the default rack."""
        table = self._table
        return [table.get(name.strip(), self.default_rack) for name in names]

    def reload_cached_mappings(self) -> None:
        """Re-read the file, as upstream's ``reloadCachedMappings`` asks (see :meth:`reload`)."""
        self.reload()

    def reload(self) -> RackChanges:
        """Re-read the file and tell listeners what changed; returns the changes.

        The file is the source of truth: entries changed with :meth:`set` since the last read
        are replaced by what the file says. A table built from a mapping has nothing to re-read.
        """
        if self._path is None:
            return {}
        return self._replace(_read_table(self._path))

    def set(self, host: str, location: str | None) -> None:
        """Put ``host`` at ``location``, or forget it with ``None`` (it then gets the default)."""
        self.update({host: location})

    def update(self, mapping: Mapping[str, str | None]) -> RackChanges:
        """Apply several entries at once (``None`` forgets a host); listeners hear one call.

        Every location is checked before any is applied, so a bad entry changes nothing.
        """
        table = dict(self._table)
        for host, location in mapping.items():
            key = _checked_host(host, source="rack table update")
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
        source = str(self._path) if self._path else "mapping"
        return f"TableResolver({len(self)} hosts from {source}, default {self.default_rack!r})"


def _checked_host(host: str, *, source: str) -> str:
    key = host.strip()
    if not key or any(c.isspace() for c in key):
        raise InvalidTopologyError(f"{source}: bad host name {host!r}")
    return key


def _checked_entries(entries: Mapping[str, str], *, source: str) -> Iterator[tuple[str, str]]:
    for host, location in entries.items():
        key = _checked_host(host, source=source)
        yield key, checked_location(location, what=f"{source}: host {key!r}")


def _read_table(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResolverError(f"cannot read rack table {path}: {exc}") from None
    lines = [
        (number, line)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    rows = _csv_rows(path, lines) if path.suffix.lower() == ".csv" else _text_rows(path, lines)
    table: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, host, location in rows:
        where = f"{path}:{number}"
        key = _checked_host(host, source=where)
        if key in first_line:
            raise InvalidTopologyError(
                f"{where}: host {key!r} already appears on line {first_line[key]}"
            )
        first_line[key] = number
        table[key] = checked_location(location, what=f"{where}: host {key!r}")
    return table


def _text_rows(path: Path, lines: list[tuple[int, str]]) -> Iterator[tuple[int, str, str]]:
    for number, line in lines:
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            raise InvalidTopologyError(
                f"{path}:{number}: expected 'host location', got {line.strip()!r}"
            )
        yield number, fields[0], fields[1]


def _csv_rows(path: Path, lines: list[tuple[int, str]]) -> Iterator[tuple[int, str, str]]:
    # One row per line: hosts and locations never need quoted line breaks, and parsing each
    # line alone keeps the line numbers in error messages right.
    header = [name.strip().lower() for name in _csv_fields(lines[0][1])] if lines else []
    if "host" not in header or "location" not in header:
        raise ResolverError(
            f"rack table {path} needs a header row with 'host' and 'location' columns, got {header}"
        )
    host_at, location_at = header.index("host"), header.index("location")
    for number, line in lines[1:]:
        row = _csv_fields(line)
        if len(row) <= max(host_at, location_at):
            raise InvalidTopologyError(
                f"{path}:{number}: expected {len(header)} columns, got {line.strip()!r}"
            )
        yield number, row[host_at], row[location_at]


def _csv_fields(line: str) -> list[str]:
    return next(csv.reader([line]), [])
