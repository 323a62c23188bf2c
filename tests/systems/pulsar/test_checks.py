"""The rules that compare a Pulsar plan action with the owners read from the cluster."""

from __future__ import annotations

import pytest

from trimtab.plans.document import Action
from trimtab.plans.target import Check
from trimtab.systems.pulsar.checks import check_action

BUNDLE = "t/ns/0x00000000_0x40000000"
BROKERS = {"b1:8080", "b2:8080", "b3:8080"}


def unload(target: str | None = "b2:8080") -> Action:
    return Action("u1", "unload", BUNDLE, {"owner": "b1:8080"}, {"owner": target})


@pytest.mark.parametrize(
    ("action", "owner", "brokers", "in_flight", "check", "why"),
    [
        pytest.param(unload(), "b1:8080", BROKERS, False, Check.READY, "", id="on its source"),
        pytest.param(unload(), "b2:8080", BROKERS, False, Check.DONE, "", id="on its target"),
        pytest.param(
            unload(None), "b3:8080", BROKERS, False, Check.DONE, "", id="null target, placed"
        ),
        pytest.param(
            unload(None), "b1:8080", BROKERS, False, Check.READY, "", id="null target, on source"
        ),
        pytest.param(
            unload(), None, BROKERS, True, Check.MOVING, "unloaded", id="in flight, unowned"
        ),
        pytest.param(
            unload(), None, BROKERS, False, Check.CHANGED, "not owned by any", id="unowned"
        ),
        pytest.param(
            unload(), "b3:8080", BROKERS, False, Check.CHANGED, "owned by b3:8080", id="elsewhere"
        ),
        pytest.param(
            unload(),
            None,
            BROKERS - {"b1:8080"},
            False,
            Check.CHANGED,
            "broker b1:8080 is gone",
            id="source gone",
        ),
        pytest.param(
            unload(),
            "b1:8080",
            BROKERS - {"b2:8080"},
            False,
            Check.CHANGED,
            "destination broker b2:8080 is gone",
            id="destination gone",
        ),
    ],
)
def test_unload_checks(
    action: Action, owner: str | None, brokers: set[str], in_flight: bool, check: Check, why: str
) -> None:
    """Each row of the table in trimtab.systems.pulsar.checks."""
    owners = {BUNDLE: owner} if owner else {}
    seen = check_action(action, owners=owners, brokers=brokers, in_flight=in_flight)
    assert seen.check is check
    assert why in seen.why
    assert seen.live == {"owner": owner}


def test_split_is_done_once_the_range_is_gone() -> None:
    """A split is READY while its source owns the range, DONE when the namespace lost it."""
    split = Action("s1", "split", BUNDLE, {"owner": "b1:8080"}, {})
    before = {"t/ns": ["0x00000000_0x40000000", "0x40000000_0xffffffff"]}
    after = {"t/ns": ["0x00000000_0x20000000", "0x20000000_0x40000000", "0x40000000_0xffffffff"]}
    ready = check_action(split, owners={BUNDLE: "b1:8080"}, brokers=BROKERS, ranges=before)
    done = check_action(split, owners={}, brokers=BROKERS, ranges=after)
    changed = check_action(split, owners={BUNDLE: "b2:8080"}, brokers=BROKERS, ranges=before)
    assert (ready.check, done.check, changed.check) == (Check.READY, Check.DONE, Check.CHANGED)
