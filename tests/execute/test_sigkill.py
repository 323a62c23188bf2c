"""A real SIGKILL of a ``trimtab execute`` process mid-run, then ``--resume`` in another:
every action exactly once, no throttle left (the cluster kept in a file, tests/execute/
file_target.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.execute.conftest import sample
from tests.execute.file_target import write_state

ROOT = Path(__file__).parents[2]


def _trimtab(state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "tests.execute.file_target", str(state), "execute", *args,
            "--bootstrap-servers", "b:9092", "--poll-interval", "0.02", "--json"]  # fmt: skip


@pytest.mark.subprocess
def test_sigkill_mid_run_then_resume_runs_each_action_exactly_once(tmp_path: Path) -> None:
    plan, replicas = sample(6, size=200_000)  # 0.2 s a batch at 1 MB/s
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.dumps())
    state = tmp_path / "cluster.json"
    write_state(state, replicas)
    journal = tmp_path / "plan.journal.jsonl"
    args = (str(plan_file), "--approve", plan.digest, "--throttle", "1MB/s", "--max-in-flight", "2")
    proc = subprocess.Popen(_trimtab(state, *args), cwd=ROOT, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if journal.exists() and '"state":"started"' in journal.read_text():
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    killed = json.loads(state.read_text())
    assert killed["throttle"] is not None  # nobody cleaned up after a SIGKILL
    resumed = subprocess.run(
        _trimtab(state, str(plan_file), "--resume"), cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(state.read_text())
    assert final["submitted"] == dict.fromkeys(replicas, 1)
    assert final["throttle"] is None and not final["moves"]
    for action in plan.actions:
        assert final["replicas"][action.item] == action.target["replicas"]
