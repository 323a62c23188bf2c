"""``trimtab execute`` as a user types it, against the in-memory cluster (its connection
patched in: the real targets are tested against their stand-ins in tests/standins)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.execute.conftest import MB, sample
from tests.execute.fake import FakeClock, FakeCluster
from trimtab.cli import app
from trimtab.execute.journal import read_journal

runner = CliRunner()


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    """The fake cluster every ``trimtab execute`` of the test connects to."""
    _, replicas = sample()
    clock = FakeClock()
    fake = FakeCluster(clock, replicas)
    monkeypatch.setattr("trimtab.cli.execute.connect", lambda plan, flags, where: fake)
    monkeypatch.setattr("trimtab.cli.execute.make_clock", lambda: clock)
    return fake


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    plan, _ = sample()
    path = tmp_path / "plan.json"
    path.write_text(plan.dumps())
    return path


def execute(*args: str) -> Any:
    return runner.invoke(
        app,
        ["execute", *args, "--bootstrap-servers", "b:9092", "--poll-interval", "1"],
        env={"COLUMNS": "200"},
    )


def digest(path: Path) -> str:
    return str(json.loads(path.read_text())["digest"])


def test_the_dry_run_writes_nothing_and_prints_the_digest(
    cluster: FakeCluster, plan_file: Path
) -> None:
    """No --approve: every action checked, the digest and the estimate printed, no write."""
    result = execute(str(plan_file), "--throttle", "10MB/s")
    assert result.exit_code == 0, result.output
    assert digest(plan_file) in result.output
    assert "would run 6" in result.output
    assert "estimated duration at 10.0 MB/s" in result.output
    assert cluster.writes == 0 and cluster.reads >= 1
    assert not (plan_file.parent / "plan.journal.jsonl").exists()


def test_the_dry_run_without_a_throttle_says_what_the_estimate_needs(
    cluster: FakeCluster, plan_file: Path
) -> None:
    result = execute(str(plan_file))
    assert result.exit_code == 0, result.output
    assert "estimated duration: unknown without --throttle" in result.output
    assert '{"replicas"' not in result.output  # states read as lists, JSON is for --json


def test_the_dry_run_json_lists_every_action(cluster: FakeCluster, plan_file: Path) -> None:
    result = execute(str(plan_file), "--json", "--throttle", "1000000")
    doc = json.loads(result.stdout)
    assert doc["digest"] == digest(plan_file)
    assert doc["counts"]["ready"] == 6 and len(doc["actions"]) == 6
    # one batch (concurrent_moves 50): brokers 1..6 each take two 10 MB moves, at 1 MB/s
    assert doc["estimated_seconds"] == pytest.approx(20.0)
    assert cluster.writes == 0


def test_the_dry_run_exits_3_when_a_precondition_no_longer_holds(
    cluster: FakeCluster, plan_file: Path
) -> None:
    cluster.replicas["t/4"] = [9, 9, 9]
    result = execute(str(plan_file))
    assert result.exit_code == 3
    assert "changed" in result.output and cluster.writes == 0


def test_a_wrong_digest_is_refused_in_one_line(cluster: FakeCluster, plan_file: Path) -> None:
    result = execute(str(plan_file), "--approve", "0" * 64)
    assert result.exit_code == 2
    assert result.output.count("error:") == 1 and "does not match this plan" in result.output
    assert cluster.writes == 0


@pytest.mark.parametrize(
    ("approve", "why"),
    [("zz-not-hex", "not a hex digest"), ("abc", "at least 12"), ("0" * 64, "does not match")],
)
def test_a_bad_approval_is_refused_before_connecting(
    plan_file: Path, approve: str, why: str
) -> None:
    """The digest is checked before any connection: with nothing listening at the address,
    the user still hears about the typo, not about the unreachable cluster."""
    result = runner.invoke(
        app,
        ["execute", str(plan_file), "--approve", approve, "--bootstrap-servers", "127.0.0.1:1"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 2
    assert result.output.count("error:") == 1 and why in result.output
    assert "127.0.0.1:1" not in result.output


def test_approve_runs_the_plan_and_journals_it(cluster: FakeCluster, plan_file: Path) -> None:
    result = execute(str(plan_file), "--approve", digest(plan_file)[:12], "--throttle", "5MB/s")
    assert result.exit_code == 0, result.output
    assert all(n == 1 for n in cluster.submitted.values()) and len(cluster.submitted) == 6
    assert cluster.throttle is None
    state = read_journal(plan_file.parent / "plan.journal.jsonl", digest=digest(plan_file))
    assert len(state.with_state("done")) == 6 and state.stop == "done"
    assert state.control == str(plan_file.parent / "plan.control")
    again = execute(str(plan_file), "--approve", digest(plan_file))
    assert again.exit_code == 2 and "--resume" in again.output


def test_json_prints_one_event_per_line(cluster: FakeCluster, plan_file: Path) -> None:
    result = execute(
        str(plan_file), "--approve", digest(plan_file), "--json", "--throttle", "5MB/s"
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = {e["event"] for e in events}
    assert {"run", "control", "batch", "action", "throttle", "progress", "stop"} <= kinds
    assert events[-1] == events[-1] | {"event": "stop", "reason": "done", "exit": 0}


def test_a_changed_partition_mid_run_exits_3(cluster: FakeCluster, plan_file: Path) -> None:
    cluster.replicas["t/2"] = [1, 2, 9]
    result = execute(str(plan_file), "--approve", digest(plan_file))
    assert result.exit_code == 3
    assert "no longer holds" in result.output and "t/2" in result.output


def test_resume_and_abort_use_the_journal(cluster: FakeCluster, plan_file: Path) -> None:
    """An interrupted run (a changed partition) resumes after the fix; --abort after that
    has nothing in flight and leaves no throttle."""
    cluster.replicas["t/2"] = [1, 2, 9]
    assert execute(str(plan_file), "--approve", digest(plan_file)).exit_code == 3
    cluster.replicas["t/2"] = [1, 2, 3]
    result = execute(str(plan_file), "--resume")
    assert result.exit_code == 0, result.output
    assert all(n == 1 for n in cluster.submitted.values()) and len(cluster.submitted) == 6
    aborted = execute(str(plan_file), "--abort")
    assert aborted.exit_code == 0 and cluster.throttle is None


def test_rollback_restores_the_original_assignment(cluster: FakeCluster, plan_file: Path) -> None:
    """--rollback writes the reverse plan (its own digest), dry-runs it, then runs it."""
    original = {k: list(v) for k, v in cluster.replicas.items()}
    assert execute(str(plan_file), "--approve", digest(plan_file)).exit_code == 0
    dry = execute(str(plan_file), "--rollback")
    assert dry.exit_code == 0, dry.output
    rollback = plan_file.parent / "plan.rollback.json"
    doc = json.loads(rollback.read_text())
    assert doc["rollback_of"] == digest(plan_file)
    assert [a["id"] for a in doc["actions"]] == [f"rollback-a{i}" for i in range(5, -1, -1)]
    refused = execute(str(plan_file), "--rollback", "--approve", digest(plan_file))
    assert refused.exit_code == 2
    done = execute(str(plan_file), "--rollback", "--approve", doc["digest"])
    assert done.exit_code == 0, done.output
    assert cluster.replicas == original


def test_a_plan_without_its_system_options_is_one_error(plan_file: Path) -> None:
    result = runner.invoke(app, ["execute", str(plan_file)])
    assert result.exit_code == 2
    assert result.output.count("error:") == 1 and "--bootstrap-servers" in result.output


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--throttle", "fast", "--throttle 'fast'"),
        ("--window", "25:00-01:00", "HH:MM-HH:MM"),
        ("--stall-timeout", "0", "--stall-timeout"),
    ],
)
def test_bad_options_are_one_error_line(
    cluster: FakeCluster, plan_file: Path, option: str, value: str, says: str
) -> None:
    result = execute(str(plan_file), option, value)
    assert result.exit_code == 2 and result.output.count("error:") == 1
    assert says in result.output


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.server
def test_metrics_are_scraped_while_the_run_moves(cluster: FakeCluster, plan_file: Path) -> None:
    """--metrics-port serves the run's actions by state, bytes moved, throttle and ETA."""
    import urllib.request

    port = _free_port()
    scraped: list[str] = []
    original = cluster.poll

    def poll_and_scrape(actions):
        progress = original(actions)
        if not scraped:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                scraped.append(r.read().decode())
        return progress

    cluster.poll = poll_and_scrape  # type: ignore[method-assign]
    result = execute(
        str(plan_file), "--approve", digest(plan_file), "--throttle", "5MB/s",
        "--metrics-port", str(port), "--max-in-flight", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = scraped[0]
    assert 'trimtab_execute_actions{reason="submitted",state="started"} 2.0' in text
    assert 'trimtab_execute_actions{reason="",state="pending"} 4.0' in text
    assert "trimtab_execute_throttle_bytes_per_second 5e+06" in text
    assert "trimtab_execute_bytes_moved_total" in text


def test_abort_while_a_run_holds_the_journal_asks_it_through_its_control_file(
    cluster: FakeCluster, plan_file: Path
) -> None:
    from trimtab.execute.journal import Journal

    assert execute(str(plan_file), "--approve", digest(plan_file)).exit_code == 0
    journal = plan_file.parent / "plan.journal.jsonl"
    with Journal(journal):  # a run in progress holds it
        result = execute(str(plan_file), "--abort")
    assert result.exit_code == 0, result.output
    assert (plan_file.parent / "plan.control").read_text() == "abort\n"
    assert "asked the running trimtab execute" in result.output


def test_sigterm_stops_the_run_removes_throttles_and_exits_130(
    cluster: FakeCluster, plan_file: Path
) -> None:
    """A real SIGTERM mid-run: the handler asks the run to stop after its poll."""
    import os
    import signal

    original = cluster.submit

    def submit_then_term(actions):
        original(actions)
        os.kill(os.getpid(), signal.SIGTERM)

    cluster.submit = submit_then_term  # type: ignore[method-assign]
    result = execute(str(plan_file), "--approve", digest(plan_file), "--throttle", "1MB/s")
    assert result.exit_code == 130
    assert cluster.throttle is None and cluster.moves
    resumed = execute(str(plan_file), "--resume")
    assert resumed.exit_code == 0
    assert all(n == 1 for n in cluster.submitted.values()) and len(cluster.submitted) == 6


def test_sighup_rereads_the_throttle_file_mid_run(cluster: FakeCluster, plan_file: Path) -> None:
    import os
    import signal

    rate_file = plan_file.parent / "rate.txt"
    rate_file.write_text("3MB/s\n")
    original = cluster.submit

    def submit_then_hup(actions):
        original(actions)
        os.kill(os.getpid(), signal.SIGHUP)

    cluster.submit = submit_then_hup  # type: ignore[method-assign]
    result = execute(
        str(plan_file), "--approve", digest(plan_file), "--throttle", "1MB/s",
        "--throttle-file", str(rate_file),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert 3 * MB in cluster.throttle_log and cluster.throttle is None


def test_rollback_of_a_run_with_moves_in_flight_is_refused(
    cluster: FakeCluster, plan_file: Path
) -> None:
    import os
    import signal

    original = cluster.submit

    def submit_then_term(actions):
        original(actions)
        os.kill(os.getpid(), signal.SIGTERM)

    cluster.submit = submit_then_term  # type: ignore[method-assign]
    assert execute(str(plan_file), "--approve", digest(plan_file)).exit_code == 130
    result = execute(str(plan_file), "--rollback")
    assert result.exit_code == 2 and "still started" in result.output


def test_the_concurrency_options_reach_the_run(cluster: FakeCluster, plan_file: Path) -> None:
    """--max-in-flight 1: one move at a time; the batches in the journal say so."""
    result = execute(str(plan_file), "--approve", digest(plan_file), "--max-in-flight", "1")
    assert result.exit_code == 0, result.output
    assert cluster.in_flight_max == 1
    journal = (plan_file.parent / "plan.journal.jsonl").read_text().splitlines()
    batches = [json.loads(line) for line in journal if '"record":"batch"' in line]
    assert len(batches) == 12  # six batches, each a start and an end


def test_a_config_file_gives_the_default_concurrency(cluster: FakeCluster, tmp_path: Path) -> None:
    """A plan without concurrent_moves: the config's partition_autobalancing_concurrent_moves."""
    plan, _ = sample()
    path = tmp_path / "plan.json"
    path.write_text(plan.dumps())
    config = tmp_path / "trimtab.toml"
    config.write_text("partition_autobalancing_concurrent_moves = 3\n")
    result = execute(str(path), "--json", "--config", str(config))
    assert json.loads(result.stdout)["max_in_flight"] == 3


def test_the_progress_bar_shows_actions_bytes_and_the_observed_eta(
    cluster: FakeCluster, plan_file: Path, terminal_stderr: Any
) -> None:
    """On a terminal: actions done of the total, bytes, and an ETA; none with --json."""
    result = execute(str(plan_file), "--approve", digest(plan_file), "--throttle", "10MB/s",
                     "--max-in-flight", "2")  # fmt: skip
    assert result.exit_code == 0, result.output
    drawn = terminal_stderr.getvalue()
    assert "/6" in drawn and "/60,000,000 B" in drawn and "ETA" in drawn
