"""``trimtab rebalance --cordon BROKER:DIR`` (KIP-1066, issue 40 part 6) as a user types it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.cli.rebalance_cordon import CLOSED_WHY
from trimtab.systems.kafka.readers import read_log_dirs

runner = CliRunner()
BROKERS = 6
GB = 10**9


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[str, ...]:
    """6 brokers in 3 racks; 60 RF3 partitions; broker 3 has two log dirs (/data/d1 and
    /data/d2), every other broker one (/data/d1), as kafka-log-dirs.sh --describe prints."""
    rng = random.Random(6)
    inventory = tmp_path / "inventory.csv"
    rows = ["cluster,node,rack,cores,memory_bytes,disk_total_bytes,nic_bps,state"]
    rows += [
        f"prod,{b},rack-{'abc'[(b - 1) // 2]},8,{2**36},{10_000 * GB},{10**10},writable"
        for b in range(1, BROKERS + 1)
    ]
    inventory.write_text("\n".join(rows) + "\n")
    partitions: list[dict[str, object]] = []
    held: dict[tuple[int, str], list[dict[str, object]]] = {}
    for k in range(60):
        topic, p = f"topic-{k % 3}", k // 3
        replicas = rng.sample(range(1, BROKERS + 1), 3)
        partitions.append({"topic": topic, "partition": p, "replicas": replicas})
        for b in replicas:
            where = "/data/d2" if b == 3 and k % 2 else "/data/d1"
            held.setdefault((b, where), []).append(
                {
                    "partition": f"{topic}-{p}",
                    "size": rng.randrange(1, 50) * GB,
                    "offsetLag": 0,
                    "isFuture": False,
                }
            )
    assignment = tmp_path / "assignment.json"
    assignment.write_text(json.dumps({"version": 1, "partitions": partitions}))
    brokers = [
        {
            "broker": b,
            "logDirs": [
                {"logDir": d, "error": None, "partitions": held.get((b, d), [])}
                for d in (["/data/d1", "/data/d2"] if b == 3 else ["/data/d1"])
            ],
        }
        for b in range(1, BROKERS + 1)
    ]
    log_dirs = tmp_path / "log-dirs.txt"
    log_dirs.write_text(
        "Querying brokers for log directories information\n"
        "Received log directory information from brokers 1,2,3,4,5,6\n"
        + json.dumps({"version": 1, "brokers": brokers})
        + "\n"
    )
    return ("-i", str(inventory), "-a", str(assignment), "--log-dirs", str(log_dirs))


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["rebalance", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def _held_by(args: tuple[str, ...], broker: int) -> int:
    doc = json.loads(Path(args[3]).read_text())
    return sum(broker in p["replicas"] for p in doc["partitions"])


def test_the_log_dirs_of_each_broker_are_read(cluster: tuple[str, ...]) -> None:
    dirs = read_log_dirs(cluster[5])
    assert dirs.dirs[3] == ("/data/d1", "/data/d2")
    assert dirs.dirs[6] == ("/data/d1",)


def test_cordoning_a_brokers_only_log_dir_empties_it(cluster: tuple[str, ...]) -> None:
    """KIP-1066: a broker whose log dirs are all cordoned takes no replica; emptying its one
    dir moves exactly its replicas, all required, and that is the lower bound."""
    code, out, err = run(*cluster, "--cordon", "6:/data/d1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["moves"]) == _held_by(cluster, 6) == doc["lower_bound_moves"]
    assert all(m["from"] == 6 and m["to"] != 6 and m["required"] for m in doc["moves"])
    assert doc["closed_brokers"] == [{"broker": 6, "log_dirs": ["/data/d1"], "why": CLOSED_WHY}]
    code, out, err = run(*cluster, "--cordon", "6:/data/d1")
    assert code == 0, err
    assert f"closed: broker 6 (/data/d1): {CLOSED_WHY}" in " ".join(out.split())


def test_cordoning_every_dir_of_a_jbod_broker_drains_it(cluster: tuple[str, ...]) -> None:
    code, out, err = run(*cluster, "--cordon", "3:/data/d1", "--cordon", "3:/data/d2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["moves"]) == _held_by(cluster, 3) == doc["lower_bound_moves"]
    assert all(m["to"] != 3 for m in doc["moves"])


def test_cordoning_one_dir_of_several_is_refused_not_planned_wrongly(
    cluster: tuple[str, ...],
) -> None:
    """Emptying /data/d1 while /data/d2 stays open needs an intra-broker move (part 7, not
    planned yet): one error line, no plan."""
    code, _, err = run(*cluster, "--cordon", "3:/data/d1")
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "/data/d2" in lines[0] and "inside the broker" in lines[0]


def test_a_bad_broker_dir_names_the_nearest_good_one(cluster: tuple[str, ...]) -> None:
    code, _, err = run(*cluster, "--cordon", "3:/data/d3")
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --cordon 3:/data/d3")
    assert "did you mean 3:/data/d" in lines[0]


def test_cordon_needs_the_log_dirs(cluster: tuple[str, ...]) -> None:
    code, _, err = run(*cluster[:4], "--cordon", "6:/data/d1")
    assert code != 0
    assert err.strip().startswith("error: --cordon needs --log-dirs")


def test_the_real_format_log_dirs_of_a_jbod_broker_drain_it_when_all_are_cordoned() -> None:
    """The kafka-log-dirs.sh fixture (tests/data/tools/README.md): cordoning both of broker
    3's log dirs moves exactly broker 3's replicas of the example assignment (and
    broker 6's full disk, its own term)."""
    tools = Path(__file__).parents[1] / "data" / "tools"
    examples = Path(__file__).parents[2] / "examples" / "rebalance"
    args = (
        "-i",
        str(examples / "inventory.csv"),
        "-a",
        str(examples / "assignment.json"),
        "--log-dirs",
        str(tools / "kafka-4.1-log-dirs-describe-jbod.txt"),
    )
    assert read_log_dirs(args[5]).dirs[3] == ("/data/d1", "/data/d2")
    code, out, err = run(*args, "--cordon", "3:/data/d1", "--cordon", "3:/data/d2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    drained = [m for m in doc["moves"] if m["reason"] == "node_decommissioning"]
    assert len(drained) == _held_by(args, 3) == doc["lower_bound_terms"]["node_decommissioning"]
    assert all(m["from"] == 3 for m in drained)
    assert not any(m["to"] == 3 for m in doc["moves"])  # broker 6's full disk relieved elsewhere
    assert len(doc["moves"]) == doc["lower_bound_moves"]
