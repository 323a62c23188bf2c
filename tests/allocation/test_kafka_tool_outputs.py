"""The current assignment read as Kafka's and Redpanda's tools print it, whole.

Fixtures in ``tests/data/tools/`` are named after the tool and version whose output they are
(``kafka-3.9-reassign-generate.txt``, ``rpk-24.2-cluster-partitions-list.json``); see the
README there for how each was made.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.errors import InputError
from trimtab.systems.kafka.readers import read_log_dirs, read_reassignment
from trimtab.systems.kafka.tool_output import parse_reassign_output

ROOT = Path(__file__).parents[2]
TOOLS = ROOT / "tests" / "data" / "tools"
EXAMPLES = ROOT / "examples" / "rebalance"
runner = CliRunner()


def _assignment() -> dict[tuple[str, int], list[int]]:
    return {(t, p): r for t, p, r in read_reassignment(EXAMPLES / "assignment.json")}


def test_generate_output_is_read_as_its_current_assignment() -> None:
    """The whole --generate stdout (two headed JSON documents) gives the first: the current
    assignment, every partition of the example."""
    got = {(t, p): r for t, p, r in read_reassignment(TOOLS / "kafka-3.9-reassign-generate.txt")}
    assert got == _assignment()


def test_generate_output_keeps_the_proposal_apart() -> None:
    """The proposal is parsed too, and it is not taken for the current assignment."""
    text = (TOOLS / "kafka-3.9-reassign-generate.txt").read_text()
    out = parse_reassign_output(text, "generate")
    assert out is not None and out.kind == "generate"
    assert len(out.proposed) == len(out.current) == 14
    assert out.proposed != out.current


@pytest.mark.parametrize(
    ("fixture", "count"),
    [
        ("kafka-3.9-reassign-execute.txt", 3),
        ("kafka-3.9-reassign-execute-throttle.txt", 1),
    ],
    ids=["execute of three partitions", "execute with --throttle, one partition"],
)
def test_execute_output_is_read_as_the_rollback(fixture: str, count: int) -> None:
    """--execute prints the assignment before the move (the rollback) between status lines."""
    got = read_reassignment(TOOLS / fixture)
    assert len(got) == count
    assert all(_assignment()[(t, p)] == r for t, p, r in got)


def test_verify_output_is_refused_saying_what_it_is_and_what_to_give() -> None:
    """--verify prints states, not replicas: the refusal names it and the --generate command."""
    with pytest.raises(InputError) as caught:
        read_reassignment(TOOLS / "kafka-3.9-reassign-verify.txt")
    message = str(caught.value)
    assert "--verify" in message and "--generate" in message


def test_verify_states_are_parsed() -> None:
    """Each line of --verify becomes the partition's state."""
    text = (TOOLS / "kafka-3.9-reassign-verify.txt").read_text()
    out = parse_reassign_output(text, "verify")
    assert out is not None and out.kind == "verify"
    assert out.states == {
        ("orders", 0): "completed",
        ("orders", 1): "in_progress",
        ("orders", 2): "mismatch",
    }


def test_broker_ids_as_strings_are_read(tmp_path: Path) -> None:
    """A reassignment JSON whose replicas are strings of digits is the same assignment."""
    doc = json.loads((EXAMPLES / "assignment.json").read_text())
    for entry in doc["partitions"]:
        entry["replicas"] = [str(r) for r in entry["replicas"]]
        entry["partition"] = str(entry["partition"])
    path = tmp_path / "strings.json"
    path.write_text(json.dumps(doc, indent=2))
    got = {(t, p): r for t, p, r in read_reassignment(path)}
    assert got == _assignment()


def test_pretty_printed_json_after_status_lines_is_read(tmp_path: Path) -> None:
    """A document spread over many lines after the tool's header is one document."""
    doc = json.loads((EXAMPLES / "assignment.json").read_text())
    path = tmp_path / "pretty.txt"
    path.write_text("Current partition replica assignment\n\n" + json.dumps(doc, indent=4) + "\n")
    assert {(t, p): r for t, p, r in read_reassignment(path)} == _assignment()


def test_log_dirs_with_string_broker_ids(tmp_path: Path) -> None:
    """kafka-log-dirs output whose broker ids are strings is read as numbers."""
    text = (EXAMPLES / "log-dirs.json").read_text()
    lines = text.splitlines()
    at = next(k for k, line in enumerate(lines) if line.lstrip().startswith("{"))
    doc = json.loads("\n".join(lines[at:]))
    for broker in doc["brokers"]:
        broker["broker"] = str(broker["broker"])
    path = tmp_path / "log-dirs.json"
    path.write_text("\n".join([*lines[:at], json.dumps(doc)]))
    assert read_log_dirs(path).used == read_log_dirs(EXAMPLES / "log-dirs.json").used


@pytest.mark.parametrize(
    "fixture",
    ["rpk-24.2-cluster-partitions-list.txt", "rpk-24.2-cluster-partitions-list.json"],
    ids=["rpk cluster partitions list table", "rpk cluster partitions list --format json"],
)
def test_rpk_cluster_partitions_list_is_read_without_internal_namespaces(fixture: str) -> None:
    """Table and JSON give the kafka namespace's partitions with their replica sets."""
    got = {(t, p): r for t, p, r in read_reassignment(TOOLS / fixture)}
    assert got == _assignment()


def test_rpk_topic_describe_all_is_read_with_sorted_replicas() -> None:
    """rpk topic describe -a names each topic in SUMMARY; its replicas come sorted."""
    got = {(t, p): r for t, p, r in read_reassignment(TOOLS / "rpk-24.2-topic-describe-a.txt")}
    assert got == {k: sorted(v) for k, v in _assignment().items()}


def test_rpk_topic_describe_format_json_is_read_with_sorted_replicas() -> None:
    """rpk 24.3.2's ``topic describe --format json`` (one line, every section) gives the same
    partitions as the table: each topic's summary names it, replicas come sorted."""
    fixture = TOOLS / "rpk-24.3.2-topic-describe-format-json.json"
    assert len(fixture.read_text().splitlines()) == 1  # Go's json.Marshal, then Println
    got = {(t, p): r for t, p, r in read_reassignment(fixture)}
    assert got == {k: sorted(v) for k, v in _assignment().items()}


def test_rpk_topic_describe_json_with_a_bad_replica_names_it(tmp_path: Path) -> None:
    """A describedTopic whose replicas are not broker ids is refused naming the element."""
    doc = json.loads((TOOLS / "rpk-24.3.2-topic-describe-format-json.json").read_text())
    doc[1]["partitions"][2]["replicas"] = ["x"]
    path = tmp_path / "describe.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"\[1\]\.partitions\[2\]"):
        read_reassignment(path)


def test_rpk_topic_describe_without_a_topic_name_says_to_use_a(tmp_path: Path) -> None:
    """The -p table alone names no topic: the refusal says which rpk command to save."""
    text = (TOOLS / "rpk-24.2-topic-describe-a.txt").read_text()
    table = text[text.index("PARTITION  LEADER") :].split("\n\n")[0]
    path = tmp_path / "p.txt"
    path.write_text(table + "\n")
    with pytest.raises(InputError, match="rpk topic describe -a"):
        read_reassignment(path)


def test_another_kind_of_file_is_named_with_the_command_to_run() -> None:
    """An inventory given as the assignment: the refusal says what it seems to be and how to
    make an assignment."""
    with pytest.raises(InputError) as caught:
        read_reassignment(EXAMPLES / "inventory.csv")
    message = str(caught.value)
    assert "seems to be a CSV table" in message
    assert "kafka-reassign-partitions.sh" in message


def test_log_dirs_refusal_names_what_it_got() -> None:
    """An assignment given as --log-dirs: named as a reassignment JSON, with the command."""
    with pytest.raises(InputError) as caught:
        read_log_dirs(EXAMPLES / "assignment.json")
    assert "a Kafka reassignment JSON" in str(caught.value)
    assert "kafka-log-dirs.sh" in str(caught.value)


@pytest.mark.parametrize(
    "fixture",
    [
        "kafka-3.9-reassign-generate.txt",
        "kafka-3.9-reassign-execute.txt",
        "rpk-24.2-cluster-partitions-list.txt",
        "rpk-24.2-cluster-partitions-list.json",
        "rpk-24.2-topic-describe-a.txt",
        "rpk-24.3.2-topic-describe-format-json.json",
    ],
)
def test_rebalance_takes_each_tool_output(fixture: str) -> None:
    """The command a user types takes the saved outputs as --assignment."""
    result = runner.invoke(
        app,
        ["rebalance", "-i", str(EXAMPLES / "inventory.csv"), "-a", str(TOOLS / fixture), "--json"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.stderr
    assert "moves" in json.loads(result.stdout)


def test_rebalance_refuses_verify_output_with_one_error_line() -> None:
    """--verify output as --assignment: exit 2 (bad input), one error line, no traceback."""
    result = runner.invoke(
        app,
        [
            "rebalance",
            "-i",
            str(EXAMPLES / "inventory.csv"),
            "-a",
            str(TOOLS / "kafka-3.9-reassign-verify.txt"),
        ],
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
