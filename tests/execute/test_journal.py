"""The journal: replay, a torn last line, another plan's journal, one executor at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from trimtab.config.secrets import remember_secret
from trimtab.errors import TrimtabError
from trimtab.execute.journal import Journal, default_journal, read_journal
from trimtab.plans.target import ThrottleSet


def _write(path: Path) -> None:
    with Journal(path) as journal:
        journal.append({"record": "run", "digest": "d1", "approved": "d1"})
        journal.append({"record": "action", "id": "a0", "state": "started", "cause": "submitted"})
        journal.append({"record": "throttle", "op": "set", "throttle": ThrottleSet(5).as_json()})
        journal.append({"record": "action", "id": "a0", "state": "done", "cause": "completed"})


def test_the_default_journal_is_beside_the_plan() -> None:
    assert default_journal(Path("/x/plan.json")) == Path("/x/plan.journal.jsonl")


def test_replay_gives_each_actions_last_state_and_the_throttles_in_force(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path)
    state = read_journal(path, digest="d1")
    assert state.states == {"a0": "done"} and state.throttles == [ThrottleSet(5)]
    assert state.runs == 1 and state.approved == "d1"


def test_a_torn_last_line_is_ignored_with_a_warning_and_cut_before_appending(
    tmp_path: Path,
) -> None:
    """A crash mid-write leaves half a line: replay ignores it, the next append starts clean."""
    path = tmp_path / "j.jsonl"
    _write(path)
    with path.open("a") as f:
        f.write('{"record":"action","id":"a1","sta')
    state = read_journal(path, digest="d1")
    assert "a1" not in state.states and "incomplete" in state.warnings[0]
    with Journal(path) as journal:
        journal.append({"record": "action", "id": "a1", "state": "started"})
    again = read_journal(path, digest="d1")
    assert again.states["a1"] == "started" and not again.warnings


def test_a_damaged_line_in_the_middle_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path)
    lines = path.read_text().splitlines()
    lines[1] = "garbage"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrimtabError, match="line 2 is not a journal record"):
        read_journal(path)


def test_the_journal_of_another_plan_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path)
    with pytest.raises(TrimtabError, match="belongs to another plan"):
        read_journal(path, digest="d2")


def test_a_second_executor_on_one_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path), pytest.raises(TrimtabError, match="another trimtab execute"):
        Journal(path)
    Journal(path).close()  # free again once the first closed


def test_no_secret_reaches_the_journal(tmp_path: Path) -> None:
    remember_secret("s3cr3t-token-value")
    path = tmp_path / "j.jsonl"
    with Journal(path) as journal:
        journal.append({"record": "action", "id": "a", "state": "failed",
                        "reason": "401 for token s3cr3t-token-value"})  # fmt: skip
    assert "s3cr3t" not in path.read_text()
