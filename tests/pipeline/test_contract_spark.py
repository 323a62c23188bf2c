"""The table contract on Spark: the pipeline's ingest refuses the same rows under the same
rules as the commands' readers (``tests/test_contract.py`` reads the same files)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.contract_cases import CASES, NOW, Case, row, write_case, write_good
from trimtab.contract import ROW_RULES, TABLES, check_row
from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.ingest.check import ingest
from trimtab.pipeline.rules import KEY_CHECKS, SPARK_CHECKS


def test_every_rule_has_a_spark_check() -> None:
    """Each rule of the contract has a Spark expression, row or key scope as it says."""
    assert list(SPARK_CHECKS) == [r.name for r in ROW_RULES if r.scope == "row"]
    assert list(KEY_CHECKS) == [r.name for r in ROW_RULES if r.scope == "key"]


@pytest.fixture(scope="module")
def quarantined(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[str, str]]:
    """Every case in a file of its own, all checked by one ingest: (rule, reason) by
    table/file."""
    root = tmp_path_factory.mktemp("contract")
    write_good(root)
    for index, case in enumerate(CASES):
        write_case(root, case, index)
    ingested = ingest(spark, HadoopFS(spark), str(root), now=NOW)
    rows = ingested.quarantine().collect()
    return {"/".join(r["source_file"].rsplit("/", 2)[-2:]): (r["rule"], r["reason"]) for r in rows}


@pytest.fixture(scope="module")
def verdicts(quarantined: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The rule by table/file."""
    return {where: rule for where, (rule, _) in quarantined.items()}


@pytest.mark.parametrize(
    ("index", "case"), list(enumerate(CASES)), ids=[f"{c.rule}: {c.name}" for c in CASES]
)
def test_ingest_refuses_each_case_under_its_rule(
    verdicts: dict[str, str], index: int, case: Case
) -> None:
    """The row is quarantined under the contract's rule (or accepted), as the readers do."""
    assert verdicts.get(f"{case.table}/case-{index:02d}.jsonl") == case.rule


def test_good_rows_are_accepted(verdicts: dict[str, str]) -> None:
    """The good row of each table is not quarantined."""
    assert {k: v for k, v in verdicts.items() if k.endswith("/good.jsonl")} == {}


UNIT_CASES = [
    (i, c)
    for i, c in enumerate(CASES)
    if c.name in ("cpu in percent", "a NIC written in Gb/s", "memory written in GiB")
    or c.name in ("disk written in GB", "epoch milliseconds")
]


@pytest.mark.parametrize(("index", "case"), UNIT_CASES, ids=[c.name for _, c in UNIT_CASES])
def test_unit_reasons_are_the_readers_words(
    quarantined: dict[str, tuple[str, str]], index: int, case: Case
) -> None:
    """A value in the wrong unit gets the same reason, naming the unit and what to write,
    from the pipeline as from the commands' readers."""
    with pytest.raises(ValueError) as python:
        check_row(TABLES[case.table], row(case, index), now=NOW)
    rule, reason = quarantined[f"{case.table}/case-{index:02d}.jsonl"]
    assert (rule, reason) == (case.rule, str(python.value))
    assert " write " in reason
