"""The plan document: its digest is the SHA-256 of the canonical form, edits are caught, and
an approval names exactly one plan."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trimtab.errors import PlanError
from trimtab.plans import Action, PlanDocument, canonical_bytes, load_plan, match_digest, read_plan


def _plan(**changes: object) -> PlanDocument:
    fields: dict[str, object] = {
        "system": "kafka",
        "cluster": "prod",
        "created": "2026-11-28T15:00:00Z",
        "actions": (
            Action(
                id="reassign:t/0",
                kind="reassign",
                item="t/0",
                precondition={"replicas": [1, 2, 3]},
                target={"replicas": [1, 2, 4]},
                effect={"bytes": 100, "moves": [{"from": 3, "to": 4}]},
                reason="node_decommissioning",
            ),
        ),
        "summary": {"actions": 1, "bytes": 100},
    }
    fields.update(changes)
    return PlanDocument(**fields)  # type: ignore[arg-type]


def test_digest_is_sha256_of_the_sorted_compact_json_without_the_digest() -> None:
    plan = _plan()
    doc = json.loads(plan.dumps())
    stored = doc.pop("digest")
    by_hand = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert stored == hashlib.sha256(by_hand.encode()).hexdigest() == plan.digest
    assert canonical_bytes(doc) == by_hand.encode()


def test_a_written_plan_reads_back_equal() -> None:
    plan = _plan()
    assert read_plan(plan.dumps()) == plan


def test_an_edited_plan_is_refused_naming_both_digests(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(
        _plan()
        .dumps()
        .replace(
            '"replicas": [\n          1,\n          2,\n          4',
            '"replicas": [\n          1,\n          2,\n          5',
        )
    )
    with pytest.raises(PlanError, match="changed after it was written"):
        load_plan(path)


def test_reformatting_keeps_the_digest() -> None:
    """Whitespace and key order are not content: jq . or an editor's reindent keep approval."""
    plan = _plan()
    doc = json.loads(plan.dumps())
    again = json.dumps(dict(reversed(list(doc.items()))), indent=7)
    assert read_plan(again).digest == plan.digest


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"version": 1}', "not a trimtab plan document"),
        ('{"format": "trimtab-plan", "version": 2}', "version 2"),
        ('{"format": "trimtab-plan", "version": 1, "system": "kafka"}', "malformed plan"),
    ],
)
def test_documents_that_are_not_plans_are_refused(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        read_plan(text, "p.json")


def test_unknown_system_kind_and_repeated_ids_are_refused() -> None:
    with pytest.raises(PlanError, match="unknown plan system"):
        _plan(system="rabbitmq")
    action = _plan().actions[0]
    with pytest.raises(PlanError, match="appears twice"):
        _plan(actions=(action, action))


def test_unreadable_file_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="cannot read plan"):
        load_plan(tmp_path / "missing.json")


def test_approval_takes_the_digest_or_a_long_enough_prefix() -> None:
    plan = _plan()
    match_digest(plan, plan.digest)
    match_digest(plan, plan.digest[:12].upper())
    with pytest.raises(PlanError, match="at least 12"):
        match_digest(plan, plan.digest[:11])
    with pytest.raises(PlanError, match="not a hex digest"):
        match_digest(plan, "yes")
    other = _plan(cluster="staging")
    with pytest.raises(PlanError, match="does not match this plan"):
        match_digest(plan, other.digest)
    with pytest.raises(PlanError, match="ambiguous"):
        match_digest(plan, plan.digest[:12], candidates=[plan.digest[:12] + "0" * 52])


@given(st.integers(min_value=0, max_value=2**40), st.text(max_size=20))
def test_any_change_of_content_changes_the_digest(size: int, reason: str) -> None:
    base = _plan()
    changed = _plan(
        actions=(
            Action(
                id="reassign:t/0",
                kind="reassign",
                item="t/0",
                precondition={"replicas": [1, 2, 3]},
                target={"replicas": [1, 2, 4]},
                effect={"bytes": size, "moves": [{"from": 3, "to": 4}]},
                reason=reason,
            ),
        )
    )
    same = size == 100 and reason == "node_decommissioning"
    assert (changed.digest == base.digest) is same


def test_action_nodes_are_what_a_move_loads() -> None:
    reassign = _plan().actions[0]
    assert reassign.nodes == ("4", "3")
    unload = Action("u", "unload", "t/ns/0x0_0x1", {"owner": "b1:8080"}, {"owner": None})
    assert unload.nodes == ("b1:8080",)
