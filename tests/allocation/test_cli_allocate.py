"""``trimtab allocate`` as a user runs it: the documented examples, outputs, and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app

EXAMPLES = Path(__file__).parents[2] / "examples" / "allocation"
INVENTORY = EXAMPLES / "inventory.csv"
REQUESTS = EXAMPLES / "requests.csv"
runner = CliRunner()
WIDE = {"COLUMNS": "200"}
#: cores, memory (64 GiB), disk (1 TB) and NIC (10 Gb/s) of a test broker.
CAPACITY = "4,68719476736,1000000000000,10000000000"
CAPACITY_8 = "8,68719476736,1000000000000,10000000000"


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["allocate", *args], env=WIDE)
    return result.exit_code, result.stdout, result.stderr


def test_the_summary_shows_nodes_cores_and_balance() -> None:
    """People get per-node replicas, their deviation from the capacity share, per-core
    counts and the balance figure; the read-only node is marked and gets nothing."""
    code, out, _ = run("-i", str(INVENTORY), "-r", str(REQUESTS), "--rack-aware")
    assert code == 0, out
    assert "kafka-prod: 66 partitions (198 replicas) allocated by constraints (rack-aware)" in out
    assert "balance 1.0" in out and "inactive" in out
    assert "4 6 6 6" in out  # a 4-core node: core 0 starts at the reserve of 2


def test_json_has_the_summary_keys_and_every_assignment() -> None:
    """--json: partitions, replicas, per_node, per_core, balance, and the assignments."""
    code, out, _ = run("-i", str(INVENTORY), "-r", str(REQUESTS), "--json", "--seed", "3")
    assert code == 0
    doc = json.loads(out)
    assert {"partitions", "replicas", "per_node", "per_core", "balance"} <= set(doc)
    assert (doc["partitions"], doc["replicas"]) == (66, 198)
    assert sum(doc["per_node"].values()) == 198 and doc["per_node"]["6"] == 0
    assert len(doc["per_core"]["5"]) == 16 and doc["mode"] == "constraints"
    # the 16-core node's share (40 %) is above one replica per partition: it is in all of them
    assert len(doc["assignments"]) == 66 and doc["per_node"]["5"] == 66


@pytest.mark.parametrize("mode", ["rfc", "constraints", "rendezvous"])
def test_kafka_reassignment_output_is_what_kafka_takes(mode: str) -> None:
    """--format kafka-reassignment: version 1, each partition's broker ids on distinct nodes."""
    code, out, _ = run(
        "-i", str(INVENTORY), "-r", str(REQUESTS), "--mode", mode, "--format", "kafka-reassignment"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["version"] == 1 and len(doc["partitions"]) == 66
    entry = doc["partitions"][0]
    assert set(entry) == {"topic", "partition", "replicas"}
    assert all(len(set(p["replicas"])) == 3 for p in doc["partitions"])
    assert all(6 not in p["replicas"] for p in doc["partitions"])  # broker 6 is read-only


def test_a_request_that_cannot_be_met_writes_nothing(tmp_path: Path) -> None:
    """Exit 2 with the file, line and reason; the --output file is not created."""
    requests = tmp_path / "r.csv"
    requests.write_text("topic,partitions,replication_factor\nok,5,3\ntoo-wide,1,6\n")
    target = tmp_path / "plan.json"
    code, out, err = run(
        "-i",
        str(INVENTORY),
        "-r",
        str(requests),
        "--format",
        "kafka-reassignment",
        "-o",
        str(target),
    )
    assert code == 2 and out == ""
    assert "r.csv:3" in err and "replication factor 6 is above the 5 node(s)" in err
    assert "nothing was allocated" in err and not target.exists()


def test_the_output_file_is_written_whole(tmp_path: Path) -> None:
    """With --output the JSON goes to the file and a note to stderr."""
    target = tmp_path / "reassign.json"
    code, out, err = run(
        "-i",
        str(INVENTORY),
        "-r",
        str(REQUESTS),
        "--format",
        "kafka-reassignment",
        "-o",
        str(target),
    )
    assert code == 0 and out == "" and "wrote 66 partitions" in err
    assert json.loads(target.read_text())["version"] == 1


def test_redpanda_key_names_in_a_config_file_set_capacity(tmp_path: Path) -> None:
    """topic_partitions_per_shard and topic_partitions_reserve_shard0 are read from --config."""
    config = tmp_path / "redpanda.properties"
    config.write_text("topic_partitions_per_shard=16\ntopic_partitions_reserve_shard0=0\n")
    code, out, _ = run("-i", str(INVENTORY), "-r", str(REQUESTS), "-c", str(config), "--json")
    assert code == 0 and json.loads(out)["capacity"]["2"] == 64
    code, out, _ = run(
        "-i", str(INVENTORY), "-r", str(REQUESTS), "-c", str(EXAMPLES / "redpanda.toml"), "--json"
    )
    doc = json.loads(out)
    assert code == 0 and doc["rack_aware"] and doc["capacity"]["2"] == 4000  # profile redpanda


def test_rejected_request_rows_stop_the_run(tmp_path: Path) -> None:
    """Bad rows are listed with their line and reason, and nothing is allocated."""
    requests = tmp_path / "r.csv"
    requests.write_text("topic,partitions,replication_factor\nok,5,3\nbad topic!,1,3\n")
    code, _, err = run("-i", str(INVENTORY), "-r", str(requests))
    assert code == 2 and "1 of 2 request rows rejected" in err and "bad topic name" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "rfc", "--rack-aware"], "rfc allocator has no rack awareness"),
        (["--mode", "fastest"], "--mode 'fastest' is unknown"),
        (["--json", "--format", "kafka-reassignment"], "cannot be combined"),
        (["--cluster", "nope"], "no cluster 'nope'"),
    ],
    ids=[
        "racks with the RFC allocator",
        "an unknown mode",
        "two output formats",
        "an unknown cluster",
    ],
)
def test_impossible_options_are_one_line_errors(args: list[str], message: str) -> None:
    """Each mistake exits 2 with a one-line reason."""
    code, _, err = run("-i", str(INVENTORY), "-r", str(REQUESTS), *args)
    assert code == 2 and message in err


def test_nodes_without_numeric_ids_need_a_broker_id_table(tmp_path: Path) -> None:
    """Kafka output for host-named nodes asks for --broker-ids, then uses it."""
    inventory = tmp_path / "nodes.csv"
    rows = ["cluster,node,cores,memory_bytes,disk_total_bytes,nic_bps,state"]
    rows += [f"k,kafka-{i}.example:9092,{CAPACITY},writable" for i in range(3)]
    inventory.write_text("\n".join(rows) + "\n")
    code, _, err = run("-i", str(inventory), "-r", str(REQUESTS), "--format", "kafka-reassignment")
    assert code == 2 and "--broker-ids" not in err and "node, broker_id" in err
    ids = tmp_path / "ids.csv"
    ids.write_text(
        "node,broker_id\n" + "".join(f"kafka-{i}.example:9092,{10 + i}\n" for i in range(3))
    )
    code, out, _ = run(
        "-i",
        str(inventory),
        "-r",
        str(REQUESTS),
        "--format",
        "kafka-reassignment",
        "--broker-ids",
        str(ids),
    )
    assert code == 0 and set(json.loads(out)["partitions"][0]["replicas"]) == {10, 11, 12}


def test_rebalancing_an_existing_assignment_moves_replicas_to_new_nodes(tmp_path: Path) -> None:
    """A plan written for three nodes, read back with two more nodes and --rebalance, moves
    replicas onto the newcomers and lists only moved and new partitions for Kafka."""
    small = tmp_path / "small.csv"
    header = "cluster,node,cores,memory_bytes,disk_total_bytes,nic_bps,state\n"
    small.write_text(header + "".join(f"k,{i},{CAPACITY},writable\n" for i in range(3)))
    current = tmp_path / "current.json"
    code, _, _ = run(
        "-i", str(small), "-r", str(REQUESTS), "--format", "kafka-reassignment", "-o", str(current)
    )
    assert code == 0
    grown = tmp_path / "grown.csv"
    grown.write_text(small.read_text() + f"k,3,{CAPACITY},writable\nk,4,{CAPACITY_8},writable\n")
    code, out, _ = run("-i", str(grown), "--existing", str(current), "--rebalance", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (
        doc["partitions"] == 0
        and doc["moved_replicas"] == doc["per_node"]["3"] + doc["per_node"]["4"]
    )
    assert doc["per_node"]["4"] == 2 * doc["per_node"]["3"] == 66
    code, out, _ = run(
        "-i",
        str(grown),
        "--existing",
        str(current),
        "--rebalance",
        "--format",
        "kafka-reassignment",
    )
    assert {p["topic"] for p in json.loads(out)["partitions"]} <= {"orders", "clicks", "audit-log"}


def test_help_lists_allocate() -> None:
    """The command is registered on the shared app."""
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "allocate" in result.stdout


def test_a_topic_that_exists_is_refused_unless_partitions_are_added(tmp_path: Path) -> None:
    """Requests for the topics of --existing: 'topic already exists' (exit 2, nothing written),
    and with --add-partitions their partitions come after the ones held."""
    current = tmp_path / "current.json"
    code, _, _ = run(
        "-i", str(INVENTORY), "-r", str(REQUESTS), "--format", "kafka-reassignment", "-o",
        str(current),
    )  # fmt: skip
    assert code == 0
    code, _, err = run("-i", str(INVENTORY), "-r", str(REQUESTS), "--existing", str(current))
    assert code == 2 and "topic already exists" in err and "--add-partitions" in err
    assert err.count("\n") == 1 and "requests.csv:2" in err
    code, out, _ = run(
        "-i", str(INVENTORY), "-r", str(REQUESTS), "--existing", str(current),
        "--add-partitions", "--json",
    )  # fmt: skip
    assert code == 0
    orders = sorted(
        a["partition"] for a in json.loads(out)["assignments"] if a["topic"] == "orders"
    )
    assert orders == list(range(12, 24))


def test_add_partitions_needs_the_current_assignment() -> None:
    code, _, err = run("-i", str(INVENTORY), "-r", str(REQUESTS), "--add-partitions")
    assert code == 2 and "--add-partitions acts on the current assignment" in err


def test_the_memory_limit_key_refuses_a_topic_that_would_exceed_it(tmp_path: Path) -> None:
    """topic_memory_per_partition in a config file: upstream's check_cluster_limits."""
    cfg = tmp_path / "trimtab.toml"
    cfg.write_text("[allocation]\ntopic_memory_per_partition = 1_000_000_000_000\n")
    code, _, err = run("-i", str(INVENTORY), "-r", str(REQUESTS), "--config", str(cfg))
    assert code == 2 and "exceed the memory limit" in err
