"""Roles and states mean the same in every command: ledgers go to bookies, bundles to
writable brokers, partitions to brokers; an unknown role is refused as ``bad_role``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from trimtab.cli import app

EXAMPLES = Path(__file__).parents[1] / "examples"
runner = CliRunner()


def with_roles(source: Path, target: Path, changes: dict[str, dict[str, str]]) -> Path:
    """``source`` (a CSV inventory) with a ``role`` column and some cells changed, by node."""
    lines = source.read_text().splitlines()
    header = [*lines[0].split(","), "role"]
    rows = []
    for line in lines[1:]:
        row = dict(zip(header, [*line.split(","), ""], strict=True))
        row |= changes.get(row["node"], {})
        rows.append(",".join(row[c] for c in header))
    target.write_text("\n".join([",".join(header), *rows]) + "\n")
    return target


def invoke(*args: str) -> dict[str, object]:
    result = runner.invoke(app, [*args, "--json"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_place_puts_ledgers_on_bookies_only(tmp_path: Path) -> None:
    """Brokers are never in an ensemble; a node of role zookeeper is refused, not used."""
    inventory = with_roles(
        EXAMPLES / "allocation" / "inventory.csv",
        tmp_path / "nodes.csv",
        {"1": {"role": "broker"}, "2": {"role": "zookeeper"}, "3": {"role": "bookie"}},
    )
    doc = invoke("place", "-i", str(inventory), "-E", "2", "-W", "2", "-A", "2", "--count", "50")
    inclusion = doc["inclusion"]
    assert isinstance(inclusion, dict)
    assert "1" not in inclusion and "2" not in inclusion and "3" in inclusion


def test_allocate_puts_partitions_on_brokers_only(tmp_path: Path) -> None:
    """A bookie of the inventory gets no replica; nodes of empty role are brokers too."""
    inventory = with_roles(
        EXAMPLES / "allocation" / "inventory.csv", tmp_path / "nodes.csv", {"1": {"role": "bookie"}}
    )
    requests = EXAMPLES / "allocation" / "requests.csv"
    result = runner.invoke(app, ["allocate", "-i", str(inventory), "-r", str(requests), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    nodes = {str(n) for a in doc["assignments"] for n in a["replicas"]}
    assert nodes and "1" not in nodes


def shed_args(inventory: Path) -> list[str]:
    shedding = EXAMPLES / "shedding"
    return [
        "shed",
        "--inventory",
        str(inventory),
        "--brokers",
        str(shedding / "node_metrics.csv"),
        "--bundles",
        str(shedding / "bundle_metrics.csv"),
        "--until-balanced",
    ]


def destinations(doc: dict[str, object]) -> set[str]:
    transfers = doc["transfers"]
    assert isinstance(transfers, list)
    return {t["destination"] for t in transfers if t["destination"]}


def test_shed_sends_bundles_to_writable_brokers_only(tmp_path: Path) -> None:
    """A broker that took bundles takes none once read-only; a bookie is no broker at all."""
    plain = with_roles(EXAMPLES / "shedding" / "inventory.csv", tmp_path / "a.csv", {})
    taken = sorted(destinations(invoke(*shed_args(plain))))
    assert taken
    readonly, bookie = taken[0], "broker1.example.net:8080"
    changed = with_roles(
        EXAMPLES / "shedding" / "inventory.csv",
        tmp_path / "b.csv",
        {readonly: {"state": "readonly"}, bookie: {"role": "bookie"}},
    )
    doc = invoke(*shed_args(changed))
    assert readonly not in destinations(doc) and bookie not in destinations(doc)
    assert bookie not in json.dumps(doc["brokers"])
