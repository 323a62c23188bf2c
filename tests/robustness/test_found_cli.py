"""Each bad input issue #23 found, run as a user types it: one ``error:`` line and exit 2 for
a user error, one line and a report file with exit 1 for a bug, never a traceback."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from trimtab.cli import app, main
from trimtab.cli._common import bounded, printable
from trimtab.errors import TrimtabError

ROOT = Path(__file__).parents[2]
SHEDDING = ROOT / "examples" / "shedding"
INVENTORY = SHEDDING / "inventory.csv"
SAMPLE = ROOT / "src" / "trimtab" / "data" / "sample_inventory.csv"
REQUESTS = ROOT / "examples" / "allocation" / "requests.csv"
ALLOCATION_INVENTORY = ROOT / "examples" / "allocation" / "inventory.csv"
PLACE = ["place", "-i", str(SAMPLE), "--cluster", "bk-prod", "-E", "3", "-W", "2", "-A", "2"]
SHED = ["shed", "-i", str(INVENTORY), "--brokers", str(SHEDDING / "node_metrics.csv")]
SHED += ["--bundles", str(SHEDDING / "bundle_metrics.csv")]
runner = CliRunner()


def user_error(*args: str) -> str:
    """Run the command; assert the contract for a user error and return the ``error:`` line."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def through_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run ``trimtab ARGS`` through the script's entry point: exit status and stderr."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    code = exited.value.code
    return (code if isinstance(code, int) else 1), capsys.readouterr().err


# --- a bug: exit 1, one line, a report file --------------------------------------------------


def _boom(*_: object, **__: object) -> None:
    raise KeyError("a bug planted by the test")


def test_a_bug_is_one_line_and_a_report_file_through_main(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An unexpected exception exits 1 with one line naming it and the report, whose file
    holds the traceback; the terminal gets no traceback."""
    monkeypatch.setattr("trimtab.cli.topology.read_inventory", _boom)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    code, err = through_main(capsys, "topology", "-i", str(INVENTORY))
    assert code == 1 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "internal error" in lines[0] and "KeyError" in lines[0]
    (report,) = tmp_path.glob("trimtab-crash-*.txt")
    assert str(report) in lines[0]
    text = report.read_text()
    assert "Traceback" in text and "a bug planted by the test" in text and "topology" in text


@pytest.mark.subprocess
def test_a_bug_in_the_trimtab_process_is_one_line_and_a_report(tmp_path: Path) -> None:
    """The same through a real process of the command (the bug planted before main runs)."""
    script = (
        "import trimtab.cli.topology as t\n"
        "def boom(*a, **k): raise RuntimeError('planted')\n"
        "t.read_inventory = boom\n"
        "from trimtab.cli import main\n"
        "main()\n"
    )
    env = os.environ | {"TMPDIR": str(tmp_path), "COLUMNS": "300"}
    done = subprocess.run(
        [sys.executable, "-c", script, "topology", "-i", str(INVENTORY)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "RuntimeError: planted" in done.stderr
    (report,) = tmp_path.glob("trimtab-crash-*.txt")
    assert "Traceback" in report.read_text()


def test_a_usage_error_through_main_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    """An option the parser refuses is one ``error:`` line too, not a usage box."""
    code, err = through_main(capsys, *PLACE, "--count", "many")
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--count" in lines[0]


# --- encodings and control characters --------------------------------------------------------

LATIN1 = "cluster,node,cores\ncaf\xe9,x,1\n".encode("latin-1")
BINARY = bytes(range(256)) * 4


def _commands(bad: Path) -> list[list[str]]:
    return [
        ["topology", "-i", str(bad)],
        ["place", "-i", str(bad), "-E", "3", "-W", "2", "-A", "2"],
        ["shed", "-i", str(INVENTORY), "--brokers", str(bad), "--bundles", str(bad)],
        ["allocate", "-i", str(ALLOCATION_INVENTORY), "-r", str(bad)],
        ["bookieinfo", "--registry", str(bad)],
    ]


@pytest.mark.parametrize("content", [LATIN1, BINARY], ids=["latin-1", "binary"])
@pytest.mark.parametrize("command", range(5), ids=["topology", "place", "shed", "allocate", "bk"])
def test_a_file_not_utf8_is_refused_naming_it(tmp_path: Path, content: bytes, command: int) -> None:
    """Latin-1 or binary input to any reading command: an error naming the file and line."""
    bad = tmp_path / "table.csv"
    bad.write_bytes(content)
    line = user_error(*_commands(bad)[command])
    assert str(bad) in line and "not UTF-8" in line and "line" in line


def test_a_utf8_bom_is_read_as_excel_writes_it(tmp_path: Path) -> None:
    """An Excel export (a byte-order mark before the header) is read as if it had none."""
    bom = tmp_path / "inventory.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + INVENTORY.read_bytes())
    result = runner.invoke(app, ["topology", "-i", str(bom), "--json"])
    assert result.exit_code == 0, result.output
    assert "\ufeff" not in result.output


def test_control_characters_of_a_file_are_escaped(tmp_path: Path) -> None:
    """A tiny binary-ish file that is valid UTF-8 never sends raw control bytes back."""
    bad = tmp_path / "inventory.csv"
    bad.write_bytes(b"a\x1b[31mred\x07,b\x08\n1,2\n")
    line = user_error("topology", "-i", str(bad))
    assert "\\x1b" in line and "\\x07" in line
    assert not any(ord(c) < 32 for c in line)


def test_a_nul_byte_means_a_binary_file(tmp_path: Path) -> None:
    """Valid UTF-8 with NUL bytes is a binary file, refused by name."""
    bad = tmp_path / "inventory.jsonl"
    bad.write_bytes(b'{"cluster": "c"}\n\x00\x00\x00\n')
    assert "binary file" in user_error("topology", "-i", str(bad))


# --- options with bounds ---------------------------------------------------------------------


def test_place_count_beyond_the_bound_is_refused_at_once() -> None:
    """--count 99999999999999999999 used to hang; it is refused with the allowed range."""
    line = user_error(*PLACE, "--count", "99999999999999999999")
    assert "--count" in line and "10,000,000" in line


def test_place_exclude_with_an_unknown_id_is_refused() -> None:
    """A typo in --exclude excluded nothing, silently; now it names the id and the known ones."""
    line = user_error(*PLACE, "--exclude", "bk99.nowhere:3181")
    assert "bk99.nowhere:3181" in line and "known" in line


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0"])
def test_bookieinfo_timeout_must_be_finite_and_positive(tmp_path: Path, value: str) -> None:
    """--timeout -1, nan, inf and 0 are refused before any node is asked."""
    registry = tmp_path / "registry.csv"
    registry.write_text("id\nbk1:3181\n")
    line = user_error("bookieinfo", "--registry", str(registry), "--timeout", value)
    assert "--timeout" in line and "seconds" in line


def test_shed_pulsar_admin_and_json_cannot_be_combined() -> None:
    """--format pulsar-admin --json let JSON win silently; now the user chooses."""
    assert "choose one" in user_error(*SHED, "--format", "pulsar-admin", "--json")


def test_shed_json_on_parquet_with_a_rejected_row(tmp_path: Path) -> None:
    """A rejected Parquet row (its ts a datetime) is in the JSON document, as ISO 8601 text."""
    table = pa_csv.read_csv(SHEDDING / "node_metrics.csv")
    rows = table.to_pylist()
    rows[0]["cpu"] = 7.0
    parquet = tmp_path / "node_metrics.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), parquet)
    args = ["shed", "-i", str(INVENTORY), "--brokers", str(parquet)]
    result = runner.invoke(
        app, [*args, "--bundles", str(SHEDDING / "bundle_metrics.csv"), "--json"]
    )
    assert result.exit_code == 0, result.output
    (rejected,) = json.loads(result.stdout)["rejected"]
    assert "above 1" in rejected["reason"]
    assert rejected["row"]["ts"].startswith("2024-05-01T12:00:00")


# --- allocate ----------------------------------------------------------------------------------

ALLOCATE = ["allocate", "-i", str(ALLOCATION_INVENTORY), "-r", str(REQUESTS)]


@pytest.mark.parametrize(
    "content",
    [b"{not json", BINARY, b"[1, 2]", b"[" * 100_000],
    ids=["text", "binary", "list", "deep"],
)
def test_allocate_existing_garbage_is_refused(tmp_path: Path, content: bytes) -> None:
    """--existing given a file that is no reassignment JSON: an error naming the file."""
    garbage = tmp_path / "current.json"
    garbage.write_bytes(content)
    line = user_error(*ALLOCATE, "--existing", str(garbage), "--rebalance")
    assert str(garbage) in line


@pytest.mark.parametrize("option", [["--rebalance"], ["--max-moves", "3"]])
def test_allocate_moves_without_existing_are_refused(option: list[str]) -> None:
    """--rebalance and --max-moves act on --existing; alone they were ignored."""
    line = user_error(*ALLOCATE, *option)
    assert option[0] in line and "--existing" in line


def test_allocate_output_never_replaces_an_existing_file(tmp_path: Path) -> None:
    """An --output that exists is refused; the file keeps its content."""
    kept = tmp_path / "plan.json"
    kept.write_text("mine")
    line = user_error(*ALLOCATE, "--format", "json", "--output", str(kept))
    assert str(kept) in line and kept.read_text() == "mine"


# --- pipeline run and sweep: every option checked before Spark starts -------------------------


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting Spark fails the test: these options must be refused before."""

    def refuse(**_: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr("trimtab.pipeline.session.spark_session", refuse)


def _pipeline(tmp_path: Path, *options: str) -> str:
    return user_error(
        "pipeline", "run", "--input", str(tmp_path), "--output", str(tmp_path / "out"), *options
    )


@pytest.mark.usefixtures("no_spark")
def test_pipeline_conf_without_equals_is_an_error_line(tmp_path: Path) -> None:
    """--conf notakeyvalue gave a usage box; it is one error line naming --conf."""
    assert "--conf" in _pipeline(tmp_path, "--conf", "notakeyvalue")


@pytest.mark.usefixtures("no_spark")
@pytest.mark.parametrize("window", ["0m", "0s", "1000d", "soon"])
def test_pipeline_window_out_of_bounds_is_refused_before_spark(tmp_path: Path, window: str) -> None:
    """--window 0m crashed Spark with REMAINDER_BY_ZERO; now it is refused up front."""
    assert "--window" in _pipeline(tmp_path, "--window", window)


@pytest.mark.usefixtures("no_spark")
def test_pipeline_unknown_strategy_is_refused_before_spark(tmp_path: Path) -> None:
    """--strategy bogus was refused after about 40 s of Spark work."""
    line = _pipeline(tmp_path, "--strategy", "bogus")
    assert "'bogus'" in line and "transfer" in line


@pytest.mark.usefixtures("no_spark")
def test_pipeline_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """An --output that is an existing file is never replaced."""
    target = tmp_path / "out"
    target.write_text("keep me")
    assert "existing file" in _pipeline(tmp_path)
    assert target.read_text() == "keep me"


@pytest.mark.usefixtures("no_spark")
def test_pipeline_output_a_foreign_directory_is_refused(tmp_path: Path) -> None:
    """A non-empty directory without run.json is not the pipeline's to replace."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "thesis.tex").write_text("years of work")
    assert "run.json" in _pipeline(tmp_path)


@pytest.mark.usefixtures("no_spark")
def test_sweep_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """sweep's --output follows the same rule, before Spark starts."""
    target = tmp_path / "out"
    target.write_text("keep me")
    line = user_error("sweep", "shedding", "--output", str(target), "--brokers", "10")
    assert "existing file" in line and target.read_text() == "keep me"


# --- ZooKeeper --------------------------------------------------------------------------------


def test_unreachable_zookeeper_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """kazoo's retry log lines no longer precede the error."""
    config = tmp_path / "bk_server.conf"
    config.write_text("getBookieInfoTimeoutSecs=1\n")
    code, err = through_main(capsys, "bookieinfo", "--zk", "127.0.0.1:1", "-c", str(config))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "ZooKeeper" in lines[0]


# --- cells with bounds ------------------------------------------------------------------------


def test_implausible_cores_are_rejected_with_the_bound(tmp_path: Path) -> None:
    """A cell above what one machine can have is a rejected row naming the bound."""
    text = INVENTORY.read_text().splitlines()
    fields = text[1].split(",")
    fields[1], fields[4] = "big.example.net:8080", "1000000000000"
    inventory = tmp_path / "inventory.csv"
    inventory.write_text("\n".join([*text, ",".join(fields)]) + "\n")
    result = runner.invoke(app, ["topology", "-i", str(inventory)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "above 65,536" in result.stderr


@pytest.mark.usefixtures("no_spark")
def test_pipeline_garbage_parquet_is_refused_before_spark(tmp_path: Path) -> None:
    """A garbage .parquet in the input gave a 188-line Spark stack trace."""
    (tmp_path / "nodes").mkdir()
    garbage = tmp_path / "nodes" / "part-0.parquet"
    garbage.write_bytes(BINARY)
    line = _pipeline(tmp_path)
    assert str(garbage) in line and "Parquet" in line


# --- the pieces of the contract ------------------------------------------------------------


@given(st.text())
def test_printable_never_echoes_a_control_character(text: str) -> None:
    """Whatever a file holds, what the CLI echoes of it has no control character."""
    shown = printable(text)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in shown)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_bounded_accepts_exactly_the_finite_values_in_range(value: float) -> None:
    """An option's number is accepted iff it is finite and within its bounds."""
    inside = math.isfinite(value) and 0.001 <= value <= 60
    try:
        bounded("--timeout", value, 0.001, 60, "of seconds")
    except TrimtabError as exc:
        assert not inside and "--timeout" in str(exc)
    else:
        assert inside


def test_a_binary_toml_config_is_refused_naming_it(tmp_path: Path) -> None:
    """--config given a binary .toml file was a UnicodeDecodeError traceback."""
    bad = tmp_path / "trimtab.toml"
    bad.write_bytes(BINARY)
    assert str(bad) in user_error("config", "-c", str(bad))


@pytest.mark.parametrize("now", ["99999999999999999999", "1e308", "-1"])
def test_shed_now_beyond_any_date_is_refused(now: str) -> None:
    """--now 1e308 was an OverflowError traceback."""
    assert "--now" in user_error(*SHED, "--now", now)


@pytest.mark.usefixtures("no_spark")
def test_pipeline_negative_seed_is_refused_before_spark(tmp_path: Path) -> None:
    """NumPy takes no negative seed: --seed -1 is refused before Spark starts (found by the
    fuzzing campaign)."""
    run = ["pipeline", "run", "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    result = runner.invoke(app, [*run, "--seed", "-1"])
    assert result.exit_code == 2 and "--seed" in result.output and "Traceback" not in result.output


# --- units that can be mistaken, and one node per host (issue 42) ----------------------------


def _with_row(tmp_path: Path, source: Path, change: dict[int, str], node: str) -> Path:
    """``source`` plus a copy of its first row with node ``node`` and fields changed."""
    text = source.read_text().splitlines()
    fields = text[1].split(",")
    fields[1] = node
    for index, value in change.items():
        fields[index] = value
    inventory = tmp_path / "inventory.csv"
    inventory.write_text("\n".join([*text, ",".join(fields)]) + "\n")
    return inventory


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("nic_bps", "10", "nic_bps 10 is 10 bit/s; for 10 Gb/s write 10000000000"),
        ("memory_bytes", "64", "memory_bytes 64 is 64 bytes; for 64 GiB write 68719476736"),
        (
            "disk_total_bytes",
            "2000",
            "disk_total_bytes 2000 is 2000 bytes; for 2000 GB write 2000000000000",
        ),
    ],
)
def test_a_capacity_in_a_bigger_unit_is_rejected_naming_it(
    tmp_path: Path, column: str, value: str, said: str
) -> None:
    """nic_bps 10 meant as 10 Gb/s gave a load of 9.6e7x before: now the row is refused with
    the unit it seems to be in and what to write; the other rows are used."""
    header = SAMPLE.read_text().splitlines()[0].split(",")
    change = {header.index(column): value}
    if column == "disk_total_bytes":
        change[header.index("disk_free_bytes")] = ""
    inventory = _with_row(tmp_path, SAMPLE, change, "odd.example.net:3181")
    result = runner.invoke(app, ["topology", "-i", str(inventory)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert said in " ".join(result.stderr.split())


def test_an_inventory_all_in_gbps_is_one_error_with_the_dominant_reason(tmp_path: Path) -> None:
    """Every NIC written in Gb/s: no empty topology with exit 0, one error naming the rule and
    the unit."""
    lines = INVENTORY.read_text().splitlines()
    header = lines[0].split(",")
    nic = header.index("nic_bps")
    rows = [line.split(",") for line in lines[1:]]
    for row in rows:
        row[nic] = "25"
    inventory = tmp_path / "inventory.csv"
    inventory.write_text("\n".join([lines[0], *(",".join(r) for r in rows)]) + "\n")
    line = user_error("topology", "-i", str(inventory))
    assert "no usable inventory row" in line and "as implausible" in line
    assert "for 25 Gb/s write 25000000000" in line


def test_usages_in_percent_are_one_error_saying_what_to_write(tmp_path: Path) -> None:
    """cpu in percent quarantined every row and ended "mean load 0.000", exit 0: now one error
    naming the fraction to write."""
    table = pa_csv.read_csv(SHEDDING / "node_metrics.csv").to_pylist()
    for row in table:
        row["cpu"] = round(row["cpu"] * 100, 2)
    metrics = tmp_path / "node_metrics.csv"
    pa_csv.write_csv(pa.Table.from_pylist(table), metrics)
    args = ["shed", "-i", str(INVENTORY), "--brokers", str(metrics)]
    line = user_error(*args, "--bundles", str(SHEDDING / "bundle_metrics.csv"))
    assert "usages are fractions; for 77 % write 0.77" in line


@pytest.mark.parametrize("same", [True, False], ids=["exact copy", "differing row"])
def test_ids_differing_only_in_case_are_one_node(tmp_path: Path, same: bool) -> None:
    """BK01... and bk01... are one host, as DNS compares names: a duplicate (the first kept) or
    a conflict (both refused), never two bookies that could hold two replicas of a ledger."""
    first = SAMPLE.read_text().splitlines()[1].split(",")
    header = SAMPLE.read_text().splitlines()[0].split(",")
    change = {} if same else {header.index("cores"): "64"}
    change.update({i: v for i, v in enumerate(first) if i not in change and i != 1})
    inventory = _with_row(tmp_path, SAMPLE, change, first[1].upper())
    result = runner.invoke(app, ["topology", "-i", str(inventory), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    ids = [n["id"] for c in doc["clusters"] for n in c["nodes"]]
    assert len(ids) == len(set(ids)) and first[1].upper() not in ids
    reasons = [r["reason"] for r in doc["rejected"]]
    assert len(reasons) == (1 if same else 2)
    said = "an exact duplicate of an earlier row" if same else "conflicting rows for node"
    assert all(said in reason for reason in reasons)
    assert (first[1].lower() in ids) == same


def test_a_nic_in_bytes_per_second_is_a_warning_naming_the_unit(tmp_path: Path) -> None:
    """nic_bps 3125000000 is 3.125 Gb/s, no NIC's speed, and 25 Gb/s in bytes: kept (a NIC
    may be limited so), with one warning saying what to write if bytes were meant."""
    text = (ROOT / "examples" / "rebalance" / "inventory.csv").read_text()
    inventory = tmp_path / "inventory.csv"
    inventory.write_text(text.replace(",25000000000,writable", ",3125000000,writable"))
    result = runner.invoke(app, ["topology", "-i", str(inventory)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("warning:")]
    assert "nic_bps 3125000000" in line and "write 25000000000" in line
