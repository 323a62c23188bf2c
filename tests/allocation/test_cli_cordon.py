"""``trimtab rebalance`` and cordoned log dirs (issue 40 part 6, KIP-1066): no replica goes to a
broker whose log dirs are all cordoned, and ``--cordon BROKER:DIR`` empties one dir, inside
its broker when another dir has room, else to other brokers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from trimtab.cli import app

runner = CliRunner()
DATA = Path(__file__).parents[1] / "data" / "tools"
LOG_DIRS = DATA / "kafka-3.9-log-dirs-describe-jbod.txt"
CURRENT = DATA / "kafka-3.9-reassign-jbod-current.json"
GB = 10**9


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["rebalance", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def inventory(tmp_path: Path, brokers: int = 4) -> Path:
    path = tmp_path / "inventory.csv"
    rows = ["cluster,node,rack,cores,memory_bytes,disk_total_bytes,nic_bps,state"]
    rows += [f"prod,{b},rack-{b},8,{2**36},{1000 * GB},{10**10},writable" for b in range(1, 5)]
    rows += [
        f"prod,{b},rack-{b},8,{2**36},{1000 * GB},{10**10},writable" for b in range(5, brokers + 1)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def with_dir_fields(tmp_path: Path, fields: dict[tuple[int, str], dict[str, Any]]) -> Path:
    """The JBOD fixture with some dirs given capacity or cordon fields (as a document written
    from DescribeLogDirs v4/v5 carries them)."""
    text = LOG_DIRS.read_text()
    head, _, body = text.rpartition("\n{")
    doc = json.loads("{" + body)
    for broker in doc["brokers"]:
        for d in broker["logDirs"]:
            d.update(fields.get((broker["broker"], d["logDir"]), {}))
    path = tmp_path / "log-dirs.txt"
    path.write_text(head + "\n" + json.dumps(doc) + "\n")
    return path


def replicas_in(path: Path, broker: int, log_dir: str) -> set[tuple[str, int]]:
    text = path.read_text()
    doc = json.loads(text[text.index("{") :])
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            if b["broker"] == broker and d["logDir"] == log_dir:
                return {
                    (p["partition"].rsplit("-", 1)[0], int(p["partition"].rsplit("-", 1)[1]))
                    for p in d["partitions"]
                }
    return set()


def dir_sizes(path: Path, broker: int) -> dict[str, list[int]]:
    """Each log dir of ``broker`` in a kafka-log-dirs document: its replicas' sizes."""
    text = path.read_text()
    doc = json.loads(text[text.index("{") :])
    return {
        d["logDir"]: [p["size"] for p in d["partitions"]]
        for b in doc["brokers"]
        if b["broker"] == broker
        for d in b["logDirs"]
    }


def test_cordon_of_a_dir_moves_its_replicas_to_the_other_dir_of_the_broker(
    tmp_path: Path,
) -> None:
    """What a user types: --cordon 3:/data/d1 on kafka-log-dirs output with no capacities.
    Every replica of 3:/data/d1 moves to 3:/data/d2 (no network bytes); nothing moves
    between brokers; the moves inside brokers are their own lower bound."""
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(LOG_DIRS)]
    code, out, err = run(*args, "--cordon", "3:/data/d1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    held = replicas_in(LOG_DIRS, 3, "/data/d1")
    assert held
    moved = {(m["topic"], m["partition"]) for m in doc["log_dir_moves"]}
    assert moved == held
    assert all(m["broker"] == 3 and m["to_dir"] == "/data/d2" for m in doc["log_dir_moves"])
    assert doc["moves"] == []
    code, out, err = run(*args, "--cordon", "3:/data/d1")
    assert code == 0, err
    assert f"no network bytes): {len(held)};" in out
    assert f"all moves (between and inside brokers) / lower bound: {len(held)} / {len(held)}" in out


def test_cordon_without_room_sends_the_replicas_to_other_brokers(tmp_path: Path) -> None:
    """The other dir is full (capacities known): the replicas leave broker 3, required
    moves with reason log_dir_cordoned. The bound between brokers does not take that choice
    as the only one: /data/d1's bytes must leave broker 3, but sending /data/d2's largest
    away would make room too, so it is the fewest of broker 3's largest replicas that carry
    /data/d1's bytes. All moves together (each replica of /data/d1 moves once at least) are
    bounded by its 13 replicas, which the plan meets."""
    d1 = replicas_in(LOG_DIRS, 3, "/data/d1")
    logs = with_dir_fields(
        tmp_path,
        {(3, "/data/d2"): {"totalBytes": 10**9, "usableBytes": 0}},
    )
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(logs)]
    code, out, err = run(*args, "--cordon", "3:/data/d1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["log_dir_moves"] == []
    assert {(m["topic"], m["partition"]) for m in doc["moves"]} == d1
    assert all(m["from"] == 3 and m["reason"] == "log_dir_cordoned" for m in doc["moves"])
    assert all(m["required"] for m in doc["moves"])
    sizes = dir_sizes(LOG_DIRS, 3)
    need = sum(sizes["/data/d1"])
    largest = sorted(sizes["/data/d1"] + sizes["/data/d2"], reverse=True)
    fewest = next(k for k in range(len(largest) + 1) if sum(largest[:k]) >= need)
    assert fewest < len(d1)
    assert doc["lower_bound_moves"] == fewest == doc["lower_bound_terms"]["log_dir_cordoned"]
    assert doc["lower_bound_bytes"] == need
    assert doc["all_moves"] == doc["lower_bound_all_moves"] == len(d1)


def test_a_broker_whose_dirs_are_all_cordoned_takes_no_replica(tmp_path: Path) -> None:
    """KIP-1066's placer rule: broker 4 has both dirs cordoned (isCordoned, DescribeLogDirs
    v5); a drain of broker 1 sends nothing to it, and the output says it is closed and why."""
    logs = with_dir_fields(
        tmp_path,
        {(4, "/data/d1"): {"isCordoned": True}, (4, "/data/d2"): {"isCordoned": True}},
    )
    args = ["-i", str(inventory(tmp_path, 6)), "-a", str(CURRENT), "--log-dirs", str(logs)]
    code, out, err = run(*args, "--drain", "1", "--max-moves", "100", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["moves"]
    assert all(m["to"] != 4 for m in doc["moves"])
    assert doc["closed_brokers"] == [
        {"broker": 4, "why": "all log dirs cordoned: /data/d1, /data/d2"}
    ]
    code, out, err = run(*args, "--drain", "1", "--max-moves", "100")
    assert "closed to new replicas: broker 4 (all log dirs cordoned: /data/d1, /data/d2)" in out


def test_one_cordoned_dir_leaves_its_broker_open(tmp_path: Path) -> None:
    logs = with_dir_fields(tmp_path, {(4, "/data/d1"): {"isCordoned": True}})
    args = ["-i", str(inventory(tmp_path, 6)), "-a", str(CURRENT), "--log-dirs", str(logs)]
    code, out, err = run(*args, "--drain", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["closed_brokers"] == []


def test_a_bad_cordon_is_one_error_line_naming_the_nearest_good_one(tmp_path: Path) -> None:
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(LOG_DIRS)]
    for cordon, expected in (
        ("3:/data/d3", "did you mean 3:/data/d"),
        ("9:/data/d1", "broker 9 has no log dir"),
        ("3", "write BROKER:DIR"),
    ):
        code, out, err = run(*args, "--cordon", cordon)
        assert code == 2, (cordon, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --cordon"), err
        assert expected in lines[0]


def test_cordon_needs_the_log_dirs(tmp_path: Path) -> None:
    code, _, err = run("-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--cordon", "3:/d")
    assert code == 2
    assert err.strip().startswith("error: --cordon needs --log-dirs")


def test_output_pins_log_dirs_as_kafka_reassign_partitions_takes_them(tmp_path: Path) -> None:
    """-o writes the log_dirs field (ReassignPartitionsCommand's format): the moved replica's
    new directory, "any" for the others; the rollback pins the old directory; both read back
    as assignments (the replicas are unchanged)."""
    out = tmp_path / "proposed.json"
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(LOG_DIRS)]
    code, _, err = run(*args, "--cordon", "3:/data/d1", "-o", str(out))
    assert code == 0, err
    proposed = json.loads(out.read_text())
    rollback = json.loads(out.with_suffix(".rollback.json").read_text())
    held = replicas_in(LOG_DIRS, 3, "/data/d1")
    assert {(p["topic"], p["partition"]) for p in proposed["partitions"]} == held
    for doc, where in ((proposed, "/data/d2"), (rollback, "/data/d1")):
        for p in doc["partitions"]:
            assert p["log_dirs"] == [where if b == 3 else "any" for b in p["replicas"]]
    current = {
        (p["topic"], p["partition"]): p["replicas"]
        for p in json.loads(CURRENT.read_text())["partitions"]
    }
    assert all(
        p["replicas"] == current[(p["topic"], p["partition"])] for p in proposed["partitions"]
    )
    again = run("-i", str(inventory(tmp_path)), "-a", str(out), "--json")
    assert again[0] == 0, again[2]


def test_plan_document_reassign_target_carries_log_dirs(tmp_path: Path) -> None:
    """--plan: each moved replica's partition is a required reassign action whose target has
    log_dirs; its bytes are in effect.dir_moves, none in effect.bytes; the digest verifies."""
    from trimtab.plans.document import load_plan

    plan_file = tmp_path / "plan.json"
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(LOG_DIRS)]
    code, _, err = run(*args, "--cordon", "3:/data/d1", "--plan", str(plan_file))
    assert code == 0, err
    plan = load_plan(plan_file)
    assert plan.actions
    argv = plan.source["argv"]  # --replan types it again: the repeatable option once per value
    assert argv[argv.index("--cordon") + 1] == "3:/data/d1" and "()" not in argv
    for action in plan.actions:
        assert action.kind == "reassign" and action.required
        assert action.target["replicas"] == action.precondition["replicas"]
        assert action.target["log_dirs"] == [
            "/data/d2" if b == 3 else "any" for b in action.target["replicas"]
        ]
        assert action.effect["bytes"] == 0
        assert [d["to_dir"] for d in action.effect["dir_moves"]] == ["/data/d2"]
    assert plan.summary["dir_moves"] == len(plan.actions)


def test_optimal_keeps_the_cordon(tmp_path: Path) -> None:
    """--optimal with --cordon: the exact program keeps the dir's replicas off broker 3 when
    its other dir has no room (reason log_dir_cordoned), and the moves inside the broker when
    it has (it used to drop both: a plan that left the dir as it was)."""
    full = with_dir_fields(tmp_path, {(3, "/data/d2"): {"totalBytes": 10**9, "usableBytes": 0}})
    d1 = replicas_in(LOG_DIRS, 3, "/data/d1")
    for logs, inside in ((full, False), (LOG_DIRS, True)):
        args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(logs)]
        code, out, err = run(*args, "--cordon", "3:/data/d1", "--optimal", "--json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["optimal"]["status"] == "optimal"
        if inside:
            assert doc["moves"] == []
            assert {(m["topic"], m["partition"]) for m in doc["log_dir_moves"]} == d1
        else:
            assert doc["log_dir_moves"] == []
            assert {(m["topic"], m["partition"]) for m in doc["moves"]} == d1
            assert {m["reason"] for m in doc["moves"]} == {"log_dir_cordoned"}
        assert doc["all_moves"] >= doc["lower_bound_all_moves"]


def test_a_drained_broker_moves_nothing_between_its_dirs(tmp_path: Path) -> None:
    """--drain 3 with --cordon 3:/data/d1: every replica of broker 3 leaves it, so moving
    /data/d1's replicas to /data/d2 first would be 13 wasted copies (it did so): none is
    planned, and all moves are the drain's, at the bound."""
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(LOG_DIRS)]
    code, out, err = run(*args, "--drain", "3", "--cordon", "3:/data/d1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["log_dir_moves"] == []
    assert {m["from"] for m in doc["moves"]} == {3}
    assert {m["reason"] for m in doc["moves"]} == {"node_decommissioning"}
    assert len(doc["moves"]) == doc["lower_bound_moves"] == doc["lower_bound_all_moves"]


def test_balancing_sends_away_the_replicas_of_an_emptied_dir_first(tmp_path: Path) -> None:
    """--mode continuous with /data/d1 of broker 3 and /data/d2 of broker 2 emptied: count
    balancing takes replicas off both brokers; it takes those of the emptied dirs first
    (each would otherwise move inside its broker too), and no replica both moves between
    dirs and leaves its broker (they did: 47 moves in all against a bound of 33, now 35)."""
    args = ["-i", str(inventory(tmp_path)), "-a", str(CURRENT), "--log-dirs", str(LOG_DIRS)]
    cordons = ["--cordon", "3:/data/d1", "--cordon", "2:/data/d2", "--mode", "continuous"]
    code, out, err = run(*args, *cordons, "--json")
    assert code == 0, err
    doc = json.loads(out)
    left = {(m["topic"], m["partition"], m["from"]) for m in doc["moves"]}
    inside = {(m["topic"], m["partition"], m["broker"]) for m in doc["log_dir_moves"]}
    assert not left & inside
    emptied = {(t, p, 3) for t, p in replicas_in(LOG_DIRS, 3, "/data/d1")} | {
        (t, p, 2) for t, p in replicas_in(LOG_DIRS, 2, "/data/d2")
    }
    assert inside | (left & emptied) == emptied
    off = [m for m in doc["moves"] if m["from"] in (2, 3)]
    assert off and all((m["topic"], m["partition"], m["from"]) in emptied for m in off)
    assert doc["all_moves"] - doc["lower_bound_all_moves"] <= 2


def test_a_full_broker_missing_from_the_log_dirs_file_says_so(tmp_path: Path) -> None:
    """Broker 6 is over the disk limit but the --log-dirs file covers brokers 1-4 only: the
    plan cannot relieve it, and says the file must cover it (it said "give --log-dirs" to a
    user who had given it)."""
    examples = Path(__file__).parents[2] / "examples" / "rebalance" / "inventory.csv"
    args = ["-i", str(examples), "-a", str(CURRENT), "--log-dirs", str(LOG_DIRS)]
    code, out, err = run(*args, "--mode", "continuous", "--json")
    assert code == 0, err
    full = [u for u in json.loads(out)["unfixable"] if u["reason"] == "disk_full"]
    assert full and all("--log-dirs file" in u["why"] for u in full)
    assert all("must cover this broker" in u["why"] for u in full)
