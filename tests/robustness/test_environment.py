"""The campaign's environment dimension (issue 43): faults of the machine, not of the input.

Every command that writes an output is run, as a user types it, on an output it cannot write:
in a read-only directory, under a directory that does not exist, through a file where a
directory goes. Each must end in one ``error:`` line naming the path, exit status 2 and nothing
written, before any work starts (the Spark commands before Spark does: these tests carry no
``spark`` marker, and tests/markers.py fails one that starts a session without it).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.robustness.harness import check_contract, dead_ports, invoke

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"


def _read_only(tmp: Path) -> Path:
    """A directory nobody here may write in: ``/sys`` for root (whom mode bits do not stop),
    else a directory without write permission."""
    if os.geteuid() == 0:
        return Path("/sys")
    locked = tmp / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    return locked


def _a_file(tmp: Path) -> Path:
    path = tmp / "a-file"
    path.write_text("not a directory\n", encoding="utf-8")
    return path


#: Each fault: a sentence id, and the output path it gives (the path must stay unwritten).
FILE_FAULTS: list[tuple[str, Callable[[Path], Path]]] = [
    ("a read-only directory", lambda tmp: _read_only(tmp) / "trimtab-out.json"),
    ("a parent directory that does not exist", lambda tmp: tmp / "missing" / "out.json"),
    ("a file where the parent directory goes", lambda tmp: _a_file(tmp) / "out.json"),
]
DIRECTORY_FAULTS: list[tuple[str, Callable[[Path], Path]]] = [
    ("a read-only directory", lambda tmp: _read_only(tmp) / "trimtab-out"),
    ("a file where the directory goes", _a_file),
    ("a file where a parent directory goes", lambda tmp: _a_file(tmp) / "sub" / "out"),
]


def _stream_input(tmp: Path) -> Path:
    (tmp / "in" / "nodes").mkdir(parents=True)
    return tmp / "in"


#: Each writing command, as typed, with its output path last.
FILE_COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "allocate -o": lambda tmp, out: [
        *("allocate", "-i", str(EXAMPLES / "allocation" / "inventory.csv")),
        *("-r", str(EXAMPLES / "allocation" / "requests.csv"), "--format", "json"),
        *("-o", str(out)),
    ],
    "rebalance -o": lambda tmp, out: [
        *("rebalance", "-i", str(EXAMPLES / "rebalance" / "inventory.csv")),
        *("-a", str(EXAMPLES / "rebalance" / "assignment.json")),
        *("--log-dirs", str(EXAMPLES / "rebalance" / "log-dirs.json"), "-o", str(out)),
    ],
    "shed --out": lambda tmp, out: [
        *("shed", "-i", str(EXAMPLES / "shedding" / "inventory.csv")),
        *("--brokers", str(EXAMPLES / "shedding" / "node_metrics.csv")),
        *("--bundles", str(EXAMPLES / "shedding" / "bundle_metrics.csv"), "--out", str(out)),
    ],
    "report --out": lambda tmp, out: ["report", "--input", str(tmp), "--out", str(out)],
}
DIRECTORY_COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "generate-fleet --out": lambda tmp, out: ["generate-fleet", "--out", str(out)],
    "simulate diskfill --out": lambda tmp, out: [
        *("simulate", "diskfill", "--scenario", "seed", "--out", str(out)),
    ],
    "pipeline run --output": lambda tmp, out: [
        *("pipeline", "run", "--input", str(tmp), "--output", str(out)),
    ],
    "pipeline stream --output": lambda tmp, out: [
        *("pipeline", "stream", "--input", str(_stream_input(tmp)), "--output", str(out)),
    ],
    "pipeline stream --checkpoint": lambda tmp, out: [
        *("pipeline", "stream", "--input", str(_stream_input(tmp))),
        *("--output", str(tmp / "stream-out"), "--checkpoint", str(out)),
    ],
    "sweep shedding --output": lambda tmp, out: [
        *("sweep", "shedding", "--brokers", "10", "--trials", "1", "--output", str(out)),
    ],
    "sweep diskfill --output": lambda tmp, out: [
        *("sweep", "diskfill", "--scenario", "seed", "--output", str(out)),
    ],
}


def _cases(
    commands: dict[str, Callable[[Path, Path], list[str]]],
    faults: list[tuple[str, Callable[[Path], Path]]],
) -> list[object]:
    return [
        pytest.param(command, fault, id=f"{name} into {sentence}")
        for name, command in commands.items()
        for sentence, fault in faults
    ]


@pytest.mark.parametrize(
    ("command", "fault"),
    _cases(FILE_COMMANDS, FILE_FAULTS) + _cases(DIRECTORY_COMMANDS, DIRECTORY_FAULTS),
)
def test_an_output_that_cannot_be_written_is_one_error_line_naming_it(
    command: Callable[[Path, Path], list[str]], fault: Callable[[Path], Path], tmp_path: Path
) -> None:
    """An unwritable output is refused before any work: exit 2, one ``error:`` line naming
    the path and why, and nothing written."""
    out = fault(tmp_path)
    existed = out.exists()
    run = invoke(command(tmp_path, out))
    check_contract(run, outputs=[] if existed else [out])
    assert run.result.exit_code == 2, run.describe()
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert str(out) in line and any(
        why in line
        for why in ("cannot write", "does not exist", "not a directory", "an existing file")
    ), line


def test_generate_fleet_into_a_writable_new_directory_still_writes(tmp_path: Path) -> None:
    """The check leaves a good output alone: missing parents are created as before, and no
    probe file is left behind."""
    out = tmp_path / "new" / "fleet"
    run = invoke(["generate-fleet", "--out", str(out), "--clusters", "1", "--minutes", "2"])
    assert run.result.exit_code == 0, run.describe()
    assert (out / "nodes").is_dir() and not list(tmp_path.rglob(".trimtab-probe-*"))


# --- addresses and ports --------------------------------------------------------------------

SHED_TABLES = [
    *("-i", str(EXAMPLES / "shedding" / "inventory.csv")),
    *("--brokers", str(EXAMPLES / "shedding" / "node_metrics.csv")),
]
AGENT = ["agent", "--id", "127.0.0.1:3181", "--ledger-dirs", str(ROOT)]


def _one_error(args: list[str]) -> str:
    """Run ``trimtab ARGS``; assert the contract of a user error and return its line."""
    run = invoke(args, watchdog=20)
    check_contract(run)
    assert run.result.exit_code == 2, run.describe()
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["shed", "--zk", "127.0.0.1:notaport"], id="shed --zk with a word as port"),
        pytest.param(
            ["topology", "-i", SHED_TABLES[1], "--pulsar-racks", "127.0.0.1:notaport"],
            id="topology --pulsar-racks with a word as port",
        ),
        pytest.param(
            ["bookieinfo", "--zk", "zk1:2181,127.0.0.1:99999", "--timeout", "1"],
            id="bookieinfo --zk with a port out of range in the second server",
        ),
    ],
)
def test_a_zookeeper_address_that_does_not_parse_is_one_error_line(args: list[str]) -> None:
    """A ``--zk`` kazoo cannot parse is named in one error line (a ValueError before)."""
    line = _one_error(args)
    assert "bad ZooKeeper address" in line and "from 1 to 65535" in line, line


def test_agent_listen_port_out_of_range_is_refused_not_replaced() -> None:
    """``agent --listen 127.0.0.1:99999`` is refused; gRPC used to serve on another port."""
    line = _one_error([*AGENT, "--listen", "127.0.0.1:99999"])
    assert "--listen '127.0.0.1:99999'" in line and "65535" in line, line


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another socket listens on while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.server
@pytest.mark.parametrize(
    ("args", "option"),
    [
        pytest.param([*AGENT, "--listen", "127.0.0.1:{port}"], "--listen", id="agent --listen"),
        pytest.param([*AGENT, "--metrics-port", "{port}"], "--metrics-port", id="agent metrics"),
        pytest.param(
            ["watch", "--metrics-port", "{port}", "--registry", str(ROOT / "README.md")],
            "--metrics-port",
            id="watch --metrics-port",
        ),
    ],
)
def test_a_port_in_use_is_one_error_line_naming_it(
    args: list[str], option: str, taken_port: int
) -> None:
    """A port another process listens on is named before the command starts any work."""
    line = _one_error([arg.format(port=taken_port) for arg in args])
    assert f"{option} 127.0.0.1:{taken_port}" in line and "already in use" in line, line


# --- non-regular input files ----------------------------------------------------------------


def _fifo(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


#: Each input a user may give, as typed, with a FIFO (named pipe) where a file goes.
FIFO_INPUTS: dict[str, Callable[[Path], tuple[list[str], Path]]] = {
    "topology -i FIFO": lambda tmp: (["topology", "-i", str(f := _fifo(tmp, "nodes.csv"))], f),
    "topology -i DIR holding a FIFO": lambda tmp: (
        ["topology", "-i", str(_fifo(tmp, "nodes/b.csv").parent)],
        tmp / "nodes" / "b.csv",
    ),
    "shed --brokers FIFO": lambda tmp: (
        ["shed", *SHED_TABLES[:2], "--brokers", str(f := _fifo(tmp, "m.csv")), "--bundles", str(f)],
        f,
    ),
    "allocate -r FIFO": lambda tmp: (
        [
            *("allocate", "-i", str(EXAMPLES / "allocation" / "inventory.csv")),
            *("-r", str(f := _fifo(tmp, "requests.csv"))),
        ],
        f,
    ),
    "rebalance -a FIFO": lambda tmp: (
        [
            *("rebalance", "-i", str(EXAMPLES / "rebalance" / "inventory.csv")),
            *("-a", str(f := _fifo(tmp, "assignment.json"))),
        ],
        f,
    ),
    "shed --load-reports FIFO": lambda tmp: (
        ["shed", "--load-reports", str(f := _fifo(tmp, "reports"))],
        f,
    ),
    "topology -c FIFO": lambda tmp: (
        ["topology", "-i", SHED_TABLES[1], "-c", str(f := _fifo(tmp, "c.toml"))],
        f,
    ),
    "pipeline run --input DIR holding a FIFO": lambda tmp: (
        [
            *("pipeline", "run", "--input", str(tmp / "in")),
            *("--output", str(tmp / "out"), "--now", "2026-01-01T00:00:00"),
        ],
        _fifo(tmp, "in/node_metrics/part.csv"),
    ),
}


@pytest.mark.parametrize("given", [pytest.param(v, id=k) for k, v in FIFO_INPUTS.items()])
def test_a_fifo_given_as_input_is_refused_at_once(
    given: Callable[[Path], tuple[list[str], Path]], tmp_path: Path
) -> None:
    """A named pipe where an input file goes is one error line naming it, within seconds
    (reading it used to wait for a writer for ever)."""
    args, fifo = given(tmp_path)
    run = invoke(args, watchdog=15)
    check_contract(run)
    assert run.result.exit_code == 2, run.describe()
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert str(fifo) in line and "regular file" in line, line


def test_a_device_given_as_the_inventory_is_refused() -> None:
    """``-i /dev/null`` names the device instead of reading it."""
    line = _one_error(["topology", "-i", "/dev/null"])
    assert "/dev/null is a character device" in line, line


# --- rack resolution ------------------------------------------------------------------------

#: A rack script that passes its start-up check (no arguments) and fails for every host.
FAILING_RACK_SCRIPT = '#!/bin/sh\n[ "$#" -eq 0 ] && exit 0\necho "no rack for $*" >&2\nexit 1\n'


def failing_rack_script(tmp: Path) -> Path:
    script = tmp / "rack.sh"
    script.write_text(FAILING_RACK_SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    return script


def test_a_rack_script_failing_for_every_host_is_one_warning_and_the_default_rack(
    tmp_path: Path,
) -> None:
    """Every host on the default rack, one ``warning:`` line, exit 0 (a KeyError before)."""
    script = failing_rack_script(tmp_path)
    args = ["topology", "-i", SHED_TABLES[1], "--resolver-script", str(script), "--json"]
    run = invoke(args, watchdog=30)
    check_contract(run)
    assert run.result.exit_code == 0, run.describe()
    warnings = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("warning: rack script"), warnings
    assert "failed for 6 host(s)" in warnings[0]
    (cluster,) = json.loads(run.result.stdout)["clusters"]
    assert {node["location"] for node in cluster["nodes"]} == {"/default-rack"}


def test_the_tree_of_a_cluster_all_on_the_default_rack_is_printed(tmp_path: Path) -> None:
    """The table view draws a one-level tree: the rack, then its nodes."""
    script = failing_rack_script(tmp_path)
    run = invoke(["topology", "-i", SHED_TABLES[1], "--resolver-script", str(script)])
    assert run.result.exit_code == 0, run.describe()
    assert "default-rack  6 nodes" in run.result.stdout
    assert "broker1.example.net:8080  writable" in run.result.stdout


# --- Spark: the master and --conf, before the JVM starts ------------------------------------


def _spark_commands(tmp: Path) -> dict[str, list[str]]:
    return {
        "pipeline run": ["pipeline", "run", "--input", str(EXAMPLES), "--output", str(tmp / "o")],
        "pipeline stream": [
            *("pipeline", "stream", "--input", str(_stream_input(tmp))),
            *("--output", str(tmp / "s")),
        ],
        "sweep shedding": [
            *("sweep", "shedding", "--brokers", "10", "--trials", "1", "--output", str(tmp / "w")),
        ],
    }


SPARK_FAULTS: dict[str, tuple[Callable[[int], list[str]], str]] = {
    "an unreachable spark:// master": (
        lambda port: ["--master", f"spark://127.0.0.1:{port}"],
        "cannot reach the Spark master spark://127.0.0.1:",
    ),
    "a master of unknown scheme": (
        lambda port: ["--master", "foo://bar"],
        "is not a Spark master URL: use one of local,",
    ),
    "a driver memory that is no size": (
        lambda port: ["--conf", "spark.driver.memory=lots"],
        "--conf spark.driver.memory='lots': expected a size",
    ),
    "a shuffle partition count that is no number": (
        lambda port: ["--conf", "spark.sql.shuffle.partitions=many"],
        "expected a whole number",
    ),
}


@pytest.mark.parametrize("command", ["pipeline run", "pipeline stream", "sweep shedding"])
@pytest.mark.parametrize("fault", list(SPARK_FAULTS))
def test_a_spark_master_or_setting_spark_would_refuse_is_one_line_in_seconds(
    command: str, fault: str, tmp_path: Path
) -> None:
    """Refused before the JVM starts (a Spark session here fails this unmarked test), in
    seconds: an unreachable master took over a minute of Java stack traces before."""
    options, expected = SPARK_FAULTS[fault]
    args = [*_spark_commands(tmp_path)[command], *options(dead_ports(1)[0])]
    started = time.monotonic()
    line = _one_error(args)
    assert expected in line, line
    assert time.monotonic() - started < 10


def test_a_fifo_inside_a_pipeline_output_is_refused_by_report(tmp_path: Path) -> None:
    """``report --input OUT`` with a named pipe among a table's files names it at once."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text(
        json.dumps({"tables": {}, "quarantine_by_rule": {}, "clusters": {}}), encoding="utf-8"
    )
    fifo = _fifo(out, "node_load/part-0.parquet")
    line = _one_error(["report", "--input", str(out), "--out", str(tmp_path / "r.html")])
    assert str(fifo) in line and "FIFO" in line, line
