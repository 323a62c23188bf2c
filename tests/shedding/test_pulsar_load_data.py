"""Pulsar's load data as each load manager writes it: the modular one's LocalBrokerData and the
extensible one's (PIP-192) BrokerLoadData beside TopBundlesLoadData, and units refused by name.

``tests/data/tools/pulsar-pip192-load-data/`` holds the loads of
``examples/shedding/load-reports/`` written as the extensible load manager's classes
(``org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLoadData`` and
``TopBundlesLoadData`` as Jackson serialises them: the ``ResourceUsage`` pairs, the rates,
``bundleCount``, ``maxResourceUsage``, ``weightedMaxEMA``, ``updatedAt``, ``reportedAt``; and
``{"topBundlesLoadData": [{"bundleName", "stats"}]}``), one pair of files per broker.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app
from trimtab.errors import ReportError
from trimtab.systems.pulsar.load_reports import parse_report, read_report_dir

ROOT = Path(__file__).parents[2]
MODULAR = ROOT / "examples" / "shedding" / "load-reports"
EXTENSIBLE = ROOT / "tests" / "data" / "tools" / "pulsar-pip192-load-data"
runner = CliRunner()


def _shed(path: Path) -> dict[str, object]:
    result = runner.invoke(app, ["shed", "--load-reports", str(path), "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_extensible_load_data_gives_the_modular_reports_decisions() -> None:
    """BrokerLoadData plus TopBundlesLoadData of the same loads: the same plan, to the byte."""
    assert _shed(EXTENSIBLE) == _shed(MODULAR)


def test_broker_load_data_alone_is_a_report_without_bundles() -> None:
    """A BrokerLoadData is read (no "missing lastStats"); its bundles come only beside it."""
    text = (EXTENSIBLE / "broker1:8080.json").read_text()
    report = parse_report(text, source="b1", broker="broker1:8080")
    assert report.last_stats == {} and report.msg_throughput_in == 3_000_000
    assert report.last_update == 1_764_000_000


def test_top_bundles_without_their_broker_are_refused_by_name(tmp_path: Path) -> None:
    """A TopBundlesLoadData whose BrokerLoadData is missing is one refused file, named."""
    shutil.copy(EXTENSIBLE / "broker1:8080.json", tmp_path)
    shutil.copy(EXTENSIBLE / "broker2:8080.top-bundles.json", tmp_path)
    reports, errors = read_report_dir(tmp_path)
    assert [r.broker for r in reports] == ["broker1:8080"]
    assert len(errors) == 1 and "no BrokerLoadData of broker broker2:8080" in str(errors[0])


@pytest.mark.parametrize("field", ["lastUpdate", "updatedAt"])
def test_a_time_in_seconds_is_refused_naming_the_unit(field: str) -> None:
    """lastUpdate (updatedAt) written in epoch seconds: refused saying so and what to write,
    instead of every broker looking out of date."""
    source = MODULAR if field == "lastUpdate" else EXTENSIBLE
    doc = json.loads((source / "broker1:8080.json").read_text())
    doc[field] = 1_764_000_000
    with pytest.raises(ReportError) as caught:
        parse_report(json.dumps(doc), source="r.json", broker="broker1:8080")
    message = str(caught.value)
    assert f"{field} 1764000000 is epoch seconds (2025-11-24T" in message
    assert "write 1764000000000" in message


def test_another_document_is_named_with_the_command_to_run() -> None:
    """A Kafka assignment given as a load report: what it seems to be, and pulsar-admin."""
    text = (ROOT / "examples" / "rebalance" / "assignment.json").read_text()
    with pytest.raises(ReportError) as caught:
        parse_report(text, source="a.json", broker="b:1")
    assert "a Kafka reassignment JSON" in str(caught.value)
    assert "pulsar-admin broker-stats load-report" in str(caught.value)


def test_shed_on_reports_in_seconds_says_why_each_is_refused(tmp_path: Path) -> None:
    """Every report in seconds: no decision on out-of-date data; the error names the unit."""
    for file in MODULAR.iterdir():
        doc = json.loads(file.read_text())
        doc["lastUpdate"] //= 1000
        (tmp_path / file.name).write_text(json.dumps(doc))
    result = runner.invoke(app, ["shed", "--load-reports", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "is epoch seconds" in result.stderr and "Traceback" not in result.output


# --- PIP-192's system topics, saved with `pulsar-client consume` -----------------------------

TOOLS = ROOT / "tests" / "data" / "tools"
BROKER_LOAD = TOOLS / "pulsar-client-3.1-consume-broker-load-data.txt"
TOP_BUNDLES = TOOLS / "pulsar-client-3.1-consume-top-bundles-load-data.txt"


def test_pulsar_client_3_1_consume_output_gives_the_modular_reports_decisions(
    tmp_path: Path,
) -> None:
    """`pulsar-client consume` of loadbalancer-broker-load-data and of
    loadbalancer-top-bundles-load-data, saved side by side: the same plan as the reports."""
    shutil.copy(BROKER_LOAD, tmp_path)
    shutil.copy(TOP_BUNDLES, tmp_path)
    assert _shed(tmp_path) == _shed(MODULAR)


def test_the_newest_message_of_a_broker_wins_and_a_tombstone_removes_it(tmp_path: Path) -> None:
    """A table view keeps a key's last value; an empty content is the broker leaving."""
    text = BROKER_LOAD.read_text()
    first = text.split("----- got message -----\n")[1].strip()
    newer = first.replace('"updatedAt":1764000000000', '"updatedAt":1764000060000')
    gone = "key:[broker2:8080], properties:[], content:"
    gone_too = "publishTime:[1764000090000], eventTime:[0], key:[broker4:8080], content:null"
    (tmp_path / "consume.txt").write_text(
        f"{text}----- got message -----\n{newer}\n----- got message -----\n{gone}\n"
        f"----- got message -----\n{gone_too}\n"
    )
    reports, errors = read_report_dir(tmp_path / "consume.txt")
    assert errors == []
    assert sorted(r.broker for r in reports) == [f"broker{i}:8080" for i in (1, 3, 5)]
    (broker1,) = (r for r in reports if r.broker == "broker1:8080")
    assert broker1.last_update == 1764000060.0


def test_consume_output_of_another_topic_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "consume.txt"
    bad.write_text('----- got message -----\nkey:[null], properties:[], content:{"a": 1}\n')
    result = runner.invoke(app, ["shed", "--load-reports", str(bad)])
    assert result.exit_code == 2
    assert "not a Pulsar load report" in result.stderr and "[null]" in result.stderr
