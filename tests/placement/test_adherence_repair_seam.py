"""The replace-to-adhere seam: every placement policy satisfies :class:`RepairablePolicy`, and
the repair module reaches the policies only through it (no policy import, no ``isinstance``)."""

from __future__ import annotations

import ast
import inspect
import random

import pytest

from trimtab.config import Config
from trimtab.placement import POLICIES, Adherence, Policy, adherence_repair
from trimtab.placement.adherence_repair import RepairablePolicy
from trimtab.placement.coverage import QuorumCoverage


@pytest.mark.parametrize("cls", list(POLICIES.values()), ids=lambda cls: cls.__name__)
def test_every_policy_satisfies_the_repair_seam(cls: type[Policy]) -> None:
    """Each of the four policies implements the hooks replace-to-adhere calls."""
    policy = cls(config=Config(), rng=random.Random(1))
    assert isinstance(policy, RepairablePolicy)
    seam: RepairablePolicy = policy  # and mypy agrees, statically
    assert seam.is_ensemble_adhering([], 1, 1) is Adherence.FAIL


def test_only_rack_and_region_aware_policies_have_quorum_coverage() -> None:
    """Step (a) applies to the rack- and region-aware policies; the others refill only."""
    has_rules = {
        str(kind): isinstance(cls(config=Config()).repair_coverage(3, 2, 2), QuorumCoverage)
        for kind, cls in POLICIES.items()
    }
    assert has_rules == {
        "default": False,
        "rackaware": True,
        "regionaware": True,
        "zoneaware": False,
    }


def test_the_repair_module_imports_no_policy() -> None:
    """The repair module depends on the seam, not on the policies (no import circle)."""
    tree = ast.parse(inspect.getsource(adherence_repair))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    policies = {
        f"trimtab.placement.{name}"
        for name in ("policy", "default", "rackaware", "regionaware", "zoneaware")
    }
    assert not imported & policies
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "isinstance"]
    assert calls == []
