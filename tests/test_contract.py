"""The table contract: each rule is enforced by the plain-Python readers the commands use.

``tests/pipeline/test_contract_spark.py`` reads the same rows through the Spark ingest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.contract_cases import CASES, NOW, Case, write_case
from trimtab.cluster import Capacity, ClusterState, Node, NodeId, NodeState, Role
from trimtab.contract import (
    BUNDLE_PATTERN,
    PYTHON_CHECKS,
    ROW_RULES,
    TABLES,
    RejectedRow,
    RowError,
    check_row,
    split_bundle,
    whole,
)
from trimtab.readers.allocation_requests import read_requests
from trimtab.readers.inventory import read_inventory
from trimtab.readers.metrics import read_bundle_metrics, read_node_metrics
from trimtab.shedding import Move
from trimtab.systems.pulsar.admin import unload_command


def refused(case: Case, path: Path) -> list[RejectedRow]:
    """What the command's reader of the case's table refuses in ``path``."""
    if case.table == "nodes":
        return list(read_inventory(path).rejected)
    if case.table == "node_metrics":
        return read_node_metrics(path, now=NOW).rejected
    if case.table == "bundle_metrics":
        return read_bundle_metrics(path, now=NOW).rejected
    return read_requests(path).rejected


def test_every_rule_has_a_python_check_and_a_case() -> None:
    """A rule added to the contract without its check, or without a row breaking it, fails."""
    names = [r.name for r in ROW_RULES]
    assert list(PYTHON_CHECKS) == names
    assert {c.rule for c in CASES} - {None} == set(names)


@pytest.mark.parametrize(
    ("index", "case"), list(enumerate(CASES)), ids=[f"{c.rule}: {c.name}" for c in CASES]
)
def test_the_readers_refuse_each_case_under_its_rule(
    tmp_path: Path, index: int, case: Case
) -> None:
    """The row is refused under the contract's rule (or accepted), by the command's reader."""
    rejected = refused(case, write_case(tmp_path, case, index))
    assert [r.rule for r in rejected] == ([] if case.rule is None else [case.rule])


def test_a_short_csv_line_is_malformed(tmp_path: Path) -> None:
    """A CSV line with fewer fields than the header is malformed, as Spark's reader says."""
    path = tmp_path / "requests.csv"
    path.write_text("topic,partitions,replication_factor\norders,3,1\nclicks,3\n")
    assert [(r.line, r.rule) for r in read_requests(path).rejected] == [(3, "malformed")]


def test_the_first_broken_rule_wins() -> None:
    """A row breaking two rules is refused under the earlier one of the contract's order."""
    row = {"cluster": "c", "node": "b:1", "cores": "0", "memory_bytes": "-1"}
    row |= {"disk_total_bytes": "1", "nic_bps": "1", "state": "down"}
    with pytest.raises(RowError) as info:
        check_row(TABLES["nodes"], row)
    assert info.value.rule == "negative"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(8, 8), ("8", 8), (8.0, 8), ("1e3", 1000), ("8.5", None), (True, None), (2**63, None)],
)
def test_whole_numbers_are_exact_and_fit_a_long(value: object, expected: int | None) -> None:
    """Whole floats count as whole; fractions, booleans and numbers beyond a long do not."""
    assert whole(value) == expected


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(BUNDLE_PATTERN, fullmatch=True))
def test_an_accepted_bundle_always_exports(name: str) -> None:
    """Any bundle name the contract accepts becomes a pulsar-admin line without raising."""
    try:
        split_bundle(name)
    except RowError:
        return  # e.g. a name whose only difference is surrounding whitespace
    line = unload_command(Move(bundle=name, source="a:1", destination="b:1", throughput=1.0))
    assert line.startswith("pulsar-admin namespaces unload ")


def _node(name: str, role: Role, state: NodeState = NodeState.WRITABLE) -> Node:
    capacity = Capacity(cores=1, memory_bytes=1, disk_total_bytes=1, nic_bps=1)
    return Node(id=NodeId(name), location="/r/a", capacity=capacity, state=state, role=role)


def test_for_role_keeps_the_nodes_that_serve_it() -> None:
    """Ledgers go to bookies, bundles and partitions to brokers; an empty role serves both."""
    state = ClusterState.of(
        "c",
        [
            _node("bk:1", Role.BOOKIE),
            _node("br:1", Role.BROKER),
            _node("both:1", Role.BOTH),
            _node("ro:1", Role.BROKER, NodeState.READONLY),
        ],
    )
    assert [n.id for n in state.for_role(Role.BOOKIE)] == ["bk:1", "both:1"]
    assert [n.id for n in state.for_role(Role.BROKER)] == ["both:1", "br:1", "ro:1"]
    assert state.for_role(Role.BROKER).writable == {"both:1", "br:1"}
    assert state.for_role(Role.BOTH) is state


def test_an_unknown_role_is_refused() -> None:
    """Only bookie, broker or empty are roles; a zookeeper node is a bad_role row."""
    with pytest.raises(ValueError, match="bad role 'zookeeper'"):
        Role.parse("zookeeper")
    assert Role.parse(" Broker ") is Role.BROKER and Role.parse(None) is Role.BOTH


def test_text_that_is_not_utf8_is_malformed_with_the_column_named() -> None:
    """A decoder's U+FFFD (a Latin-1 export read as UTF-8) refuses the row in the readers as
    in the batch job and the stream, with one wording."""
    from trimtab.contract import TABLES, RowError, check_row

    raw = {"cluster": "z\ufffdrich", "node": "b1:3181", "cores": "4", "state": "writable"}
    with pytest.raises(RowError) as refused:
        check_row(TABLES["nodes"], raw)
    assert refused.value.rule == "malformed" and "cluster holds bytes that are not UTF-8" in str(
        refused.value
    )
