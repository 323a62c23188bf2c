"""``trimtab rebalance`` as a user runs it: real Kafka tool outputs in, documents out, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.systems.kafka.readers import read_log_dirs, read_reassignment

EXAMPLES = Path(__file__).parents[2] / "examples" / "rebalance"
BASE = (
    "-i",
    str(EXAMPLES / "inventory.csv"),
    "-a",
    str(EXAMPLES / "assignment.json"),
)
FULL = (
    *BASE,
    "--log-dirs",
    str(EXAMPLES / "log-dirs.json"),
    "--health",
    str(EXAMPLES / "health.csv"),
)
runner = CliRunner()
WIDE = {"COLUMNS": "200"}


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["rebalance", *args], env=WIDE)
    return result.exit_code, result.stdout, result.stderr


def test_json_has_exactly_the_issues_keys_and_moves_off_the_down_and_full_brokers() -> None:
    """Broker 2 is down since January, broker 6 is 88 % full: every replica of 2 moves, 6
    gets under 80 %, and the document has the keys the issue lists."""
    code, out, err = run(*FULL, "--rack-aware", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {
        "moves",
        "cancelled",
        "unfixable",
        "counts_by_reason",
        "balance_before",
        "balance_after",
        "bytes_moved",
        # issue 40: the lower bound, what balancing adds, rack diversity lost
        "lower_bound_moves",
        "lower_bound_bytes",
        "lower_bound_terms",
        "balancing",
        "rack_diversity_lowered",
        # issue 40 parts 6-7: moves between log dirs, brokers closed by cordons
        "log_dir_moves",
        "all_moves",
        "lower_bound_all_moves",
        "closed_brokers",
    }
    assert set(doc["moves"][0]) == {
        "topic",
        "partition",
        "from",
        "to",
        "reason",
        "bytes",
        "required",
    }
    held_by_2 = sum(2 in r for _, _, r in read_reassignment(EXAMPLES / "assignment.json"))
    assert doc["counts_by_reason"]["node_unavailable"] == held_by_2
    assert doc["counts_by_reason"]["disk_full"] >= 1
    assert all(m["to"] not in (2, 6) for m in doc["moves"])
    assert doc["bytes_moved"] == sum(m["bytes"] for m in doc["moves"])
    assert doc["balance_after"] <= doc["balance_before"]


def test_the_documents_hold_only_changed_partitions_and_roll_back(tmp_path: Path) -> None:
    """--output writes the reassignment of the changed partitions and, beside it, their
    current assignment; applying one then the other gives the assignment back."""
    target = tmp_path / "reassign.json"
    code, _, err = run(*FULL, "--drain", "3", "-o", str(target))
    assert code == 0, err
    proposed = read_reassignment(target)
    current = read_reassignment(tmp_path / "reassign.rollback.json")
    original = {(t, p): r for t, p, r in read_reassignment(EXAMPLES / "assignment.json")}
    assert [(t, p) for t, p, _ in proposed] == [(t, p) for t, p, _ in current]
    assert all(original[(t, p)] == r for t, p, r in current)
    assert all(original[(t, p)] != r for t, p, r in proposed)
    assert all(3 not in r for _, _, r in proposed)


def test_kafka_format_prints_current_then_proposed_as_generate_does() -> None:
    """Without --output, both documents on stdout under Kafka's own headings."""
    code, out, _ = run(*BASE, "--drain", "3", "--format", "kafka-reassignment")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert "Proposed partition reassignment configuration" in lines
    assert json.loads(lines[-1])["version"] == 1


def test_the_budget_bounds_the_partitions_reassigned() -> None:
    """--max-moves 2: two partitions change, the rest are listed as left for a later plan."""
    code, out, _ = run(*BASE, "--drain", "3", "--max-moves", "2", "--json")
    doc = json.loads(out)
    assert code == 0 and len({(m["topic"], m["partition"]) for m in doc["moves"]}) == 2
    drains = [u for u in doc["unfixable"] if u["reason"] == "node_decommissioning"]
    assert drains and all(u["why"].startswith("left for a later plan") for u in drains)


def test_an_earlier_plan_whose_target_went_down_is_cancelled(tmp_path: Path) -> None:
    """The --json of a running plan (--in-progress) is cancelled where its target is down."""
    code, out, _ = run(*BASE, "--drain", "3", "--max-moves", "1", "--json")
    assert code == 0
    running = tmp_path / "running.json"
    running.write_text(out)
    target = json.loads(out)["moves"][0]["to"]
    health = tmp_path / "health.csv"
    health.write_text(f"node,state,down_since\n{target},down,\n")
    code, out, err = run(*BASE, "--in-progress", str(running), "--health", str(health), "--json")
    assert code == 0, err
    assert len(json.loads(out)["cancelled"]) == 1


def test_the_table_names_reasons_and_moves() -> None:
    code, out, _ = run(*FULL, "--rack-aware")
    assert code == 0
    assert "node_unavailable" in out and "down past the timeout: 2" in out and "88.0%" in out


def test_log_dirs_status_lines_and_future_replicas(tmp_path: Path) -> None:
    """The tool's leading status lines are skipped; future replicas (a move under way) and
    log dirs answering with an error are left out of the sizes."""
    doc = {
        "version": 1,
        "brokers": [
            {
                "broker": 1,
                "logDirs": [
                    {
                        "logDir": "/a",
                        "error": None,
                        "partitions": [
                            {
                                "partition": "my-topic-0",
                                "size": 10,
                                "offsetLag": 0,
                                "isFuture": False,
                            },
                            {
                                "partition": "my-topic-0",
                                "size": 4,
                                "offsetLag": 0,
                                "isFuture": True,
                            },
                        ],
                    },
                    {"logDir": "/b", "error": "KafkaStorageException", "partitions": []},
                ],
            },
            {
                "broker": 2,
                "logDirs": [
                    {
                        "logDir": "/a",
                        "error": None,
                        "partitions": [
                            {
                                "partition": "my-topic-0",
                                "size": 12,
                                "offsetLag": 0,
                                "isFuture": False,
                            }
                        ],
                    }
                ],
            },
        ],
    }
    path = tmp_path / "dirs.txt"
    path.write_text("Querying brokers for log directories information\n" + json.dumps(doc))
    dirs = read_log_dirs(path)
    assert dirs.sizes == {("my-topic", 0): {1: 10, 2: 12}} and dirs.size("my-topic", 0) == 12
    assert dirs.used == {1: 10, 2: 12} and len(dirs.errors) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--drain", "9"), "'9' is not a broker of cluster 'kafka-prod'"),
        (("--mode", "sometimes"), "--mode 'sometimes' is unknown"),
        (("--format", "xml"), "--format 'xml' is unknown"),
        (("--log-dirs", "/nonexistent.json"), "does not exist"),
    ],
    ids=["unknown broker", "unknown mode", "unknown format", "missing log dirs"],
)
def test_user_errors_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    code, _, err = run(*BASE, *args)
    assert code == 2 and message in err and err.startswith("error:")


def test_a_bad_health_state_is_refused_with_the_row(tmp_path: Path) -> None:
    health = tmp_path / "health.csv"
    health.write_text("node,state\n3,sleeping\n")
    code, _, err = run(*BASE, "--health", str(health))
    assert code == 2 and "health row rejected" in err and "sleeping" in err
