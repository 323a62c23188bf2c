"""Pulsar's load reports (``LocalBrokerData`` JSON) as ``trimtab shed`` input.

Conformance: upstream ``LocalBrokerDataTest`` (pulsar-broker-common and pulsar-broker), with
the upstream test names. The rest is trimtab's own contract for reports: refused with the
file and the reason, the same decisions as the same loads given as tables.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.shedding.pulsar_reports import (
    MOVED,
    broker_report,
    document,
    fixture_reports,
    mid_transfer,
    write_reports,
)
from trimtab.cli import app
from trimtab.config import Config
from trimtab.errors import ReportError
from trimtab.shedding import LoadModel, LoadSnapshot, ShedderState, shedder_for
from trimtab.shedding.telemetry import build_snapshot
from trimtab.systems.pulsar.load_reports import (
    LoadReport,
    is_system_bundle,
    parse_report,
    read_report_dir,
    to_document,
)
from trimtab.systems.pulsar.snapshots import check_report, report_cluster, report_snapshot

runner = CliRunner()
NOW = 1_750_000_000.0

#: upstream LocalBrokerDataTest.testLocalBrokerDataDeserialization's document, as a 2.11
#: broker wrote it (a heartbeat bundle only, bandwidth limits unknown).
UPSTREAM_DOC = (
    '{"webServiceUrl":"http://10.244.2.23:8080","webServiceUrlTls":"https://10.244.2.23:8081",'
    '"pulsarServiceUrlTls":"pulsar+ssl://10.244.2.23:6651","persistentTopicsEnabled":true,'
    '"nonPersistentTopicsEnabled":false,"cpu":{"usage":3.1577712104798255,"limit":100.0},'
    '"memory":{"usage":614.0,"limit":1228.0},"directMemory":{"usage":32.0,"limit":1228.0},'
    '"bandwidthIn":{"usage":0.0,"limit":0.0},"bandwidthOut":{"usage":0.0,"limit":0.0},'
    '"msgThroughputIn":0.0,"msgThroughputOut":0.0,"msgRateIn":0.0,"msgRateOut":0.0,'
    '"lastUpdate":1650886425227,"lastStats":{"pulsar/pulsar/10.244.2.23:8080/0x00000000_0xffffffff":'
    '{"msgRateIn":0.0,"msgThroughputIn":0.0,"msgRateOut":0.0,"msgThroughputOut":0.0,'
    '"consumerCount":0,"producerCount":0,"topics":1,"cacheSize":0}},"numTopics":1,"numBundles":1,'
    '"numConsumers":0,"numProducers":0,"bundles":["pulsar/pulsar/10.244.2.23:8080/0x00000000_0xffffffff"],'
    '"lastBundleGains":[],"lastBundleLosses":[],"brokerVersionString":"2.11.0-hw-0.0.4-SNAPSHOT",'
    '"protocols":{},"advertisedListeners":{},"bundleStats":{"pulsar/pulsar/10.244.2.23:8080/'
    '0x00000000_0xffffffff":{"msgRateIn":0.0,"msgThroughputIn":0.0,"msgRateOut":0.0,'
    '"msgThroughputOut":0.0,"consumerCount":0,"producerCount":0,"topics":1,"cacheSize":0}},'
    '"maxResourceUsage":0.49645519256591797,"loadReportType":"LocalBrokerData"}'
)


def test_testLocalBrokerDataDeserialization() -> None:  # noqa: N802 (upstream name)
    """Upstream: memory limit 1228, usage 614, percentUsage = usage / limit · 100. Fields
    trimtab does not read (bundleStats, protocols, maxResourceUsage...) are ignored."""
    report = parse_report(UPSTREAM_DOC, source="upstream")
    memory = report.usages["memory"]
    assert memory.limit == pytest.approx(1228.0, abs=1e-4)
    assert memory.usage == pytest.approx(614.0, abs=1e-4)
    assert memory.share * 100 == pytest.approx(614.0 / 1228.0 * 100, abs=1e-4)
    # and what trimtab takes from it: the broker from webServiceUrl, the time in seconds,
    # unknown bandwidth limits as a share of 0, as upstream's percentUsage
    assert report.broker == "10.244.2.23:8080"
    assert report.last_update == pytest.approx(1650886425.227)
    assert report.usages["bandwidthIn"].share == 0.0
    assert report.broker_version == "2.11.0-hw-0.0.4-SNAPSHOT"


def test_testSerializeLocalBrokerData() -> None:  # noqa: N802 (upstream name)
    """Upstream: a serialised LocalBrokerData has no bundleStats field."""
    report = parse_report(UPSTREAM_DOC, source="upstream")
    assert "bundleStats" not in json.dumps(to_document(report))
    again = parse_report(json.dumps(to_document(report)), source="again")
    assert again.usages == report.usages and again.last_stats == report.last_stats


def test_heartbeat_and_sla_monitor_bundles_are_never_shed() -> None:
    """Upstream never sheds a system namespace's bundle: it gives no bundle_metrics row."""
    report = parse_report(UPSTREAM_DOC, source="upstream")
    assert report.bundle_rows("c") == []
    assert is_system_bundle("pulsar/10.0.0.1:8080/0x00000000_0xffffffff")
    assert is_system_bundle("sla-monitor/c1/10.0.0.1:8080/0x00000000_0xffffffff")
    assert not is_system_bundle("pulsar/default/0x00000000_0xffffffff")


def _doc(**changes: Any) -> str:
    doc = json.loads(document(fixture_reports(NOW)[0]))
    for key, value in changes.items():
        if value is None:
            doc.pop(key)
        else:
            doc[key] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"cpu": None}, "missing cpu"),
        ({"lastUpdate": None}, "missing lastUpdate"),
        ({"lastStats": None}, "missing lastStats"),
        ({"msgRateIn": "fast"}, "msgRateIn must be a number"),
        ({"msgRateIn": True}, "msgRateIn must be a number"),
        ({"memory": {"usage": 800.0, "limit": 200.0}}, "memory usage 800 is above its limit 200"),
        ({"cpu": {"usage": 120.0, "limit": 100.0}}, "cpu usage 120 is above its limit 100"),
        ({"directMemory": {"usage": 5.0}}, "missing directMemory.limit"),
        ({"msgThroughputIn": -1}, "msgThroughputIn must be >= 0"),
        ({"lastStats": {"t/n/0x0_0x1": {"msgRateIn": 1}}}, "missing msgThroughputIn"),
    ],
)
def test_a_report_missing_a_field_or_with_an_impossible_usage_is_refused(
    changes: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ReportError, match=r"^zk://h/loadbalance/brokers/b:1: ") as caught:
        parse_report(_doc(**changes), source="zk://h/loadbalance/brokers/b:1", broker="b:1")
    assert reason in caught.value.reason


def test_bandwidth_above_its_limit_is_accepted() -> None:
    """A NIC speed detected wrong (upstream #21409) is what the within-limit rule is for."""
    report = parse_report(_doc(bandwidthIn={"usage": 3e7, "limit": 1e7}), source="s")
    assert report.usages["bandwidthIn"].share == 3.0


@pytest.mark.parametrize("text", [b"\xff\xfe", b"{not json", b"[1, 2]"])
def test_a_report_that_is_no_json_object_is_refused(text: bytes) -> None:
    with pytest.raises(ReportError, match=r"^f\.json: (not UTF-8|not JSON|a load report is)"):
        parse_report(text, source="f.json")


def test_the_contract_refuses_a_bad_bundle_name_with_the_report_named() -> None:
    doc = json.loads(_doc())
    doc["lastStats"]["not-a-bundle"] = doc["lastStats"].popitem()[1]
    checked = check_report(parse_report(json.dumps(doc), source="r.json"), "c")
    assert len(checked.bundles) == 1
    (refused,) = checked.rejected
    assert refused.source == "r.json" and refused.reason.startswith("bad_bundle:")


def test_a_directory_refuses_each_bad_file_and_keeps_the_others(tmp_path: Path) -> None:
    write_reports(tmp_path, fixture_reports(NOW))
    (tmp_path / "broker9:8080.json").write_text("{}")
    reports, errors = read_report_dir(tmp_path)
    assert len(reports) == 5
    (error,) = errors
    assert error.source.endswith("broker9:8080.json") and "missing cpu" in error.reason


def _tables(tmp_path: Path) -> list[str]:
    """The fixture's loads as an inventory, node_metrics and bundle_metrics."""
    reports = fixture_reports(NOW)
    files = {name: tmp_path / f"{name}.csv" for name in ("nodes", "node_metrics", "bundles")}
    rows: dict[str, list[dict[str, Any]]] = {
        "nodes": [
            {
                "cluster": "pulsar",
                "node": r.broker,
                "cores": r.capacity.cores,
                "memory_bytes": r.capacity.memory_bytes,
                "disk_total_bytes": 0,
                "nic_bps": r.capacity.nic_bps,
                "state": "writable",
                "role": "broker",
            }
            for r in reports
        ],
        "node_metrics": [r.node_row("pulsar") for r in reports],
        "bundles": [row for r in reports for row in r.bundle_rows("pulsar")],
    }
    for name, path in files.items():
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[name][0]))
            writer.writeheader()
            writer.writerows(rows[name])
    return [
        "--inventory",
        str(files["nodes"]),
        "--brokers",
        str(files["node_metrics"]),
        "--bundles",
        str(files["bundles"]),
    ]


def _shed(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["shed", *args, "--until-balanced", "--json", "--now", str(NOW)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


def test_load_reports_give_the_same_decisions_as_the_same_loads_as_tables(
    tmp_path: Path,
) -> None:
    from_reports = _shed("--load-reports", str(write_reports(tmp_path / "r", fixture_reports(NOW))))
    from_tables = _shed(*_tables(tmp_path))
    for key in ("decisions", "transfers", "std_before", "std_after", "counts", "cycles"):
        assert from_reports[key] == from_tables[key], key
    assert [t["source"] for t in from_reports["transfers"][:2]] == ["broker5:8080", "broker4:8080"]
    assert {t["reason"] for t in from_reports["transfers"][:2]} == {"Overloaded"}


def test_out_gets_the_commands_and_their_rest_calls(tmp_path: Path) -> None:
    reports = write_reports(tmp_path / "r", fixture_reports(NOW))
    out = tmp_path / "unloads.txt"
    _shed("--load-reports", str(reports), "--out", str(out))
    lines = [line for line in out.read_text().splitlines() if not line.startswith(("# c", "sleep"))]
    assert lines[0].startswith("pulsar-admin namespaces unload tenant/ns5 --bundle ")
    assert lines[1].startswith("#   PUT /admin/v2/namespaces/tenant/ns5/0x")
    assert lines[1].endswith("/unload?destinationBroker=broker1:8080")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--zk", "h:1", "--load-reports", "d"], "either --zk or --load-reports"),
        (["--load-reports", "d", "--inventory", "i"], "--inventory cannot be combined"),
        (["--follow", "--inventory", "i", "--brokers", "b", "--bundles", "c"], "--follow needs"),
        (["--load-reports", "d", "--interval", "5"], "--interval is the period of --follow"),
        (["--load-reports", "d", "--follow", "--interval", "0"], "--interval must be from"),
        (["--zk", "h:1", "--follow", "--until-balanced"], "--until-balanced cannot be combined"),
        (["--zk", "h:1", "--follow", "--format", "pulsar-admin"], "--format pulsar-admin cannot"),
        ([], "missing --inventory, --brokers, --bundles"),
        (["--load-reports", "/nonexistent/reports"], "no such file or directory"),
    ],
)
def test_options_that_do_not_go_together_are_one_error_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["shed", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def _bundles(snapshot: LoadSnapshot) -> list[tuple[str, str, float]]:
    b = snapshot.bundles
    return sorted((b.names[i], b.broker_of(i), float(b.throughput[i])) for i in range(len(b)))


def test_joined_broker_tables_give_the_snapshot_the_rows_give() -> None:
    """report_snapshot joins each report's table when no bundle is reported twice; the
    snapshot is the one build_snapshot makes from the same rows, and so are the decisions."""
    model = LoadModel()
    reports = fixture_reports(NOW)
    checked = [check_report(r, "pulsar") for r in reports]
    state = report_cluster(reports, "pulsar")
    fast = report_snapshot(state, checked, model)
    rows = build_snapshot(
        state,
        [c.node for c in checked if c.node is not None],
        [row for c in checked for row in c.bundles],
        model,
    )
    assert dict(fast.snapshot.loads) == dict(rows.snapshot.loads)
    assert _bundles(fast.snapshot) == _bundles(rows.snapshot)
    assert fast.now == rows.now and fast.snapshot.available == rows.snapshot.available
    shedder = shedder_for(replace(Config().shedding, hit_count_threshold=0))
    decide = [shedder.cycle(b.snapshot, ShedderState(), now=NOW).decisions for b in (fast, rows)]
    assert decide[0] == decide[1]


def test_a_bundle_reported_by_two_brokers_goes_by_the_tables_rule() -> None:
    """During a transfer two reports may list one bundle: the newer report keeps it."""
    reports = fixture_reports(NOW)
    moved = MOVED
    newer = mid_transfer(reports)
    checked = [check_report(r, "pulsar") for r in (reports[0], newer, *reports[2:])]
    built = report_snapshot(report_cluster(reports, "pulsar"), checked, LoadModel())
    owners = {name: broker for name, broker, _ in _bundles(built.snapshot)}
    assert owners[moved] == "broker2:8080"


@st.composite
def report_sets(draw: st.DrawFn) -> list[LoadReport]:
    """A few brokers whose reports list bundles from a small pool (so some are listed twice,
    as during transfers), at various times."""
    pool = [f"tenant/ns/0x{k:08x}_0x{k + 1:08x}" for k in range(8)]
    brokers = draw(st.integers(min_value=1, max_value=5))
    return [
        broker_report(
            f"broker{i}:8080",
            cpu=draw(st.floats(min_value=0.0, max_value=1.0)),
            bundles={
                name: draw(st.floats(min_value=0.0, max_value=1e7))
                for name in draw(st.lists(st.sampled_from(pool), max_size=4, unique=True))
            },
            last_update=NOW + draw(st.sampled_from([0.0, 10.0, 20.0])),
        )
        for i in range(brokers)
    ]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(report_sets())
def test_the_reports_snapshot_is_the_rows_snapshot(reports: list[LoadReport]) -> None:
    """Whatever the reports, joining their tables or taking the rows' rule (a bundle listed
    twice) gives the snapshot build_snapshot makes of the same rows."""
    model = LoadModel()
    checked = [check_report(r, "pulsar") for r in reports]
    state = report_cluster(reports, "pulsar")
    ours = report_snapshot(state, checked, model)
    rows = build_snapshot(
        state,
        [c.node for c in checked if c.node is not None],
        [row for c in checked for row in c.bundles],
        model,
    )
    assert dict(ours.snapshot.loads) == dict(rows.snapshot.loads)
    assert _bundles(ours.snapshot) == _bundles(rows.snapshot)
    assert ours.now == rows.now


def test_load_reports_honour_isolation_policies(tmp_path: Path) -> None:
    """The policies filter destinations whatever the input: with tenant/ns5 isolated to
    broker3, every ns5 bundle the reports' plan moves goes to broker3."""
    policy = {
        "ns5-isolation": {
            "namespaces": ["tenant/ns5"],
            "primary": ["broker3"],
            "secondary": [],
            "auto_failover_policy": {
                "policy_type": "min_available",
                "parameters": {"min_limit": "1", "usage_threshold": "80"},
            },
        }
    }
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps(policy), encoding="utf-8")
    conf = tmp_path / "broker.conf"
    conf.write_text("loadBalancerSheddingBundlesWithPoliciesEnabled=true\n", encoding="utf-8")
    reports = str(write_reports(tmp_path / "r", fixture_reports(NOW)))
    free = _shed("--load-reports", reports)
    held = _shed(
        "--load-reports", reports, "--isolation-policies", str(policies), "--config", str(conf)
    )
    moved = [t for t in held["transfers"] if t["bundle"].startswith("tenant/ns5/")]
    assert moved and {t["destination"] for t in moved} == {"broker3:8080"}
    assert {t["destination"] for t in free["transfers"]} != {"broker3:8080"}


def test_load_reports_carry_the_recommendation_and_upstreams_plan(tmp_path: Path) -> None:
    """Without a strategy named, the reports' plan is balanced's, with upstream's beside it."""
    reports = str(write_reports(tmp_path / "r", fixture_reports(NOW)))
    doc = _shed("--load-reports", reports)
    assert doc["strategy"] == "balanced" and doc["recommendation"]["explicit"] is False
    assert doc["upstream"]["strategy"] == "transfer" and doc["upstream"]["transfers"]
    named = _shed("--load-reports", reports, "--strategy", "transfer")
    assert named["strategy"] == "transfer" and named["recommendation"]["explicit"] is True


def test_out_works_on_tables_too(tmp_path: Path) -> None:
    """``--out`` is the same for tables and reports: the commands and their REST calls."""
    out = tmp_path / "unloads.txt"
    doc = _shed(*_tables(tmp_path), "--out", str(out))
    lines = [line for line in out.read_text().splitlines() if not line.startswith(("# c", "sleep"))]
    assert len(lines) == 2 * len(doc["transfers"]) > 0
    assert lines[0].startswith("pulsar-admin namespaces unload ") and lines[1].startswith("#   PUT")
