"""The ``trimtab`` command as a user runs it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
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
        "\n".join([*lines, "bk-prod,bk99:3181,us-east,rack1,8,1,10,20,1,writable"]) + "\n"
    )
    result = runner.invoke(app, ["topology", "-i", str(bad)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert f"{bad}:26" in result.stderr and "disk_free_bytes 20 is above" in result.stderr
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
        "upstream": ["minNumRacksPerWriteQuorum"],
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


def test_installed_entry_point_runs() -> None:
    """The console script installed by pip works as a real process."""
    exe = shutil.which("trimtab", path=str(Path(sys.executable).parent))
    assert exe is not None, "the trimtab script is not installed next to this interpreter"
    proc = subprocess.run(
        [exe, "topology", "-i", str(SAMPLE), "--json"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert {c["cluster"] for c in json.loads(proc.stdout)["clusters"]} == {"bk-prod", "pulsar-prod"}
