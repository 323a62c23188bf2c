"""Every option that takes a file, given a wrong but real one, as a new user would: another
tool's output, an empty file, a binary file, UTF-16 text (PowerShell's ``>``), a directory.

Each refusal is one ``error:`` line, exit 2, with the issue's three facts (issue 42): the
format the option expected, what the file seems to be, and the command (or the header) that
makes the expected one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples"
VERIFY = ROOT / "tests" / "data" / "tools" / "kafka-3.9-reassign-verify.txt"
runner = CliRunner()


def _other_tool(tmp: Path) -> Path:
    path = tmp / "saved.txt"
    path.write_bytes(VERIFY.read_bytes())
    return path


def _empty(tmp: Path) -> Path:
    path = tmp / "empty.txt"
    path.write_bytes(b"")
    return path


def _binary(tmp: Path) -> Path:
    path = tmp / "dump.dat"
    path.write_bytes(bytes(range(256)) * 4)
    return path


def _utf16(tmp: Path) -> Path:
    path = tmp / "nodes.csv"
    path.write_bytes("node,cluster,cores\r\nb1,c,4\r\n".encode("utf-16"))
    return path


def _directory(tmp: Path) -> Path:
    path = tmp / "folder"
    path.mkdir()
    return path


#: kind -> (how to make such a file, what the message says it seems to be)
KINDS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "another tool's output": (_other_tool, "kafka-reassign-partitions.sh --verify"),
    "empty": (_empty, "empty file"),
    "binary": (_binary, "binary"),
    "UTF-16": (_utf16, "UTF-16 text"),
    "directory": (_directory, "directory"),
}

_INV = str(EXAMPLES / "rebalance" / "inventory.csv")
_SHED = ["shed", "-i", str(EXAMPLES / "shedding" / "inventory.csv")]
_BROKERS = str(EXAMPLES / "shedding" / "node_metrics.csv")
_BUNDLES = str(EXAMPLES / "shedding" / "bundle_metrics.csv")
_ASSIGNMENT = str(EXAMPLES / "rebalance" / "assignment.json")
_ALLOCATION = ["-i", str(EXAMPLES / "allocation" / "inventory.csv")]
_ALLOCATION += ["-r", str(EXAMPLES / "allocation" / "requests.csv")]
_LOAD_REPORTS = str(EXAMPLES / "shedding" / "load-reports")
_ASSIGNMENT_MAKE = "kafka-reassign-partitions.sh --bootstrap-server"

#: option -> (the command with FILE where the wrong file goes, expected, making command)
OPTIONS: dict[str, tuple[list[str], str, str]] = {
    "rebalance -a": (["rebalance", "-i", _INV, "-a", "FILE"], "current", _ASSIGNMENT_MAKE),
    "rebalance --log-dirs": (
        ["rebalance", "-i", _INV, "-a", _ASSIGNMENT, "--log-dirs", "FILE"],
        "kafka-log-dirs.sh --describe output",
        "kafka-log-dirs.sh --bootstrap-server",
    ),
    "rebalance --in-progress": (
        ["rebalance", "-i", _INV, "-a", _ASSIGNMENT, "--in-progress", "FILE"],
        "the --json of trimtab rebalance",
        "--json > plan.json",
    ),
    "allocate --existing": (
        ["allocate", *_ALLOCATION, "--existing", "FILE"],
        "current",
        _ASSIGNMENT_MAKE,
    ),
    "shed --load-reports": (
        ["shed", "--load-reports", "FILE"],
        "load report",
        "pulsar-admin broker-stats load-report",
    ),
    "shed --brokers": (
        [*_SHED, "--brokers", "FILE", "--bundles", _BUNDLES],
        ".csv, .jsonl or .parquet",
        "header has ts,cluster,node,cpu",
    ),
    "shed --bundles": (
        [*_SHED, "--brokers", _BROKERS, "--bundles", "FILE"],
        ".csv, .jsonl or .parquet",
        "header has",
    ),
    "shed --isolation-policies": (
        [*_SHED, "--brokers", _BROKERS, "--bundles", _BUNDLES, "--isolation-policies", "FILE"],
        "isolation policies",
        "pulsar-admin ns-isolation-policy list",
    ),
    "shed --anti-affinity": (
        [*_SHED, "--brokers", _BROKERS, "--bundles", _BUNDLES, "--anti-affinity", "FILE"],
        "anti-affinity groups",
        "docs/commands/shed.md",
    ),
    "topology -i": (["topology", "-i", "FILE"], ".csv, .jsonl or .parquet", "trimtab inventory"),
    "place -i": (
        ["place", "-i", "FILE", "-E", "3", "-W", "2", "-A", "2"],
        ".csv, .jsonl or .parquet",
        "trimtab inventory",
    ),
    "inventory --defaults": (
        ["inventory", "--load-reports", _LOAD_REPORTS, "--defaults", "FILE"],
        "a CSV with columns among cluster, node",
        "examples/inventory/kafka-defaults.csv",
    ),
    "bookieinfo --registry": (
        ["bookieinfo", "--registry", "FILE", "--timeout", "1"],
        ".csv, .jsonl or .parquet",
        "header has id",
    ),
    "execute PLAN": (["execute", "FILE"], "trimtab plan document", "--plan FILE"),
}


def _error_line(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("option", list(OPTIONS))
def test_a_wrong_file_says_what_was_expected_what_it_seems_and_how_to_make_one(
    option: str, kind: str, tmp_path: Path
) -> None:
    make, seems = KINDS[kind]
    wrong = make(tmp_path)
    args, expected, command = OPTIONS[option]
    line = _error_line([str(wrong) if a == "FILE" else a for a in args])
    assert str(wrong.name) in line
    assert expected in line
    assert seems in line
    assert command in line


def test_pipeline_input_that_is_a_file_is_refused_before_spark(tmp_path: Path) -> None:
    wrong = _other_tool(tmp_path)
    line = _error_line(["pipeline", "run", "--input", str(wrong), "--output", str(tmp_path / "o")])
    assert "is a file, not a directory" in line and "nodes/" in line


def test_pipeline_input_with_a_utf16_table_is_refused_before_spark(tmp_path: Path) -> None:
    """Spark would read UTF-16 as rows of garbage (a header of NUL-spaced letters)."""
    root = tmp_path / "in"
    for table in ("nodes", "node_metrics", "bundle_metrics"):
        (root / table).mkdir(parents=True)
    _utf16(root / "nodes")
    line = _error_line(["pipeline", "run", "--input", str(root), "--output", str(tmp_path / "o")])
    assert "nodes.csv" in line and "UTF-16 text" in line and "nodes table" in line


def test_a_utf16_file_says_what_it_holds() -> None:
    """The sniffer looks inside UTF-16 text: a CSV saved by PowerShell is named as a CSV."""
    from trimtab.readers.sniff import raw_kind

    kind = raw_kind("node,cluster\r\nb1,c\r\n".encode("utf-16-le"))
    assert kind is not None and "a CSV table with columns node,cluster" in kind
    assert raw_kind(b"node,cluster\n") is None


def test_saved_pulsar_client_consume_output_given_as_an_assignment_is_named(
    tmp_path: Path,
) -> None:
    """PIP-192 load data saved with pulsar-client consume, given to rebalance -a by mistake."""
    saved = tmp_path / "broker-load-data.txt"
    tools = ROOT / "tests" / "data" / "tools"
    saved.write_bytes((tools / "pulsar-client-3.1-consume-broker-load-data.txt").read_bytes())
    line = _error_line(["rebalance", "-i", _INV, "-a", str(saved)])
    assert "it seems to be the output of pulsar-client consume" in line
    assert _ASSIGNMENT_MAKE in line


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("binary.conf", bytes(range(128, 256)), "not UTF-8 text (binary data"),
        (
            "utf16.conf",
            "a=1\n".encode("utf-16"),
            "is UTF-16 text, not UTF-8: convert it with iconv",
        ),
        ("binary.toml", bytes(range(128, 256)), "not UTF-8 text (binary data"),
    ],
)
def test_a_config_file_that_is_not_utf8_says_so(
    tmp_path: Path, name: str, content: bytes, said: str
) -> None:
    """`-c` given a binary or UTF-16 file: one line saying what it is, never Python's codec
    text."""
    path = tmp_path / name
    path.write_bytes(content)
    result = CliRunner().invoke(app, ["config", "-c", str(path)])
    assert result.exit_code == 2 and result.output.count("error:") == 1
    assert said in result.output and "codec" not in result.output
