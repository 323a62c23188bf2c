"""The ``trimtab`` command as a user runs it."""

from __future__ import annotations

import importlib
import io
import json
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from trimtab import __version__
from trimtab.cli import app

SAMPLE = Path(__file__).parents[1] / "src" / "trimtab" / "data" / "sample_inventory.csv"
runner = CliRunner()


def test_version() -> None:
    """--version prints the package version."""
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"trimtab {__version__}"


def test_help_lists_commands() -> None:
    """--help names the commands."""
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "topology" in result.output and "config" in result.output


def test_topology_prints_regions_racks_and_nodes() -> None:
    """The people's view shows every level with state and disk."""
    result = runner.invoke(app, ["topology", "--inventory", str(SAMPLE)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "bk-prod  18 nodes (16 writable, 1 readonly, 1 down); 2 regions, 6 racks" in out
    assert "us-west" in out and "rack3" in out
    assert "bk05.us-east.example.net:3181  readonly" in out
    assert "pulsar-prod" in out


def test_topology_json_for_machines() -> None:
    """--json gives each cluster's nodes with their location, and the tree."""
    result = runner.invoke(app, ["topology", "-i", str(SAMPLE), "--cluster", "bk-prod", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (cluster,) = doc["clusters"]
    assert cluster["cluster"] == "bk-prod" and cluster["depth"] == 2
    assert cluster["regions"] == ["us-east", "us-west"] and len(cluster["racks"]) == 6
    node = next(n for n in cluster["nodes"] if n["id"] == "bk01.us-east.example.net:3181")
    assert node["location"] == "/us-east/rack1" and node["state"] == "writable"
    assert "bk01.us-east.example.net:3181" in cluster["tree"]["us-east"]["rack1"]["nodes"]
    assert doc["rejected"] == []


def test_topology_with_a_resolver_script(tmp_path: Path) -> None:
    """A rack script decides locations; unplaceable hosts get a default rack of equal depth."""
    script = tmp_path / "rack.sh"
    script.write_text(
        "#!/bin/sh\n"
        'for h in "$@"; do\n'
        '  case "$h" in\n'
        "    broker1*|broker2*) echo /zone-a/row1 ;;\n"
        "    broker3*) echo not-a-path ;;\n"
        "    *) echo /zone-b/row2 ;;\n"
        "  esac\n"
        "done\n"
    )
    script.chmod(0o755)
    result = runner.invoke(
        app,
        [
            "topology",
            "-i",
            str(SAMPLE),
            "--cluster",
            "pulsar-prod",
            "--resolver-script",
            str(script),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    nodes = {n["id"]: n["location"] for n in json.loads(result.stdout)["clusters"][0]["nodes"]}
    assert nodes["broker1.example.net:8080"] == "/zone-a/row1"
    assert nodes["broker4.example.net:8080"] == "/zone-b/row2"
    assert nodes["broker3.example.net:8080"] == "/default-region/default-rack"


def test_topology_reports_rejected_rows_and_keeps_the_rest(tmp_path: Path) -> None:
    """Bad rows are listed with file and line on stderr; good rows are still shown."""
    bad = tmp_path / "nodes.csv"
    lines = SAMPLE.read_text().splitlines()
    bad.write_text(
        "\n".join(
            [
                *lines,
                f"bk-prod,bk99:3181,us-east,rack1,8,{2**36},{10**7},{2 * 10**7},{10**10},writable",
            ]
        )
        + "\n"
    )
    result = runner.invoke(app, ["topology", "-i", str(bad)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert f"{bad}:26" in result.stderr and "disk_free_bytes 20000000 is above" in result.stderr
    assert "1 of 25 inventory rows rejected" in result.stderr
    doc = json.loads(runner.invoke(app, ["topology", "-i", str(bad), "--json"]).stdout)
    assert [(r["line"], r["row"]["node"]) for r in doc["rejected"]] == [(26, "bk99:3181")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["topology", "-i", "/nonexistent/nodes.csv"], "does not exist"),
        (["topology", "-i", str(SAMPLE), "--cluster", "nope"], "no cluster 'nope'"),
        (["topology", "-i", str(SAMPLE), "--resolver-script", "/nonexistent/rack.sh"], "rack.sh"),
    ],
    ids=["missing inventory", "unknown cluster", "missing resolver script"],
)
def test_user_errors_are_one_line_and_status_2(args: list[str], message: str) -> None:
    """Problems the user can fix give one error line, exit status 2, and no traceback."""
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "error:" in result.stderr and message in result.stderr
    assert "Traceback" not in result.output


def test_config_command_shows_upstream_names_and_values(tmp_path: Path) -> None:
    """trimtab config lists each setting with its upstream key and the value in force."""
    conf = tmp_path / "client.conf"
    conf.write_text("minNumRacksPerWriteQuorum=3\n")
    doc = json.loads(runner.invoke(app, ["config", "--config", str(conf), "--json"]).stdout)
    row = next(r for r in doc["settings"] if r["key"] == "placement.min_num_racks_per_write_quorum")
    assert row == {
        "key": "placement.min_num_racks_per_write_quorum",
        "upstream": [
            "minNumRacksPerWriteQuorum",
            "bookkeeperClientMinNumRacksPerWriteQuorum",  # broker.conf's name
        ],
        "value": 3,
        "default": 2,
        "doc": "racks each write quorum should span",
    }


def test_config_command_bad_key_suggests(tmp_path: Path) -> None:
    """A mistyped key in --config fails with the suggestion."""
    conf = tmp_path / "client.conf"
    conf.write_text("minNumRackPerWriteQuorum=3\n")
    result = runner.invoke(app, ["config", "--config", str(conf)])
    assert result.exit_code == 2 and "did you mean 'minNumRacksPerWriteQuorum'" in result.stderr


@pytest.mark.subprocess
def test_installed_entry_point_runs() -> None:
    """The console script installed by pip works as a real process."""
    exe = shutil.which("trimtab", path=str(Path(sys.executable).parent))
    assert exe is not None, "the trimtab script is not installed next to this interpreter"
    proc = subprocess.run(
        [exe, "topology", "-i", str(SAMPLE), "--json"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert {c["cluster"] for c in json.loads(proc.stdout)["clusters"]} == {"bk-prod", "pulsar-prod"}


@pytest.mark.subprocess
def test_a_logged_warning_is_a_warning_line_before_the_error() -> None:
    """`trimtab watch` with no rack script configured, as typed, against a ZooKeeper that
    never answers: the resolver's fallback (logged by the library) is one `warning:` line on
    stderr, and the failure one `error:` line after it."""
    exe = Path(sys.executable).parent / "trimtab"
    proc = subprocess.run(
        [str(exe), "watch", "--zk", "127.0.0.1:1", "--metrics-port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    warning, error = proc.stderr.splitlines()
    assert warning.startswith("warning: resolver 'script' could not start"), warning
    assert "every node goes to the default rack /default-rack" in warning
    assert error.startswith("error: cannot reach ZooKeeper at 127.0.0.1:1"), error


# -- --json everywhere, progress on stderr only ------------------------------------------------

EXAMPLES = Path(__file__).parents[1] / "examples"


def leaf_commands() -> dict[str, Any]:
    """Every command a user can run, by its full name (``"simulate diskfill"``)."""
    found: dict[str, Any] = {}

    def walk(command: Any, name: str) -> None:
        children = getattr(command, "commands", None)
        if children is None:
            found[name] = command
            return
        for child_name, child in children.items():
            walk(child, f"{name} {child_name}".strip())

    walk(typer.main.get_command(app), "")
    return found


def registry(tmp_path: Path) -> Path:
    """Two nodes whose agents refuse at once (nothing listens on port 1)."""
    path = tmp_path / "registry.csv"
    path.write_text(
        "id,state,address\nbk1:3181,writable,127.0.0.1:1\nbk2:3181,readonly,127.0.0.1:1\n"
    )
    return path


#: Small inputs for each command whose --json is checked here (seconds in all).
JSON_RUNS: dict[str, Callable[[Path], list[str]]] = {
    "topology": lambda _: ["-i", str(SAMPLE)],
    "config": lambda _: [],
    "inventory": lambda _: [
        "--load-reports",
        str(SAMPLE.parents[3] / "examples" / "shedding" / "load-reports"),
    ],
    "place": lambda _: [
        *("-i", str(SAMPLE), "--cluster", "bk-prod", "-E", "3", "-W", "2", "-A", "2", "-n", "20")
    ],
    "allocate": lambda _: [
        *("-i", str(EXAMPLES / "allocation" / "inventory.csv")),
        *("-r", str(EXAMPLES / "allocation" / "requests.csv")),
    ],
    "rebalance": lambda _: [
        *("-i", str(EXAMPLES / "rebalance" / "inventory.csv")),
        *("-a", str(EXAMPLES / "rebalance" / "assignment.json")),
        *("--log-dirs", str(EXAMPLES / "rebalance" / "log-dirs.json")),
    ],
    "shed": lambda _: [
        *("-i", str(EXAMPLES / "shedding" / "inventory.csv")),
        *("--brokers", str(EXAMPLES / "shedding" / "node_metrics.csv")),
        *("--bundles", str(EXAMPLES / "shedding" / "bundle_metrics.csv"), "--until-balanced"),
    ],
    "bookieinfo": lambda tmp: ["--registry", str(registry(tmp)), "--timeout", "2"],
    "generate-fleet": lambda tmp: [
        *("--out", str(tmp / "fleet"), "--clusters", "1", "--brokers", "2", "--bookies", "3"),
        *("--bundles", "4", "--minutes", "2"),
    ],
    "simulate shedding": lambda _: ["--brokers", "6", "--trials", "2"],
    "simulate diskfill": lambda _: ["--scenario", "seed"],
}

#: Commands whose --json is checked elsewhere: they need Spark or a pipeline output, or run
#: until stopped (one JSON line per event).
JSON_ELSEWHERE = {
    "agent": "tests/online/test_agents.py",
    "execute": "tests/execute/test_cli_execute.py (a cluster: the dry run's document, one "
    "JSON line per event of a run)",
    "watch": "test_watch_prints_json_lines below",
    "report": "tests/report/test_render.py::test_report_command",
    "pipeline run": "tests/pipeline/test_standalone.py",
    "pipeline stream": "tests/pipeline/test_stream.py (one JSON line per trigger)",
    "sweep shedding": "tests/pipeline/test_sweeps.py::test_cli_json_summary",
    "sweep diskfill": "not yet: needs Spark",
}


def test_every_command_takes_json() -> None:
    """Every command, and every subcommand of a group, has --json."""
    commands = leaf_commands()
    missing = [n for n, c in commands.items() if not any("--json" in p.opts for p in c.params)]
    assert not missing, f"no --json: {missing}"
    assert set(commands) == set(JSON_RUNS) | set(JSON_ELSEWHERE), "a command is not listed here"


@pytest.mark.parametrize("command", sorted(JSON_RUNS))
def test_json_is_one_document_and_nothing_is_drawn(
    command: str, tmp_path: Path, terminal_stderr: io.StringIO
) -> None:
    """--json prints one JSON object on stdout, and no progress display even on a terminal."""
    result = runner.invoke(app, [*command.split(), *JSON_RUNS[command](tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict) and doc
    assert terminal_stderr.getvalue() == ""


@pytest.mark.parametrize(
    ("command", "module", "drawn"),
    [
        ("place", "place", ["placing"]),
        ("allocate", "allocate", ["allocating 198 replicas", "evening out the batch"]),
    ],
)
def test_large_runs_draw_progress_on_stderr(
    command: str,
    module: str,
    drawn: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    terminal_stderr: io.StringIO,
) -> None:
    """place and allocate show a progress bar from a size up (here: from any size), on stderr;
    stdout holds the table alone; --json draws nothing."""
    monkeypatch.setattr(importlib.import_module(f"trimtab.cli.{module}"), "_PROGRESS_FROM", 0)
    args = [command, *JSON_RUNS[command](tmp_path)]
    people = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert people.exit_code == 0, people.output
    for text in drawn:
        assert text in terminal_stderr.getvalue()
        assert text not in people.stdout
    assert "\x1b[" not in people.stdout and "┃ node" in people.stdout
    terminal_stderr.seek(0)
    terminal_stderr.truncate()
    assert json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert terminal_stderr.getvalue() == ""


def test_bookieinfo_waits_with_a_spinner_and_lists_the_failures(
    tmp_path: Path, terminal_stderr: io.StringIO
) -> None:
    """While the nodes are asked, stderr says how many and the timeout; the table lists each
    node with its error, and the totals count only nodes that answered."""
    result = runner.invoke(
        app, ["bookieinfo", "--registry", str(registry(tmp_path)), "--timeout", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "asking 2 nodes (timeout 2 s)" in terminal_stderr.getvalue()
    assert "Free disk space info" in result.stdout and "unavailable" in result.stdout
    assert "0 of 2 nodes answered" in result.stdout and "asking" not in result.stdout
    doc = json.loads(
        runner.invoke(
            app, ["bookieinfo", "--registry", str(registry(tmp_path)), "--timeout", "2", "--json"]
        ).stdout
    )
    assert [(b["id"], b["state"], b["free_bytes"]) for b in doc["bookies"]] == [
        ("bk1:3181", "writable", None),
        ("bk2:3181", "readonly", None),
    ]
    assert all(b["error"] for b in doc["bookies"]) and doc["total_bytes"] == 0


def test_generate_fleet_prints_a_table_of_the_tables_written(tmp_path: Path) -> None:
    """The people's view: one row per table written with its rows and malformed rows."""
    result = runner.invoke(
        app, ["generate-fleet", *JSON_RUNS["generate-fleet"](tmp_path)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "fleet written to" in result.stdout and (tmp_path / "fleet" / "nodes").is_dir()
    for table in ("nodes", "node_metrics", "bundle_metrics"):
        assert f"│ {table}" in result.stdout


@pytest.mark.server
@pytest.mark.subprocess
def test_watch_prints_json_lines(tmp_path: Path) -> None:
    """`trimtab watch --json` (until SIGTERM) prints one JSON line when it is watching and one
    when it stops, nothing else on stdout."""
    exe = shutil.which("trimtab", path=str(Path(sys.executable).parent))
    assert exe is not None
    args = ["watch", "--registry", str(registry(tmp_path)), "--metrics-port", "0", "--json"]
    with subprocess.Popen(
        [exe, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as proc:
        assert proc.stdout is not None
        try:
            readable, _, _ = select.select([proc.stdout], [], [], 30)
            assert readable, "watch printed nothing in 30 s"
            ready = json.loads(proc.stdout.readline())
        finally:
            proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert ready["event"] == "watching" and ready["membership"] == "registry"
    assert ready["metrics_url"] == f"http://127.0.0.1:{ready['metrics_port']}/metrics"
    assert [json.loads(line) for line in rest.splitlines()] == [{"event": "stopped"}]


def test_a_mistyped_choice_names_the_nearest_good_one() -> None:
    """`--mode continous` (a typo) gets one error line that names `continuous`."""
    result = CliRunner().invoke(
        app,
        [
            "rebalance",
            *("-i", "examples/rebalance/inventory.csv"),
            *("-a", "examples/rebalance/assignment.json"),
            *("--mode", "continous"),
        ],
    )
    assert result.exit_code == 2
    assert result.output.count("error:") == 1 and "did you mean 'continuous'?" in result.output


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield prefix, group
    for name, command in getattr(group, "commands", {}).items():
        yield from _commands(command, (*prefix, name))


def test_help_texts_read_as_written() -> None:
    """--help is read by people and rendered as Rich markup: every option's help must show as
    written (``[namespace]`` would vanish, ``[/chroot]`` crashed `shed --help`), and no
    reStructuredText from the docstrings (``x``, :class:) may show."""
    import typer.main
    from rich.text import Text

    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            text = getattr(param, "help", None) or ""
            assert Text.from_markup(text).plain == text.replace("\\[", "["), (path, param.name)
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "``" not in result.output and ":class:" not in result.output, path
