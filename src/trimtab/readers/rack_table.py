"""Read a rack table file: the host -> location table of :class:`~trimtab.topology.TableResolver`.

File formats (one per file, chosen by the suffix):

* ``*.csv``: a header row with the columns ``host`` and ``location`` (others are ignored)::

      host,location
      bk1.dc1,/dc1/r1

* anything else: ``host location`` per line, separated by whitespace::

      bk1.dc1  /dc1/r1   # text after '#' is a comment

In both, blank lines and lines starting with ``#`` are skipped. A host may appear once; a bad
location is an :class:`~trimtab.errors.InvalidTopologyError` naming the file, the line and the
host, because a table someone wrote by hand should fail loudly rather than send nodes to the
default rack. A file that cannot be read, or a CSV without the two columns, is a
:class:`~trimtab.errors.ResolverError` (the resolver cannot start).

Example::

    resolver = TableResolver(file=RackTableFile(Path("racks.txt")))
    resolver.reload()  # re-reads the file and tells listeners what moved
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trimtab.errors import InvalidTopologyError, ResolverError
from trimtab.readers.special_files import special_kind
from trimtab.topology._common import checked_host, checked_location

__all__ = ["RackTableFile", "read_rack_table"]


@dataclass(frozen=True, slots=True)
class RackTableFile:
    """A rack table file, read (and re-read) by the resolver it is given to."""

    path: Path

    def read(self) -> dict[str, str]:
        """Every entry of the file, host -> location (see the module docstring)."""
        return read_rack_table(self.path)


def read_rack_table(path: Path) -> dict[str, str]:
    """The table in ``path``, host -> location, every entry checked."""
    if (kind := special_kind(path)) is not None:
        raise ResolverError(f"cannot read rack table {path}: it is {kind}, not a regular file")
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
        key = checked_host(host, source=where)
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
