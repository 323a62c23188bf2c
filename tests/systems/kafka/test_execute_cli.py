"""``trimtab execute`` as a user types it, against the Kafka broker stand-in through the real
kafka-python client: in-process (CliRunner, the run's clock driving the stand-in's simulated
time) and as a process killed with SIGKILL mid-run, then resumed or aborted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.standins.kafka import Cluster, KafkaStandin
from tests.systems.kafka.helpers import StandinClock
from trimtab.cli import app
from trimtab.execute.journal import read_journal
from trimtab.plans.document import Action, PlanDocument

MB = 1_000_000
N = 6
runner = CliRunner()


def _plan(cluster: Cluster, path: Path) -> PlanDocument:
    """t/i moves replica i%3+1 to broker i%3+4 (10 MB each), as `rebalance --plan` writes."""
    actions = []
    for i in range(N):
        before = [1, 2, 3]
        after = [b if b != i % 3 + 1 else i % 3 + 4 for b in before]
        actions.append(
            Action(
                id=f"a{i}",
                kind="reassign",
                item=f"t/{i}",
                precondition={"replicas": before},
                target={"replicas": after},
                effect={"bytes": 10 * MB, "moves": [{"from": i % 3 + 1, "to": i % 3 + 4}]},
            )
        )
    plan = PlanDocument(
        system="kafka",
        cluster="standin",
        created="2026-11-28T12:00:00Z",
        actions=tuple(actions),
        source={"argv": ["trimtab", "rebalance", "--plan", str(path)]},
        summary={"actions": N, "bytes": N * 10 * MB},
        settings={"concurrent_moves": 2},
    )
    path.write_text(plan.dumps())
    return plan


def _cluster(scale: float) -> Cluster:
    cluster = Cluster(scale=scale)
    for broker in range(1, 7):
        cluster.add_broker(broker, f"rack-{broker % 3}")
    for i in range(N):
        cluster.add_partition("t", i, [1, 2, 3], size=10 * MB)
    return cluster


def _targets(plan: PlanDocument) -> dict[tuple[str, int], list[int]]:
    return {("t", int(a.item.split("/")[1])): list(a.target["replicas"]) for a in plan.actions}


def _replicas(cluster: Cluster) -> dict[tuple[str, int], list[int]]:
    return {k: list(p.replicas) for k, p in cluster.partitions.items()}


def _no_throttle_left(cluster: Cluster) -> bool:
    return not any(cluster.configs.values())


@dataclass
class Setup:
    cluster: Cluster
    standin: KafkaStandin
    plan: PlanDocument
    path: Path
    clock: StandinClock

    def execute(self, *args: str) -> Any:
        return runner.invoke(
            app,
            [
                "execute",
                str(self.path),
                *args,
                "--bootstrap-servers",
                self.standin.bootstrap,
                "--poll-interval",
                "1",
                "--timeout",
                "5",
            ],
            env={"COLUMNS": "200"},
        )


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    cluster = _cluster(scale=0.0)
    clock = StandinClock(cluster)
    monkeypatch.setattr("trimtab.cli.execute.make_clock", lambda: clock)
    with KafkaStandin(cluster) as standin:
        path = tmp_path / "plan.json"
        yield Setup(cluster, standin, _plan(cluster, path), path, clock)


@pytest.mark.server
def test_the_dry_run_makes_no_write_call(setup: Setup) -> None:
    """Without --approve: every precondition checked, the digest printed, nothing written."""
    result = setup.execute("--throttle", "10MB/s")
    assert result.exit_code == 0, result.output
    assert setup.plan.digest in result.output
    assert setup.cluster.writes == 0 and setup.cluster.reads > 0


@pytest.mark.server
def test_a_wrong_digest_is_refused(setup: Setup) -> None:
    """An approval of another digest is one error line, and nothing is written."""
    result = setup.execute("--approve", "0" * 64)
    assert result.exit_code == 2 and result.output.count("error:") == 1
    assert setup.cluster.writes == 0


@pytest.mark.server
def test_approve_runs_the_plan_to_its_assignment(setup: Setup) -> None:
    """--approve moves every partition once, throttled, and removes the throttle after."""
    result = setup.execute("--approve", setup.plan.digest[:12], "--throttle", "5MB/s")
    assert result.exit_code == 0, result.output
    assert _replicas(setup.cluster) == _targets(setup.plan)
    assert set(setup.cluster.submissions.values()) == {1} and len(setup.cluster.submissions) == N
    assert setup.cluster.calls["IncrementalAlterConfigs"] > 0
    assert _no_throttle_left(setup.cluster)


@pytest.mark.server
def test_a_precondition_broken_mid_run_exits_3(setup: Setup) -> None:
    """Someone else moves a later partition while the run moves: exit 3, naming it."""

    def meddle(sleeps: int) -> None:
        if sleeps == 1:
            setup.cluster.set_replicas("t", 5, [3, 2, 1])

    setup.clock.on_sleep = meddle
    result = setup.execute("--approve", setup.plan.digest, "--max-in-flight", "2")
    assert result.exit_code == 3, result.output
    assert "t/5" in result.output
    assert setup.cluster.submissions[("t", 5)] == 0
    assert _no_throttle_left(setup.cluster)


@pytest.mark.server
def test_rollback_gives_back_the_original_assignment(setup: Setup) -> None:
    """--rollback writes the reverse plan with its own digest; approved, it restores all."""
    original = _replicas(setup.cluster)
    assert setup.execute("--approve", setup.plan.digest).exit_code == 0
    dry = setup.execute("--rollback")
    assert dry.exit_code == 0, dry.output
    reverse = json.loads((setup.path.parent / "plan.rollback.json").read_text())
    assert reverse["rollback_of"] == setup.plan.digest
    done = setup.execute("--rollback", "--approve", reverse["digest"])
    assert done.exit_code == 0, done.output
    assert _replicas(setup.cluster) == original
    assert _no_throttle_left(setup.cluster)


# -- a real process, killed mid-run ---------------------------------------------------------


def _trimtab() -> list[str]:
    script = Path(sys.executable).with_name("trimtab")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from trimtab.cli import main; main()"]


def _command(path: Path, bootstrap: str, *args: str) -> list[str]:
    """``trimtab execute PATH ARGS`` against ``bootstrap``, polling fast."""
    return [
        *_trimtab(), "execute", str(path), *args, "--bootstrap-servers", bootstrap,
        "--poll-interval", "0.05", "--timeout", "5",
    ]  # fmt: skip


def _journal_states(journal: Path) -> list[str]:
    if not journal.exists():
        return []
    states = []
    for line in journal.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("record") == "action":
            states.append(str(rec.get("state")))
    return states


@pytest.fixture
def killed_run(tmp_path: Path) -> Iterator[Setup]:
    """A run as its own process, SIGKILLed once a move is in flight (a throttle set)."""
    cluster = _cluster(scale=1.0)  # simulated time is real time here
    with KafkaStandin(cluster) as standin:
        path = tmp_path / "plan.json"
        plan = _plan(cluster, path)
        setup = Setup(cluster, standin, plan, path, StandinClock(cluster))
        proc = subprocess.Popen(
            _command(
                path,
                standin.bootstrap,
                "--approve",
                plan.digest,
                "--throttle",
                "2MB/s",
                "--max-in-flight",
                "2",
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        journal = tmp_path / "plan.journal.jsonl"
        deadline = time.monotonic() + 60
        while "started" not in _journal_states(journal) and proc.poll() is None:
            assert time.monotonic() < deadline, "the run started no move"
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        while cluster.calls["AlterPartitionReassignments"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()
        assert any(cluster.configs.values()), "the killed run left its throttle"
        yield setup


def _run(setup: Setup, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _command(setup.path, setup.standin.bootstrap, *args),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.server
@pytest.mark.subprocess
def test_sigkill_then_resume_runs_every_action_exactly_once(killed_run: Setup) -> None:
    """After SIGKILL, --resume finishes the plan: each partition submitted once, none lost,
    and the throttle the killed run left is removed."""
    resumed = _run(killed_run, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    cluster = killed_run.cluster
    assert _replicas(cluster) == _targets(killed_run.plan)
    assert dict(cluster.submissions) == {("t", i): 1 for i in range(N)}
    assert _no_throttle_left(cluster)
    state = read_journal(killed_run.path.parent / "plan.journal.jsonl")
    assert len(state.with_state("done")) == N


@pytest.mark.server
@pytest.mark.subprocess
def test_abort_after_sigkill_cancels_moves_and_clears_throttles(killed_run: Setup) -> None:
    """--abort cancels the moves the killed run left in flight and removes its throttle."""
    cluster = killed_run.cluster
    cluster.clock.set_scale(0.0)  # nothing completes while the abort runs
    moving = [k for k, p in cluster.partitions.items() if p.moving]
    assert moving, "the killed run left no move in flight"
    aborted = _run(killed_run, "--abort")
    assert aborted.returncode == 0, aborted.stderr
    assert not any(p.moving for p in cluster.partitions.values())
    assert all(cluster.cancels[k] == 1 for k in moving)
    assert all(cluster.partitions[k].replicas == [1, 2, 3] for k in moving)
    assert _no_throttle_left(cluster)


@pytest.mark.server
def test_a_wrong_password_is_one_error_line_and_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SASL refused: exit 2, one error line naming the brokers; the password is in no output;
    the readable --command-config gets its warning."""
    cluster = _cluster(scale=0.0)
    monkeypatch.setattr("trimtab.cli.execute.make_clock", lambda: StandinClock(cluster))
    password = "Wr0ng-Passw0rd-x"
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{password}";\n'
    )
    config.chmod(0o644)
    with KafkaStandin(cluster, users={"admin": "the-right-one"}) as standin:
        path = tmp_path / "plan.json"
        plan = _plan(cluster, path)
        result = runner.invoke(
            app,
            [
                "execute",
                str(path),
                "--approve",
                plan.digest,
                "--bootstrap-servers",
                standin.bootstrap,
                "--command-config",
                str(config),
                "--timeout",
                "5",
            ],
            env={"COLUMNS": "200"},
        )
    assert result.exit_code == 2, result.output
    assert result.output.count("error:") == 1 and "authentication failed" in result.output
    assert "chmod 600" in result.output
    assert password not in result.output
    assert cluster.writes == 0


def _dry_run_then_approve(
    cluster: Cluster, standin: KafkaStandin, path: Path, plan: dict[str, Any]
) -> Any:
    """`execute PLAN` (the dry run: the digest shown, nothing written), then `execute PLAN
    --approve DIGEST --throttle 50MB/s`; the approved run's result."""
    common = ["--bootstrap-servers", standin.bootstrap, "--poll-interval", "1"]
    dry = runner.invoke(app, ["execute", str(path), *common], env={"COLUMNS": "200"})
    assert dry.exit_code == 0, dry.output
    assert plan["digest"] in dry.output and cluster.writes == 0
    return runner.invoke(
        app,
        ["execute", str(path), "--approve", plan["digest"], "--throttle", "50MB/s", *common],
        env={"COLUMNS": "200"},
    )


@pytest.mark.server
def test_a_rebalance_plan_drains_a_broker_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rebalance --drain 3 --plan` on the example assignment, then `execute` on a cluster
    holding that assignment: the dry run, the approval, and broker 3 left empty."""
    examples = Path(__file__).resolve().parents[3] / "examples" / "rebalance"
    assignment = json.loads((examples / "assignment.json").read_text())
    cluster = Cluster(scale=0.0)
    for line in (examples / "inventory.csv").read_text().splitlines()[1:]:
        fields = line.split(",")
        cluster.add_broker(int(fields[1]), fields[3])
    cluster.load_assignment(assignment, size=10 * MB)
    monkeypatch.setattr("trimtab.cli.execute.make_clock", lambda: StandinClock(cluster))
    path = tmp_path / "drain.json"
    planned = runner.invoke(
        app,
        [
            "rebalance", "-i", str(examples / "inventory.csv"), "-a",
            str(examples / "assignment.json"), "--drain", "3", "--plan", str(path),
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert planned.exit_code == 0, planned.output
    plan = json.loads(path.read_text())
    with KafkaStandin(cluster) as standin:
        run = _dry_run_then_approve(cluster, standin, path, plan)
    assert run.exit_code == 0, run.output
    for action in plan["actions"]:
        topic, index = action["item"].rsplit("/", 1)
        assert cluster.partitions[(topic, int(index))].replicas == action["target"]["replicas"]
    assert not any(3 in p.replicas for p in cluster.partitions.values())
    assert _no_throttle_left(cluster)


@pytest.mark.server
def test_a_foreign_reassignment_mid_run_exits_3(setup: Setup) -> None:
    """Someone starts their own (slow) reassignment of a later partition: the run stops,
    on the changed precondition (3) or on the under-replication it causes (5), never
    submitting or cancelling that partition."""

    def meddle(sleeps: int) -> None:
        if sleeps == 1:
            setup.cluster.stall("t", 4)
            setup.cluster.foreign_reassignment("t", 4, [6, 5, 4])

    setup.clock.on_sleep = meddle
    result = setup.execute("--approve", setup.plan.digest, "--max-in-flight", "2")
    assert result.exit_code in (3, 5), result.output
    assert "t/4" in result.output and setup.cluster.submissions[("t", 4)] == 0
    assert setup.cluster.partitions[("t", 4)].target == [6, 5, 4]  # theirs left alone
    assert setup.cluster.cancels[("t", 4)] == 0
    assert _no_throttle_left(setup.cluster)


@pytest.mark.server
def test_dropped_connections_mid_run_are_survived(setup: Setup) -> None:
    """The brokers drop every connection while moves run: the run carries on to the end."""
    dropped: list[int] = []

    def drop(sleeps: int) -> None:
        if sleeps in (1, 3):
            dropped.append(setup.standin.drop_connections())

    setup.clock.on_sleep = drop
    result = setup.execute("--approve", setup.plan.digest, "--throttle", "5MB/s")
    assert result.exit_code == 0, result.output
    assert dropped and all(n > 0 for n in dropped)
    assert _replicas(setup.cluster) == _targets(setup.plan)
    assert set(setup.cluster.submissions.values()) == {1}


@pytest.mark.server
def test_a_stalled_move_stops_the_run_as_abort(setup: Setup) -> None:
    """A move that makes no progress past --stall-timeout, with --abort-on 0: the run stops as
    --abort does: the moves in flight cancelled, the throttle removed."""
    setup.cluster.stall("t", 0)
    result = setup.execute(
        "--approve", setup.plan.digest, "--throttle", "5MB/s", "--max-in-flight", "2",
        "--stall-timeout", "10", "--abort-on", "0",
    )  # fmt: skip
    assert result.exit_code == 5, result.output
    assert not any(p.moving for p in setup.cluster.partitions.values())
    assert setup.cluster.partitions[("t", 0)].replicas == [1, 2, 3]
    assert setup.cluster.cancels[("t", 0)] == 1
    assert _no_throttle_left(setup.cluster)


@pytest.mark.server
def test_a_broker_going_away_mid_run_stops_it(setup: Setup) -> None:
    """A destination broker leaves while the first moves run: the run stops (a node gone is
    harm, and the actions that need it no longer hold), its throttle removed."""

    def leave(sleeps: int) -> None:
        if sleeps == 1:
            setup.standin.stop_broker(6)

    setup.clock.on_sleep = leave
    result = setup.execute(
        "--approve", setup.plan.digest, "--throttle", "5MB/s", "--max-in-flight", "2",
        "--abort-on", "0",
    )  # fmt: skip
    assert result.exit_code in (3, 5), result.output
    assert not any(p.target and 6 in p.target for p in setup.cluster.partitions.values())
    assert setup.cluster.submissions[("t", 2)] == 0 and setup.cluster.submissions[("t", 5)] == 0
    assert _no_throttle_left(setup.cluster)


@pytest.mark.server
def test_a_sasl_run_keeps_the_password_out_of_every_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole run over SASL/SCRAM: the password is in neither stdout/stderr, --json events,
    the journal nor the plan."""
    cluster = _cluster(scale=0.0)
    monkeypatch.setattr("trimtab.cli.execute.make_clock", lambda: StandinClock(cluster))
    password = "Sc4am-Secret-value"
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{password}";\n'
    )
    config.chmod(0o600)
    with KafkaStandin(cluster, users={"admin": password}) as standin:
        path = tmp_path / "plan.json"
        plan = _plan(cluster, path)
        result = runner.invoke(
            app,
            [
                "execute", str(path), "--approve", plan.digest, "--json", "--throttle", "5MB/s",
                "--bootstrap-servers", standin.bootstrap, "--command-config", str(config),
                "--poll-interval", "1",
            ],
            env={"COLUMNS": "200"},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _replicas(cluster) == _targets(plan)
    written = [p for p in tmp_path.iterdir() if p.is_file() and p != config]
    assert {p.name for p in written} >= {"plan.json", "plan.journal.jsonl"}
    assert not any(password in text for text in [result.output, *(p.read_text() for p in written)])


@pytest.mark.server
def test_a_cordon_plan_moves_replicas_between_dirs_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rebalance --cordon 3:/data/d1 --plan` on kafka-log-dirs output (issue 40 part 7), then
    `execute` on a cluster holding that assignment and those dirs: the dry run writes nothing,
    the approved run moves every replica of broker 3's /data/d1 to /data/d2 through
    AlterReplicaLogDirs (throttled, the throttle given back), and DescribeLogDirs through the
    real client shows /data/d1 empty. A Redpanda plan pinning dirs is refused up front."""
    from dataclasses import replace

    from kafka import KafkaAdminClient

    from trimtab.plans.document import load_plan

    data = Path(__file__).resolve().parents[2] / "data" / "tools"
    current = data / "kafka-3.9-reassign-jbod-current.json"
    log_dirs = data / "kafka-3.9-log-dirs-describe-jbod.txt"
    inventory = tmp_path / "inventory.csv"
    rows = ["cluster,node,rack,cores,memory_bytes,disk_total_bytes,nic_bps,state"]
    rows += [f"prod,{b},rack-{b},8,{2**36},{10**12},{10**10},writable" for b in range(1, 5)]
    inventory.write_text("\n".join(rows) + "\n")
    cluster = Cluster(scale=0.0)
    cluster.load_assignment(json.loads(current.read_text()))
    cluster.load_log_dirs(log_dirs.read_text())
    cluster.fast_rate = 10**11
    monkeypatch.setattr("trimtab.cli.execute.make_clock", lambda: StandinClock(cluster))
    path = tmp_path / "cordon.json"
    args = ["rebalance", "-i", str(inventory), "-a", str(current), "--log-dirs", str(log_dirs)]
    planned = runner.invoke(app, [*args, "--cordon", "3:/data/d1", "--plan", str(path)])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(path.read_text())
    moving = {a["item"] for a in plan["actions"]}
    assert moving and all(a["effect"]["dir_moves"] for a in plan["actions"])
    with KafkaStandin(cluster) as standin:
        run = _dry_run_then_approve(cluster, standin, path, plan)
        assert run.exit_code == 0, run.output
        admin = KafkaAdminClient(bootstrap_servers=standin.bootstrap)
        try:
            seen = admin.describe_log_dirs(None, [3])
        finally:
            admin.close()
    dirs = {d["log_dir"]: d for entry in seen for d in entry["log_dirs"]}
    assert dirs["/data/d1"]["topics"] == [], dirs["/data/d1"]
    in_d2 = {
        (t["name"], p["partition_index"])
        for t in dirs["/data/d2"]["topics"]
        for p in t["partitions"]
    }
    assert {tuple(i.rsplit("/", 1)) for i in moving} <= {(t, str(p)) for t, p in in_d2}
    assert cluster.calls["AlterReplicaLogDirs"] >= 1 and _no_throttle_left(cluster)
    assert all(cluster.partitions[k].future == {} for k in cluster.partitions)
    redpanda = tmp_path / "redpanda.json"
    redpanda.write_text(replace(load_plan(path), system="redpanda").dumps())
    refused = runner.invoke(app, ["execute", str(redpanda), "--bootstrap-servers", "127.0.0.1:1"])
    assert refused.exit_code == 2 and refused.output.count("error:") == 1, refused.output
    assert "one data directory per node" in refused.output and "127.0.0.1:1" not in refused.output
