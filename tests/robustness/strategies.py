"""Hypothesis strategies for the fuzzing campaign: input files and option values as an unlucky
user hands them over.

Every table starts as a small valid table (a cluster trimtab can decide on) and gets a few
faults: cells replaced by blanks, garbage, NaN, infinities, huge or negative numbers; columns
dropped, renamed or added; rows duplicated, some with conflicting values; timestamps far in
the future or the past. The file is then written as CSV, JSON-lines or Parquet, and the bytes
are spoiled last: a BOM, Latin-1 or UTF-16 instead of UTF-8, a truncated file, an empty one,
or binary junk. A :class:`FileCase` says what was done, so a failure names its input.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "BASE_TS",
    "NUMERIC_OPTION_VALUES",
    "FileCase",
    "bad_cells",
    "bad_timestamps",
    "config_files",
    "csv_file",
    "csv_text",
    "existing_files",
    "jsonl_text",
    "numbered_nodes",
    "option_values",
    "parquet_bytes",
    "registry_rows",
    "run_outputs",
    "small_disks",
    "table_files",
    "valid_rows",
]

#: The valid tables' sample time (2026-11-01T00:00:00Z); the campaign runs with --now after it.
BASE_TS = 1_793_491_200
CLUSTER = "c1"
NODES = tuple(f"n{i}.r{i % 2}:3181" for i in range(1, 6))
BUNDLES = tuple(f"acme/ns{i % 2}/0x{i:08x}_0x{i + 1:08x}" for i in range(6))

Row = dict[str, Any]


@dataclass(frozen=True)
class FileCase:
    """One input file: its name (the suffix picks the reader), its bytes and the faults in it."""

    name: str
    data: bytes
    faults: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        head = self.data[:120]
        return f"FileCase({self.name!r}, faults={list(self.faults)}, {len(self.data)} B: {head!r})"


def _nodes() -> list[Row]:
    rows = []
    for i, node in enumerate(NODES):
        rows.append(
            {
                "cluster": CLUSTER,
                "node": node,
                "region": f"dc{i % 2}",
                "rack": f"rack{i % 3}",
                "cores": 8 * (1 + i % 3),
                "memory_bytes": 34_359_738_368,
                "disk_total_bytes": 4_000_000_000_000,
                "disk_free_bytes": 1_000_000_000_000 + i * 500_000_000_000,
                "nic_bps": 10_000_000_000,
                "state": "writable",
                "role": "",
            }
        )
    return rows


def _node_metrics() -> list[Row]:
    rows = []
    for step in range(2):
        for i, node in enumerate(NODES):
            rows.append(
                {
                    "ts": BASE_TS + 60 * step,
                    "cluster": CLUSTER,
                    "node": node,
                    "cpu": round(0.15 * (i + 1), 2),
                    "memory": 0.4,
                    "direct_memory": 0.2,
                    "net_in_bps": 100_000_000 * (i + 1),
                    "net_out_bps": 100_000_000 * (i + 1),
                    "msg_in_per_s": 1000 * (i + 1),
                    "msg_out_per_s": 1000 * (i + 1),
                    "throughput_in_bytes_per_s": 10_000_000 * (i + 1),
                    "throughput_out_bytes_per_s": 10_000_000 * (i + 1),
                    "disk_free_bytes": 1_000_000_000_000,
                    "disk_total_bytes": 4_000_000_000_000,
                }
            )
    return rows


def _bundle_metrics() -> list[Row]:
    return [
        {
            "ts": BASE_TS + 60,
            "cluster": CLUSTER,
            "bundle": bundle,
            "broker": NODES[-1 if i < 4 else i % 3],
            "msg_in_per_s": 500 * (i + 1),
            "msg_out_per_s": 500 * (i + 1),
            "throughput_in_bytes_per_s": 5_000_000 * (i + 1),
            "throughput_out_bytes_per_s": 5_000_000 * (i + 1),
            "storage_bytes": 10_000_000_000,
        }
        for i, bundle in enumerate(BUNDLES)
    ]


def _requests() -> list[Row]:
    return [
        {"cluster": CLUSTER, "topic": "orders", "partitions": 6, "replication_factor": 3},
        {"cluster": "", "topic": "clicks", "partitions": 4, "replication_factor": 2},
    ]


def registry_rows(ports: Sequence[int]) -> list[Row]:
    """Registry rows whose ids and addresses are loopback ports nobody listens on."""
    states = ("writable", "readonly", "writable", "down")
    return [
        {"id": f"127.0.0.1:{port}", "state": states[i % len(states)], "address": ""}
        for i, port in enumerate(ports)
    ]


_VALID: dict[str, Callable[[], list[Row]]] = {
    "nodes": _nodes,
    "node_metrics": _node_metrics,
    "bundle_metrics": _bundle_metrics,
    "allocation_requests": _requests,
}


def valid_rows(table: str) -> list[Row]:
    """The valid rows of ``table`` (fresh copies) the faults start from."""
    return _VALID[table]()


_NUMBERS: tuple[Any, ...] = (
    math.nan,
    math.inf,
    -math.inf,
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    1e308,
    -1e308,
    1.7976931348623157e308,
    "1e309",
    99_999_999_999_999_999_999,
    2**63,
    -(2**63) - 1,
    1e29,
    1e32,
    -1,
    -0.0,
    0,
    0.5,
    1e-320,
    "0x10",
    "1_000",
    " 12 ",
    "12.0.1",
)
_TEXTS: tuple[str, ...] = (
    "",
    " ",
    "null",
    "None",
    "true",
    "écrit",
    "\x00\x01\x1b[31m",
    "a,b",
    '"quoted"',
    "line\nbreak",
    "\u202eevil",
    "x" * 300,
)


def bad_cells(*, controls: bool = True) -> st.SearchStrategy[Any]:
    """A value no column should take silently: blanks, garbage, NaN, infinities, huge numbers
    (and, with ``controls``, text holding control characters)."""
    texts = _TEXTS if controls else tuple(t for t in _TEXTS if not _has_control(t))
    chars = (
        st.characters(exclude_categories=["Cs"])
        if controls
        else st.characters(exclude_categories=["Cs", "Cc"])
    )
    return st.one_of(
        st.sampled_from(_NUMBERS),
        st.sampled_from(texts),
        st.text(chars, max_size=12),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(2**70), max_value=2**70),
    )


def _has_control(text: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)


def bad_timestamps() -> st.SearchStrategy[Any]:
    """Timestamps a clock would not give: far future, epoch 0 and before, milliseconds, nonsense."""
    return st.sampled_from(
        (
            4_102_444_800,  # 2100-01-01
            "2100-01-01T00:00:00Z",
            0,
            -1,
            -62_135_596_800,  # year 1
            BASE_TS * 1000,  # milliseconds, read as seconds
            1e308,
            "nan",
            "2026-13-45T25:61:00Z",
            "2026-11-01",
            "2026-11-01T00:00:00+14:00",
            "yesterday",
            "",
        )
    )


# -- row faults -----------------------------------------------------------------------------


@st.composite
def _fault_cell(draw: st.DrawFn, rows: list[Row], *, controls: bool = True) -> str:
    row = draw(st.integers(0, len(rows) - 1))
    column = draw(st.sampled_from(sorted(rows[row])))
    value = draw(bad_timestamps() if column == "ts" else bad_cells(controls=controls))
    rows[row][column] = value
    return f"row {row} {column}={value!r}"


@st.composite
def _fault_drop_column(draw: st.DrawFn, rows: list[Row]) -> str:
    column = draw(st.sampled_from(sorted(rows[0])))
    for row in rows:
        row.pop(column, None)
    return f"no column {column}"


@st.composite
def _fault_extra_column(draw: st.DrawFn, rows: list[Row]) -> str:
    name = draw(st.sampled_from(("extra", "Cluster", "cpu ", "", "nodes", "ts2")))
    for row in rows:
        row[name] = draw(st.sampled_from(("x", "", 1)))
    return f"extra column {name!r}"


@st.composite
def _fault_duplicate(draw: st.DrawFn, rows: list[Row]) -> str:
    """A second row for the same key: an exact copy, or one whose values conflict."""
    row = draw(st.integers(0, len(rows) - 1))
    copy = dict(rows[row])
    keys = {"cluster", "node", "bundle", "broker", "topic", "ts", "id"}
    values = sorted(c for c in copy if c not in keys)
    conflict = draw(st.booleans())
    if values and conflict:
        column = draw(st.sampled_from(values))
        copy[column] = draw(st.sampled_from((0, 1, 0.99, "readonly", "down", 7, "broker")))
        fault = f"row {row} again with {column}={copy[column]!r}"
    else:
        fault = f"row {row} twice"
    rows.insert(draw(st.integers(0, len(rows))), copy)
    return fault


@st.composite
def _fault_timestamp(draw: st.DrawFn, rows: list[Row]) -> str:
    with_ts = [i for i, r in enumerate(rows) if "ts" in r]
    if not with_ts:
        return "no ts to spoil"
    row = draw(st.sampled_from(with_ts))
    rows[row]["ts"] = draw(bad_timestamps())
    return f"row {row} ts={rows[row]['ts']!r}"


@st.composite
def _fault_remove_rows(draw: st.DrawFn, rows: list[Row]) -> str:
    keep = draw(st.integers(0, max(0, len(rows) - 1)))
    del rows[keep:]
    return f"only {keep} row(s)"


def _fault_clean_cell(rows: list[Row]) -> st.SearchStrategy[str]:
    return _fault_cell(rows, controls=False)


_ROW_FAULTS = (
    _fault_cell,
    _fault_clean_cell,
    _fault_drop_column,
    _fault_extra_column,
    _fault_duplicate,
    _fault_timestamp,
    _fault_remove_rows,
)


# -- serialisation and byte faults ---------------------------------------------------------


def csv_text(rows: list[Row]) -> str:
    columns: list[str] = []
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else row.get(c, "") for c in columns])
    return buffer.getvalue()


def jsonl_text(rows: list[Row]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)  # NaN, Infinity as Python writes


def parquet_bytes(rows: list[Row]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowException, OverflowError):  # mixed types in a column: all as text
        table = pa.Table.from_pylist([{k: str(v) for k, v in row.items()} for row in rows])
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


_ENCODINGS = ("utf-8", "utf-8", "utf-8", "utf-8-sig", "latin-1", "utf-16", "cp1252")


@st.composite
def _encoded(draw: st.DrawFn, text: str) -> tuple[bytes, str]:
    encoding = draw(st.sampled_from(_ENCODINGS))
    if encoding in ("latin-1", "cp1252"):
        # A name with an accent, as an export from a spreadsheet writes it in Latin-1.
        text = text.replace(CLUSTER, "zürich-c1", 1) if CLUSTER in text else text + "é\n"
    data = text.encode(encoding, errors="replace")
    return data, encoding


@st.composite
def _spoiled(draw: st.DrawFn, data: bytes) -> tuple[bytes, str | None]:
    """The bytes, sometimes spoiled as a broken copy or a wrong file would be."""
    kind = draw(st.sampled_from(("none",) * 6 + ("truncate", "junk", "empty", "nul", "ctrl")))
    if kind == "truncate" and data:
        cut = draw(st.integers(0, len(data) - 1))
        return data[:cut], f"truncated at byte {cut}"
    if kind == "junk":
        return draw(st.binary(min_size=1, max_size=200)), "binary junk"
    if kind == "empty":
        return b"", "empty file"
    if kind == "nul":
        at = draw(st.integers(0, len(data)))
        return data[:at] + b"\x00\x00" + data[at:], f"NUL bytes at {at}"
    if kind == "ctrl":
        return b"\x1b[2J\x07\x08" + data, "terminal control bytes first"
    return data, None


@st.composite
def rows_with_faults(
    draw: st.DrawFn, rows: list[Row], *, max_faults: int = 3, controls: bool = True
) -> tuple[list[Row], list[str]]:
    """``rows`` with up to ``max_faults`` row faults applied (in place), and their descriptions;
    without ``controls`` no cell gets a control character."""
    faults = []
    kinds = _ROW_FAULTS if controls else tuple(f for f in _ROW_FAULTS if f is not _fault_cell)
    for _ in range(draw(st.integers(0, max_faults))):
        if not rows:
            break
        fault = draw(st.sampled_from(kinds))
        faults.append(draw(fault(rows)))
    return rows, faults


@st.composite
def table_files(
    draw: st.DrawFn,
    table: str,
    *,
    rows: Callable[[], list[Row]] | None = None,
    stem: str | None = None,
    formats: Sequence[str] = ("csv", "csv", "jsonl", "parquet"),
    raw: bool = True,
) -> FileCase:
    """A malformed file of ``table`` (``rows`` gives its valid rows; default: :func:`valid_rows`).

    With ``raw`` the bytes are spoilt too (encodings, BOM, junk, truncation, control
    characters); without, the file is clean UTF-8 and only its rows are wrong.
    """
    base = rows() if rows is not None else valid_rows(table)
    spoilt, faults = draw(rows_with_faults(base, controls=raw))
    fmt = draw(st.sampled_from(formats))
    if fmt == "parquet":
        if not spoilt:
            spoilt = [{"cluster": CLUSTER}]
            faults.append("one row of cluster only")
        data = parquet_bytes(spoilt)
    else:
        text = csv_text(spoilt) if fmt == "csv" else jsonl_text(spoilt)
        data, encoding = draw(_encoded(text)) if raw else (text.encode(), "utf-8")
        if encoding != "utf-8":
            faults.append(f"encoded {encoding}")
    if raw:
        data, spoiled = draw(_spoiled(data))
        faults.extend([spoiled] if spoiled else [])
    return FileCase(f"{stem or table}.{fmt}", data, tuple(faults))


# -- other files --------------------------------------------------------------------------


_CONFIG_LINES = (
    "ensemblePlacementPolicy=rackaware",
    "minNumRacksPerWriteQuorum=2",
    "diskWeightBasedPlacementEnabled=true",
    "bookieMaxMultipleForWeightBasedPlacement=3",
    "loadBalancerBrokerLoadTargetStd=0.25",
    "getBookieInfoTimeoutSecs=5",
    "topic_partitions_per_shard=1000",
)
_CONFIG_VALUES = (
    "nan",
    "inf",
    "-1",
    "0",
    "1e308",
    "99999999999999999999",
    "",
    "yes",
    "garbage",
    "org.apache.bookkeeper.client.ZoneawareEnsemblePlacementPolicy",
    "\x00",
    "é",
)


@st.composite
def config_files(draw: st.DrawFn, *, raw: bool = True) -> FileCase:
    """A ``.conf`` (properties) or ``.toml`` file with bad values, unknown keys, other
    encodings; with ``raw`` also control characters, junk and truncated bytes."""
    values = _CONFIG_VALUES if raw else tuple(v for v in _CONFIG_VALUES if not _has_control(v))
    lines = list(_CONFIG_LINES)
    faults: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        key = lines[i].split("=", 1)[0]
        choice = draw(st.sampled_from(("value", "unknown", "nokey", "novalue")))
        if choice == "value":
            lines[i] = f"{key}={draw(st.sampled_from(values))}"
        elif choice == "unknown":
            lines[i] = key.rstrip("ed") + "=1"
        elif choice == "nokey":
            lines[i] = "=" + lines[i].partition("=")[2]
        else:
            lines[i] = key
        faults.append(f"line {i + 1}: {lines[i]!r}")
    toml = draw(st.booleans())
    if toml:
        text = "[placement]\n" + "".join(_toml_line(line) for line in lines)
    else:
        text = "".join(line + "\n" for line in lines)
    data, encoding = draw(_encoded(text))
    if encoding != "utf-8":
        faults.append(f"encoded {encoding}")
    if raw:
        data, spoiled = draw(_spoiled(data))
        faults.extend([spoiled] if spoiled else [])
    return FileCase("trimtab.toml" if toml else "bk_server.conf", data, tuple(faults))


def _toml_line(line: str) -> str:
    key, sep, value = line.partition("=")
    if not sep:
        return key + "\n"
    try:
        float(value)
    except ValueError:
        value = json.dumps(value)
    return f"{key} = {value}\n"


@st.composite
def existing_files(draw: st.DrawFn, brokers: int, *, raw: bool = True) -> FileCase:
    """A Kafka reassignment JSON for ``allocate --existing``: sometimes right, mostly not;
    with ``raw`` its bytes may be junk, truncated or control characters too."""
    ids = list(range(1, brokers + 1))
    doc: Any = {
        "version": 1,
        "partitions": [
            {"topic": "orders", "partition": p, "replicas": [ids[p % len(ids)], ids[-1]]}
            for p in range(3)
        ],
    }
    fault = draw(
        st.sampled_from(
            (
                "none",
                "version 2",
                "a list",
                "a string replica",
                "unknown broker",
                "negative partition",
                "huge partition",
                "replica twice",
                "no partitions",
                "null",
            )
        )
    )
    if fault == "version 2":
        doc["version"] = 2
    elif fault == "a list":
        doc = doc["partitions"]
    elif fault == "a string replica":
        doc["partitions"][0]["replicas"] = ["1", 2]
    elif fault == "unknown broker":
        doc["partitions"][0]["replicas"] = [99]
    elif fault == "negative partition":
        doc["partitions"][0]["partition"] = -1
    elif fault == "huge partition":
        doc["partitions"][0]["partition"] = 2**70
    elif fault == "replica twice":
        doc["partitions"][0]["replicas"] = [1, 1]
    elif fault == "no partitions":
        doc["partitions"] = []
    elif fault == "null":
        doc = None
    data, spoiled = json.dumps(doc).encode(), None
    if raw:
        data, spoiled = draw(_spoiled(data))
    faults = (fault,) if spoiled is None else (fault, spoiled)
    return FileCase("existing.json", data, faults)


#: Option values no count, size, time-out or seed should take silently.
NUMERIC_OPTION_VALUES = (
    "-1",
    "0",
    "1",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "99999999999999999999",
    "-99999999999999999999",
    "2.5",
    "abc",
    "",
    "0x10",
    "1_000",
)


def option_values() -> st.SearchStrategy[str]:
    """A value typed for a numeric option: negative, zero, huge, nan/inf, garbage text."""
    return st.one_of(
        st.sampled_from(NUMERIC_OPTION_VALUES),
        st.integers(-(2**70), 2**70).map(str),
        st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8),
    )


def small_disks() -> list[Row]:
    """The valid inventory with 100 GB disks: a disk-fill simulation of it takes a moment."""
    rows = _nodes()
    for row in rows:
        row["disk_total_bytes"] = 100_000_000_000
        row["disk_free_bytes"] = 60_000_000_000
    return rows


def numbered_nodes() -> list[Row]:
    """The valid inventory with Kafka broker ids as node ids (``allocate --existing`` maps them)."""
    rows = _nodes()
    for i, row in enumerate(rows, start=1):
        row["node"] = str(i)
    return rows


@st.composite
def run_outputs(draw: st.DrawFn) -> list[FileCase]:
    """A pipeline output directory for ``trimtab report``: run.json and tables, some spoilt."""
    run: Any = {
        "tables": {"nodes": {"read": 5, "accepted": 5, "quarantined": 0}},
        "quarantine_by_rule": {},
        "clusters": {CLUSTER: {"nodes": 5, "std_before": 0.2, "std_after": 0.1, "transfers": 1}},
    }
    fault = draw(
        st.sampled_from(
            ("none", "a list", "null", "NaN std", "no clusters", "string counts", "not json")
        )
    )
    if fault == "a list":
        run = [run]
    elif fault == "null":
        run = None
    elif fault == "NaN std":
        run["clusters"][CLUSTER]["std_after"] = math.nan
    elif fault == "no clusters":
        del run["clusters"]
    elif fault == "string counts":
        run["tables"]["nodes"]["read"] = "five"
    text = "{not json" if fault == "not json" else json.dumps(run)
    data, spoiled = draw(_spoiled(text.encode()))
    files = [FileCase("run.json", data, (fault,) if spoiled is None else (fault, spoiled))]
    for table in draw(st.lists(st.sampled_from(("node_load", "inventory", "quarantine")))):
        junk = draw(st.binary(max_size=64))
        files.append(FileCase(f"{table}/part-0.parquet", junk, ("junk Parquet",)))
    return files


def csv_file(table: str, rows: Callable[[], list[Row]] | None = None) -> FileCase:
    """The valid file of ``table`` (UTF-8 CSV), for the inputs a test does not spoil."""
    return FileCase(f"{table}.csv", csv_text(rows() if rows else valid_rows(table)).encode())
