"""``trimtab inventory --load-reports``: the ``nodes`` table from saved Pulsar load reports,
completed by ``--defaults``, read back by ``trimtab topology`` (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from trimtab.cli import app

__all__: list[str] = []

runner = CliRunner()
REPORTS = Path(__file__).parent.parent / "examples" / "shedding" / "load-reports"


def _defaults(tmp_path: Path) -> Path:
    path = tmp_path / "defaults.csv"
    path.write_text(
        "node,region,rack,disk_total_bytes\n,eu-central,rack1,500000000000\nBROKER2:8080,,rack2,\n",
        encoding="utf-8",
    )
    return path


def test_reports_limits_become_capacities_and_defaults_fill_the_rest(tmp_path: Path) -> None:
    args = ["inventory", "--load-reports", str(REPORTS), "--cluster", "pulsar-eu"]
    result = runner.invoke(app, [*args, "--defaults", str(_defaults(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    nodes = {n["node"]: n for n in json.loads(result.stdout)["nodes"]}
    assert sorted(nodes) == [f"broker{i}:8080" for i in range(1, 6)]
    one = nodes["broker1:8080"]
    # cpu limit 400 (percent of one core) = 4 cores; memory 4096 MiB; NIC 10,000,000 Kbit/s
    assert (one["cores"], one["memory_bytes"], one["nic_bps"]) == (4, 4 * 2**30, 10**10)
    assert one["sources"]["cores"] == "measured"
    assert one["sources"]["disk_total_bytes"] == "given"
    assert one["missing"] == []
    assert nodes["broker2:8080"]["rack"] == "rack2"  # the node's own row, its id in any case


def test_written_inventory_is_read_back_by_topology(tmp_path: Path) -> None:
    out = tmp_path / "nodes.csv"
    args = ["inventory", "--load-reports", str(REPORTS), "--defaults", str(_defaults(tmp_path))]
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("cluster,node,region,rack,cores,memory_bytes")
    shown = runner.invoke(app, ["topology", "--inventory", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    assert "broker2:8080" in shown.stdout and "rack2" in shown.stdout


def test_missing_capacities_are_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["inventory", "--load-reports", str(REPORTS), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["nodes"][0]["missing"] == ["disk_total_bytes"]


def test_what_every_node_lacks_is_said_once_under_the_table(tmp_path: Path) -> None:
    """Every report lacks the disk: one line under the table says so, not a ``missing`` column
    repeating it on each line (it wrapped the table at 80 columns); when the nodes lack
    different things, the column is back."""
    out = tmp_path / "nodes.csv"
    args = ["inventory", "--load-reports", str(REPORTS), "-o", str(out)]
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, args)
    assert result.exit_code == 0, result.output
    header = next(x for x in result.output.splitlines() if "node" in x and "location" in x)
    table = [x for x in result.output.splitlines() if x[:1] in "┏┃┡│└"]
    assert "missing" not in header and table and max(map(len, table)) <= 80
    assert "- every node lacks disk_total_bytes: give them in --defaults" in result.output
    one_disk = tmp_path / "one.csv"
    one_disk.write_text("node,disk_total_bytes\nbroker1:8080,500000000000\n", encoding="utf-8")
    mixed = CliRunner(env={"COLUMNS": "120"}).invoke(app, [*args, "--defaults", str(one_disk)])
    assert mixed.exit_code == 0, mixed.output
    assert "4 nodes lack required values (column 'missing')" in mixed.output
    header = next(x for x in mixed.output.splitlines() if "node" in x and "location" in x)
    assert "missing" in header


def test_output_checked_before_work_and_one_source_required(tmp_path: Path) -> None:
    bad = runner.invoke(
        app, ["inventory", "--load-reports", str(REPORTS), "-o", str(tmp_path / "no" / "x.csv")]
    )
    assert bad.exit_code == 2
    assert "error:" in bad.output and "does not exist" in bad.output
    none = runner.invoke(app, ["inventory"])
    assert none.exit_code == 2 and "give one source" in none.output
    wrong = tmp_path / "d.csv"
    wrong.write_text("node,cpus\n,8\n")
    refused = runner.invoke(
        app, ["inventory", "--load-reports", str(REPORTS), "--defaults", str(wrong)]
    )
    assert refused.exit_code == 2 and "unknown column(s) cpus" in refused.output
