"""``trimtab inventory --bootstrap-servers`` against the Kafka stand-in: brokers and racks from
DescribeCluster, disks from DescribeLogDirs (KIP-827), the rest from ``--defaults``; the file
is read back by ``trimtab topology`` and ``trimtab rebalance`` (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.standins.kafka import KafkaStandin
from tests.standins.kafka.cluster import Cluster
from trimtab.cli import app

__all__: list[str] = []

runner = CliRunner()


def _defaults(tmp_path: Path) -> Path:
    path = tmp_path / "defaults.csv"
    path.write_text(
        "node,region,cores,memory_bytes,nic_bps\n,eu-west,8,68719476736,25000000000\n4,,16,,\n",
        encoding="utf-8",
    )
    return path


def test_inventory_from_the_standin(kafka_standin: KafkaStandin, tmp_path: Path) -> None:
    args = ["inventory", "--bootstrap-servers", kafka_standin.bootstrap, "--cluster", "prod"]
    result = runner.invoke(app, [*args, "--defaults", str(_defaults(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    nodes = {n["node"]: n for n in json.loads(result.stdout)["nodes"]}
    assert sorted(nodes) == ["1", "2", "3", "4"]
    one = nodes["1"]
    assert one["rack"] == "rack-1" and nodes["2"]["rack"] == "rack-0"
    assert one["disk_total_bytes"] == 4 * 10**12
    assert one["disk_free_bytes"] == 4 * 10**12 - 4 * 10**9  # four 1 GB replicas
    assert nodes["4"]["disk_free_bytes"] == 4 * 10**12  # holds nothing
    assert one["sources"]["disk_total_bytes"] == "measured"
    assert one["sources"]["cores"] == "given"
    assert nodes["4"]["cores"] == 16


def test_written_inventory_is_read_back(kafka_standin: KafkaStandin, tmp_path: Path) -> None:
    out = tmp_path / "inventory.csv"
    args = ["inventory", "--bootstrap-servers", kafka_standin.bootstrap, "-o", str(out)]
    result = runner.invoke(app, [*args, "--defaults", str(_defaults(tmp_path))])
    assert result.exit_code == 0, result.output
    shown = runner.invoke(app, ["topology", "--inventory", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    assert "rack-0" in shown.stdout and "rack-1" in shown.stdout


def test_unreachable_bootstrap_is_one_error_line() -> None:
    result = runner.invoke(
        app, ["inventory", "--bootstrap-servers", "127.0.0.1:1", "--timeout", "2"]
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:")


@pytest.mark.server
def test_a_broker_with_every_log_dir_cordoned_is_read_only(tmp_path: Path) -> None:
    """DescribeLogDirs v5 IsCordoned (KIP-1066) through kafka-python against the stand-in:
    broker 2's only log dir is cordoned, so the inventory writes it readonly: it takes no
    new replica (the allocator's rule for read-only nodes)."""
    cluster = kafka_cluster_with_cordon()
    with KafkaStandin(cluster) as standin:
        args = ["inventory", "--bootstrap-servers", standin.bootstrap, "--cluster", "prod"]
        result = runner.invoke(app, [*args, "--defaults", str(_defaults(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    nodes = {n["node"]: n for n in json.loads(result.stdout)["nodes"]}
    assert nodes["2"]["state"] == "readonly"
    assert nodes["1"]["state"] == nodes["3"]["state"] == nodes["4"]["state"] == "writable"


def kafka_cluster_with_cordon() -> Cluster:
    cluster = Cluster(scale=0.0)
    for broker in (1, 2, 3, 4):
        cluster.add_broker(broker, f"rack-{broker % 2}")
    cluster.brokers[2].cordoned = True
    cluster.add_partition("orders", 0, [1, 2, 3], size=10**9)
    return cluster
