"""Inventory files: every format, every row rule, and conservation of rows."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trimtab.cluster import NodeState
from trimtab.errors import InputError
from trimtab.readers.inventory import REQUIRED_COLUMNS, read_inventory

HEADER = (
    "cluster,node,region,rack,cores,memory_bytes,disk_total_bytes,disk_free_bytes,nic_bps,state"
)
GOOD = "c1,bk1:3181,dc1,r1,8,68719476736,4000000000000,1000000000000,10000000000,writable"


def write_csv(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "nodes.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_reads_a_good_csv_into_clusters(tmp_path: Path) -> None:
    """Rows become nodes grouped by cluster, with location from region and rack."""
    inv = read_inventory(
        write_csv(
            tmp_path,
            GOOD,
            "c1,bk2:3181,,,16,68719476736,8000000000000,,10000000000,readonly",
            "c2,b1:8080,eu,r9,4,68719476736,1000000000000,1,10000000000,down",
        )
    )
    assert sorted(inv.clusters) == ["c1", "c2"] and inv.rejected == ()
    bk2 = inv.clusters["c1"].node("bk2:3181")
    assert bk2.location == "/default-region/default-rack"
    assert bk2.state is NodeState.READONLY and bk2.capacity.disk_free_bytes is None
    assert inv.clusters["c1"].node("bk1:3181").location == "/dc1/r1"
    assert (inv.rows_read, inv.accepted) == (3, 3)


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (
            ",bk9:3181,dc1,r1,8,68719476736,4000000000000,1000000000000,10000000000,writable",
            "missing cluster",
        ),
        (
            "c1,,dc1,r1,8,68719476736,4000000000000,1000000000000,10000000000,writable",
            "missing node",
        ),
        (
            "c1,bk 9:3181,dc1,r1,8,68719476736,4000000000000,1000000000000,10000000000,writable",
            "bad node id",
        ),
        (
            "c1,bk9:3181,dc1,r1,eight,68719476736,4000000000000,1000000000000,10000000000,writable",
            "cores must be a whole number",
        ),
        (
            "c1,bk9:3181,dc1,r1,0,68719476736,4000000000000,1000000000000,10000000000,writable",
            "cores must be above 0",
        ),
        (
            "c1,bk9:3181,dc1,r1,8,68719476736,-4000,0,10000000000,writable",
            "disk_total_bytes must be 0 or more",
        ),
        (
            "c1,bk9:3181,dc1,r1,8,68719476736,4000000000000,5000000000000,10000000000,writable",
            "disk_free_bytes 5000000000000 is above",
        ),
        (
            "c1,bk9:3181,dc1,r1,8,68719476736,4000000000000,1000000000000,10000000000,draining",
            "bad state 'draining'",
        ),
        (
            "c1,bk9:3181,dc1,r1,8,68719476736,4000000000000,1000000000000,10000000000,",
            "missing state",
        ),
        (
            "c1,bk9:3181,dc1,r1/a,8,68719476736,4000000000000,1000000000000,10000000000,writable",
            "must not contain '/'",
        ),
        (
            "c1,bk9:3181,dc1,r1,8.5,68719476736,4000000000000,1000000000000,10000000000,writable",
            "cores must be a whole number",
        ),
        (
            "c1,bk9:3181,dc1,r1,8,68719476736,4000000000000,1000000000000,10000000000,writable,extra",
            "more fields than the header",
        ),
        (GOOD, "an exact duplicate of an earlier row for node bk1:3181 of cluster 'c1'"),
    ],
    ids=lambda v: v if " " in v else None,
)
def test_each_bad_row_is_rejected_with_file_line_and_reason(
    tmp_path: Path, row: str, reason: str
) -> None:
    """A row breaking one rule is rejected whole, with where it was and why; others stay."""
    path = write_csv(tmp_path, GOOD, row)
    inv = read_inventory(path)
    assert len(inv.rejected) == 1
    rejected = inv.rejected[0]
    assert (rejected.source, rejected.line) == (str(path), 3)
    assert reason in rejected.reason
    assert inv.rows_read == inv.accepted + len(inv.rejected) == 2
    assert "bk1:3181" in inv.clusters["c1"]


def test_line_numbers_follow_quoted_multiline_fields(tmp_path: Path) -> None:
    """A quoted field spanning lines does not shift the line numbers of later rows."""
    path = write_csv(
        tmp_path,
        'c1,bk1:3181,dc1,"r1",8,68719476736,4000000000000,1000000000000,10000000000,"writable"',
        'c1,"bk\n2",dc1,r1,8,1,1,1,1,writable',
        "c1,bk3:3181,dc1,r1,x,1,1,1,1,writable",
    )
    inv = read_inventory(path)
    assert [r.line for r in inv.rejected] == [3, 5]


def test_big_disk_sizes_stay_exact(tmp_path: Path) -> None:
    """Byte counts beyond 2**53 are read exactly, not through a float."""
    big = 2**60 + 1
    inv = read_inventory(
        write_csv(
            tmp_path, f"c1,bk1:3181,dc1,r1,8,68719476736,{big},{big - 1},10000000000,writable"
        )
    )
    assert inv.clusters["c1"].node("bk1:3181").capacity.disk_total_bytes == big


def test_json_lines_with_a_broken_line(tmp_path: Path) -> None:
    """JSON-lines rows are checked like CSV ones; a line that is not JSON is rejected, kept raw."""
    good = dict(zip(HEADER.split(","), GOOD.split(","), strict=True))
    path = tmp_path / "nodes.jsonl"
    path.write_text(
        json.dumps(good)
        + "\n\n{not json\n"
        + json.dumps({**good, "node": "bk2:1", "cores": -1})
        + "\n"
    )
    inv = read_inventory(path)
    assert [(r.line, r.reason) for r in inv.rejected] == [
        (3, "not a JSON object"),
        (4, "cores must be above 0, got -1"),
    ]
    assert inv.rejected[0].row == {"_raw": "{not json"}
    assert inv.rows_read == 3 and inv.accepted == 1


def test_parquet_with_native_types(tmp_path: Path) -> None:
    """Parquet rows are numbered from 1 and native integers are taken as they are."""
    table = pa.table(
        {
            "cluster": ["c1", "c1"],
            "node": ["bk1:3181", "bk2:3181"],
            "cores": [8, 0],
            "memory_bytes": [2**36, 2**36],
            "disk_total_bytes": [4 * 10**12, 1],
            "nic_bps": [10**10, 1],
            "state": ["writable", "writable"],
        }
    )
    path = tmp_path / "nodes.parquet"
    pq.write_table(table, path)
    inv = read_inventory(path)
    assert inv.clusters["c1"].node("bk1:3181").location == "/default-region/default-rack"
    assert [(r.line, r.reason) for r in inv.rejected] == [(2, "cores must be above 0, got 0")]


def test_directory_reads_every_file_in_name_order(tmp_path: Path) -> None:
    """A directory is the union of its files; duplicates across files are caught."""
    (tmp_path / "a.csv").write_text(HEADER + "\n" + GOOD + "\n")
    (tmp_path / "b.csv").write_text(HEADER + "\n" + GOOD + "\n")
    (tmp_path / "README.txt").write_text("not an inventory")
    inv = read_inventory(tmp_path)
    assert inv.accepted == 1 and "an exact duplicate" in inv.rejected[0].reason
    assert inv.rejected[0].source.endswith("b.csv") and inv.rejected[0].rule == "duplicate"


def test_conflicting_rows_for_one_node_are_both_refused_whatever_the_file_order(
    tmp_path: Path,
) -> None:
    """Two different rows for one node: neither wins by sorting first; each names the other."""
    (tmp_path / "a.csv").write_text(HEADER + "\n" + GOOD + "\n")
    (tmp_path / "b.csv").write_text(HEADER + "\n" + GOOD.replace(",8,", ",16,") + "\n")
    inv = read_inventory(tmp_path)
    assert inv.accepted == 0 and [r.rule for r in inv.rejected] == ["conflict", "conflict"]
    first, second = inv.rejected
    assert f"{tmp_path / 'b.csv'}:2" in first.reason and f"{tmp_path / 'a.csv'}:2" in second.reason
    assert inv.rows_read == 2


def test_missing_required_column_stops_with_the_fix(tmp_path: Path) -> None:
    """A file without a required column cannot be used; the error names column and file."""
    path = write_csv(tmp_path, "c1,bk1:3181,8", header="cluster,node,cores")
    with pytest.raises(InputError) as info:
        read_inventory(path)
    message = str(info.value)
    assert str(path) in message and "memory_bytes" in message and "Required:" in message


def test_unknown_column_is_a_warning_with_a_suggestion(tmp_path: Path) -> None:
    """An unused column is reported, with the column it probably meant."""
    header = ",".join(REQUIRED_COLUMNS) + ",disk_free"
    path = write_csv(tmp_path, "c1,bk1:3181,8,1,4,1,writable,2", header=header)
    inv = read_inventory(path)
    assert inv.warnings == (
        f"{path}: column 'disk_free' is not used (did you mean 'disk_free_bytes'?)",
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing.csv", "does not exist"),
        (lambda p: p, "holds no .csv"),
        (lambda p: (p / "nodes.xml").write_text("<x/>") and p / "nodes.xml", "unknown format"),
        (lambda p: (p / "nodes.csv").write_text(HEADER + "\n") and p / "nodes.csv", "has no rows"),
    ],
    ids=["missing file", "empty directory", "unknown suffix", "header only"],
)
def test_unusable_inventory_raises(tmp_path: Path, make, message: str) -> None:
    """An inventory that cannot be used at all raises one error saying what to do."""
    with pytest.raises(InputError, match=message):
        read_inventory(make(tmp_path))


def test_bundled_sample_is_clean() -> None:
    """The sample inventory the demo uses has no rejected rows."""
    sample = Path(__file__).parents[1] / "src" / "trimtab" / "data" / "sample_inventory.csv"
    inv = read_inventory(sample)
    assert inv.rejected == () and inv.warnings == () and inv.accepted == 24


def _good_rows() -> list[dict[str, str]]:
    good = dict(zip(HEADER.split(","), GOOD.split(","), strict=True))
    return [good, {**good, "node": "bk2:3181"}]


def test_a_json_array_of_rows_is_a_table(tmp_path: Path) -> None:
    """The common export form, an array of row objects (pretty-printed), is read row by row
    with the line each starts on; it was one malformed row and an empty topology before."""
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps([*_good_rows(), 42], indent=2) + "\n")
    inv = read_inventory(path)
    assert sorted(n.id for n in inv.clusters["c1"]) == ["bk1:3181", "bk2:3181"]
    assert [(r.rule, r.line) for r in inv.rejected] == [("malformed", 26)]
    assert inv.rows_read == 3


def test_json_lines_and_an_array_on_one_line_read_alike(tmp_path: Path) -> None:
    """JSON lines and a one-line array give the same inventory."""
    lines, array = tmp_path / "a.jsonl", tmp_path / "b.json"
    lines.write_text("".join(json.dumps(r) + "\n" for r in _good_rows()))
    array.write_text(json.dumps(_good_rows()))
    assert read_inventory(lines).clusters == read_inventory(array).clusters


def test_a_broken_array_is_one_error_with_its_line(tmp_path: Path) -> None:
    """An array that does not parse: one error naming the line, not silent rows."""
    path = tmp_path / "nodes.json"
    path.write_text("[\n" + json.dumps(_good_rows()[0]) + ",\n{oops}\n]\n")
    with pytest.raises(InputError, match="line 3: not a JSON array of objects"):
        read_inventory(path)


def test_one_json_document_over_many_lines_says_what_it_seems_to_be() -> None:
    """A load report given as the inventory: named as one, not 58 malformed rows."""
    report = Path(__file__).parents[1] / "examples/shedding/load-reports/broker1:8080.json"
    with pytest.raises(InputError, match="it seems to be a Pulsar LocalBrokerData"):
        read_inventory(report)
