"""Read input tables (CSV, JSON-lines, Parquet; a file or a directory) row by row, losing nothing.

Every input of trimtab — the inventory, node and bundle metrics, allocation requests — is a
table with named columns. This module turns a path into raw rows that keep their origin
(file and line), checks the columns once per file, and collects rows a parser refuses as
:class:`~trimtab.contract.RejectedRow` values with a reason. A file that cannot be used at all
raises :class:`~trimtab.errors.InputError` naming the table, the path and the fix.

Formats are chosen by suffix: ``.csv``; ``.jsonl``, ``.ndjson`` or ``.json`` (one object per
line, or one array of objects, as most tools export a table); ``.parquet`` or ``.pq``. A
directory is read file by file in name order. Text files are
UTF-8, with or without a byte-order mark (as Excel writes them); any other encoding, and a binary
file, is refused naming the file and the line of the first bad byte.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from trimtab.config.settings import nearest
from trimtab.contract import RejectedRow, RowError, Table, settle_repeats
from trimtab.errors import InputError
from trimtab.readers.sniff import raw_kind, seems_to_be
from trimtab.readers.special_files import refuse_special

__all__ = [
    "Parsed",
    "RawRow",
    "TableSpec",
    "parse_table",
    "read_table",
    "refuse_repeats",
]

T = TypeVar("T")

_SUFFIXES = {".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json"}
_SUFFIXES |= {".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True, slots=True)
class TableSpec:
    """A table's name (for messages) and its columns."""

    name: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @classmethod
    def of(cls, table: Table) -> TableSpec:
        """The columns of a table of :mod:`trimtab.contract`."""
        return cls(table.label, table.required, table.optional_columns)


@dataclass(frozen=True, slots=True)
class RawRow:
    """One input row as read, with its origin; ``data`` is None for a line that is not a row."""

    source: str
    line: int
    data: Mapping[str, Any] | None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    """Rows a parser accepted (each with the raw row it came from), rows refused, warnings."""

    accepted: list[tuple[T, RawRow]]
    rejected: list[RejectedRow]
    rows_read: int
    warnings: list[str]


def read_table(path: str | Path, spec: TableSpec) -> tuple[list[RawRow], list[str]]:
    """All rows of the table at ``path`` and warnings about unused columns."""
    rows: list[RawRow] = []
    warnings: list[str] = []
    for file in _files(Path(path), spec):
        file_rows, columns = _read_rows(file, spec)
        _check_columns(file, columns, spec, warnings)
        rows.extend(file_rows)
    if not rows:
        raise InputError(
            f"{spec.name} {path} has no rows: add rows with columns " + ", ".join(spec.required)
        )
    return rows, warnings


def parse_table(
    path: str | Path, spec: TableSpec, parse: Callable[[Mapping[str, Any]], T]
) -> Parsed[T]:
    """Read the table and run ``parse`` on each row; a ``ValueError`` rejects the row with its
    message as the reason (and a :class:`~trimtab.contract.RowError` with its rule).
    ``rows_read == len(accepted) + len(rejected)`` always holds."""
    raw_rows, warnings = read_table(path, spec)
    accepted: list[tuple[T, RawRow]] = []
    rejected: list[RejectedRow] = []
    for raw in raw_rows:
        if raw.data is None:
            kept = {"_raw": raw.text}
            reason = "not a JSON object"
            rejected.append(RejectedRow(raw.source, raw.line, reason, kept, "malformed"))
            continue
        try:
            accepted.append((parse(raw.data), raw))
        except ValueError as exc:
            rule = exc.rule if isinstance(exc, RowError) else ""
            rejected.append(RejectedRow(raw.source, raw.line, str(exc), raw.data, rule))
    return Parsed(accepted, rejected, len(raw_rows), warnings)


def _files(path: Path, spec: TableSpec) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in _SUFFIXES)
        if not files:
            raise InputError(
                f"{spec.name} directory {path} holds no .csv, .jsonl or .parquet files. "
                f"{_make(spec)}"
            )
        for file in files:  # every one before any is opened: a FIFO would block the read
            refuse_special(spec.name, file)
        return files
    refuse_special(spec.name, path)
    if not path.exists():
        raise InputError(f"{spec.name} {path} does not exist: give a file or a directory")
    if path.suffix.lower() not in _SUFFIXES:
        raise InputError(
            f"{spec.name} {path}: unknown format {path.suffix!r}, not a .csv, .jsonl or "
            f".parquet table{_kind_of(path, every=True)}. {_make(spec)}"
        )
    return [path]


def _make(spec: TableSpec) -> str:
    """How to make the table ``spec`` names: the command for an inventory, else its header."""
    if spec.name == "inventory":
        return (
            "Make one with: trimtab inventory --bootstrap-servers HOST:9092 (or --zk, "
            "--pulsar-admin, --load-reports) -o nodes.csv"
        )
    return f"Give a CSV whose header has {','.join(spec.required)}"


def _read_rows(file: Path, spec: TableSpec) -> tuple[list[RawRow], list[str]]:
    kind = _SUFFIXES[file.suffix.lower()]
    if kind == "csv":
        rows, columns = _csv_rows(file, _text(file, spec), spec)
    elif kind == "json":
        rows, columns = _json_rows(_text(file, spec), file, spec)
    else:
        rows, columns = _parquet_rows(file, spec)
    source = str(file)
    return [
        RawRow(source, line, None, raw) if isinstance(raw, str) else RawRow(source, line, raw)
        for line, raw in rows
    ], columns


def _text(file: Path, spec: TableSpec) -> str:
    """The file's text: UTF-8, a leading byte-order mark dropped; anything else is refused."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"{spec.name} {file} cannot be read: {exc.strerror}") from None
    kind = raw_kind(data) if data.strip() else None
    if kind is not None and not kind.startswith("binary data"):  # UTF-16, an archive
        raise InputError(
            f"{spec.name} {file} is not a .csv, .jsonl or .parquet table: it is {kind}. "
            f"{_make(spec)}"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{spec.name} {file} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line "
            f"{line}): save it as UTF-8 (CSV UTF-8 in Excel) or give a .parquet file"
        ) from None
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise InputError(
            f"{spec.name} {file} is a binary file, not text (a NUL byte on line {line}): "
            f"give a .csv, .jsonl or .parquet table. {_make(spec)}"
        )
    return text


def _csv_rows(
    file: Path, text: str, spec: TableSpec
) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    rows: list[tuple[int, Any]] = []
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        columns = [c.strip() for c in (reader.fieldnames or [])]
        start = 2  # line 1 is the header
        for record in reader:
            row: dict[str, Any] = {k.strip(): v for k, v in record.items() if k is not None}
            if None in record:
                row["_extra"] = record[None]
            if any(v is None for v in record.values()):  # csv's filler for a missing field
                row["_short"] = True
            rows.append((start, row))
            start = reader.line_num + 1
    except csv.Error as exc:  # e.g. a field larger than csv's limit
        raise InputError(
            f"{spec.name} {file} line {reader.line_num}: not a CSV row ({exc})"
        ) from None
    return iter(rows), columns


def _json_rows(
    text: str, file: Path, spec: TableSpec
) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    """Rows of a JSON file: an array of objects (as most tools export), or one object per
    line (JSON lines). Each row keeps the line it starts on."""
    if text.lstrip().startswith("["):
        return _json_array_rows(text, file, spec)
    lines = text.splitlines()
    if sum(1 for line in lines if line.strip()) > 1 and _one_object(text):
        guess = seems_to_be(text)
        seems = f": it seems to be {guess}" if guess else ""
        raise InputError(
            f"{spec.name} {file} is one JSON document over many lines, not a table{seems}. "
            "Give one object per line (JSON lines) or an array of row objects"
        )
    parsed: list[tuple[int, Any]] = []
    columns: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            obj = line
        if isinstance(obj, dict):
            columns.update(obj)
        else:
            obj = line
        parsed.append((number, obj))
    # A JSON-lines file's "columns" are those any row has; rows lacking one are rejected per row.
    return iter(parsed), sorted(columns) if parsed else []


def _json_array_rows(
    text: str, file: Path, spec: TableSpec
) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    """The elements of a JSON array, each with the line it starts on; an element that is not
    an object is a row refused as malformed, an array that does not parse is an error."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    parsed: list[tuple[int, Any]] = []
    columns: set[str] = set()
    while True:
        pos = _skip_space(text, pos)
        if pos < len(text) and text[pos] == "]":
            break
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InputError(
                f"{spec.name} {file} line {line}: not a JSON array of objects ({exc}); give an "
                "array of row objects or one object per line (JSON lines)"
            ) from None
        if isinstance(obj, dict):
            columns.update(obj)
            parsed.append((line, obj))
        else:
            parsed.append((line, json.dumps(obj)))
        pos = _skip_space(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos >= len(text) or text[pos] != "]":
            line = text.count("\n", 0, pos) + 1
            raise InputError(
                f"{spec.name} {file} line {line}: not a JSON array of objects (expected ',' or "
                "']'); give an array of row objects or one object per line (JSON lines)"
            )
    if text[pos + 1 :].strip():
        raise InputError(f"{spec.name} {file}: text after the end of the JSON array")
    return iter(parsed), sorted(columns) if parsed else []


def _one_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _parquet_rows(file: Path, spec: TableSpec) -> tuple[Iterator[tuple[int, Any]], list[str]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise InputError(f"{spec.name} {file} is not a readable Parquet file: {exc}") from None
    rows = table.to_pylist()
    return iter(enumerate(rows, start=1)), list(table.column_names)


def _check_columns(file: Path, columns: list[str], spec: TableSpec, warnings: list[str]) -> None:
    if not columns:
        return  # an empty file: counted as zero rows
    missing = [c for c in spec.required if c not in columns]
    if missing:
        raise InputError(
            f"{spec.name} {file} lacks required column(s) {', '.join(missing)}; "
            f"it has {', '.join(columns)}{_kind_of(file)}. Required: {', '.join(spec.required)}"
        )
    known = list(spec.required + spec.optional)
    for column in columns:
        if column not in known:
            hint = nearest(column, known)
            suffix = f" (did you mean '{hint}'?)" if hint else ""
            warnings.append(f"{file}: column '{column}' is not used{suffix}")


def _kind_of(file: Path, every: bool = False) -> str:
    """`` (it seems to be …)`` for a text file of a kind :mod:`~trimtab.readers.sniff` knows
    but that is no table of this name; empty otherwise."""
    if file.suffix.lower() in (".parquet", ".pq"):
        return ""
    try:
        with file.open("rb") as handle:
            data = handle.read(65536)
    except OSError:
        return ""
    guess = raw_kind(data) if every else None
    guess = guess or seems_to_be(data.decode("utf-8-sig", errors="replace"))
    if not guess or (guess.startswith("a CSV table") and not every):
        return ""
    return f" (it seems to be {guess})"


def refuse_repeats(
    parsed: Parsed[T], key: Callable[[T], Hashable], name: Callable[[Any], str]
) -> Parsed[T]:
    """``parsed`` with rows sharing a ``key`` settled by the ``duplicate``/``conflict`` rule of
    :mod:`trimtab.contract.repeats` (the values compared are the parsed rows); ``name(key)``
    names the key in reasons."""
    keyed = [(key(row), row, f"{raw.source}:{raw.line}") for row, raw in parsed.accepted]
    verdicts = settle_repeats(keyed, name)
    if not verdicts:
        return parsed
    kept = [pair for i, pair in enumerate(parsed.accepted) if i not in verdicts]
    refused = [
        RejectedRow(raw.source, raw.line, str(verdicts[i]), raw.data or {}, verdicts[i].rule)
        for i, (_, raw) in enumerate(parsed.accepted)
        if i in verdicts
    ]
    rejected = sorted([*parsed.rejected, *refused], key=lambda r: (r.source, r.line))
    return Parsed(kept, rejected, parsed.rows_read, parsed.warnings)
