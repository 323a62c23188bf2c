"""Campaign rows for the cases issues 42 and 43 found, each run as the user typed it, through
:func:`trimtab.cli.main` as the ``trimtab`` script runs it.

Every row asserts the error contract (no traceback, no ``internal error``, the exit status)
and the one line a user reads: the ``error:`` line, or the reason of the row that was
refused. Issue 42's unit and identity cases: ``nic_bps 10`` meant as 10 Gb/s, cpu in
percent, ``lastUpdate`` in seconds, disk sizes in GB, two inventory ids that differ only in
letter case (readers: ``topology``, ``place``, ``shed``). Issue 43's environment faults not
covered by test_environment.py: a ZooKeeper nobody answers on, a host that does not resolve.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.robustness.harness import check_contract, dead_ports, invoke
from tests.shedding.pulsar_reports import fixture_reports, write_reports
from tests.shedding.test_reports import NOW

ROOT = Path(__file__).parents[2]
SHEDDING = ROOT / "examples" / "shedding"
SAMPLE = ROOT / "src" / "trimtab" / "data" / "sample_inventory.csv"
PLACE = ["--cluster", "bk-prod", "-E", "3", "-W", "2", "-A", "2"]


def _edited(source: Path, target: Path, edit: Callable[[list[dict[str, str]]], None]) -> Path:
    """A copy of the CSV ``source`` with its rows changed by ``edit``."""
    with source.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields, rows = list(reader.fieldnames or []), list(reader)
    edit(rows)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fields)
        writer.writeheader()
        writer.writerows(rows)
    return target


def _nic_in_gbps(rows: list[dict[str, str]]) -> None:
    rows[0]["nic_bps"] = "10"  # meant as 10 Gb/s


def _cpu_in_percent(rows: list[dict[str, str]]) -> None:
    for row in rows:
        row["cpu"] = f"{float(row['cpu']) * 100:g}"


def _disks_in_gb(rows: list[dict[str, str]]) -> None:
    for row in rows:
        for column in ("disk_total_bytes", "disk_free_bytes"):
            row[column] = str(int(row[column]) // 10**9)


def _same_host_upper_case(rows: list[dict[str, str]]) -> None:
    twin = dict(rows[0])
    host, _, port = twin["node"].partition(".")
    twin["node"] = f"{host.upper()}.{port.upper()}"  # BK01.US-EAST.EXAMPLE.NET:3181
    rows.append(twin)


def _run(args: list[str], code: int) -> str:
    """Run ``trimtab ARGS``; assert the contract and ``code``; return stderr."""
    run = invoke(args, watchdog=60)
    check_contract(run)
    assert "internal error" not in run.stderr, run.describe()
    assert run.result.exit_code == code, run.describe()
    return run.stderr


def _one_error(args: list[str]) -> str:
    stderr = _run(args, 2)
    (line,) = [x for x in stderr.splitlines() if x.startswith("error:")]
    return line


def test_nic_bps_10_meant_as_gbps_is_refused_naming_the_unit(tmp_path: Path) -> None:
    inventory = _edited(SHEDDING / "inventory.csv", tmp_path / "inv.csv", _nic_in_gbps)
    args = ["shed", "-i", str(inventory), "--brokers", str(SHEDDING / "node_metrics.csv")]
    stderr = _run([*args, "--bundles", str(SHEDDING / "bundle_metrics.csv")], 0)
    flat = " ".join(stderr.split())  # the refused rows are a table: its cells wrap
    assert "nic_bps 10 is 10 bit/s; for 10 Gb/s write 10000000000" in flat


def test_cpu_in_percent_is_one_error_naming_the_unit(tmp_path: Path) -> None:
    metrics = _edited(SHEDDING / "node_metrics.csv", tmp_path / "nm.csv", _cpu_in_percent)
    args = ["shed", "-i", str(SHEDDING / "inventory.csv"), "--brokers", str(metrics)]
    line = _one_error([*args, "--bundles", str(SHEDDING / "bundle_metrics.csv")])
    assert "none of the 6 writable broker(s) has a usable node_metrics sample" in line
    assert line.endswith("cpu 77 is above 1: usages are fractions; for 77 % write 0.77")


def test_disk_sizes_in_gb_are_one_error_naming_the_unit(tmp_path: Path) -> None:
    inventory = _edited(SAMPLE, tmp_path / "inv.csv", _disks_in_gb)
    line = _one_error(["place", "-i", str(inventory), *PLACE])
    assert line.startswith("error: no usable inventory row: all 24 row(s) were rejected")
    assert "disk_total_bytes 4000 is 4000 bytes; for 4000 GB write 4000000000000" in line


def test_last_update_in_seconds_is_refused_naming_the_unit(tmp_path: Path) -> None:
    reports = write_reports(tmp_path / "reports", fixture_reports(NOW))
    for path in reports.glob("*.json"):
        doc = json.loads(path.read_text())
        doc["lastUpdate"] = int(doc["lastUpdate"] / 1000)
        path.write_text(json.dumps(doc))
    run = invoke(["shed", "--load-reports", str(reports), "--now", str(NOW)], watchdog=60)
    check_contract(run)
    said = " ".join((run.stderr + run.result.stdout).split())
    assert "internal error" not in said
    assert "lastUpdate 1750000000 is epoch seconds (2025-06-15T15:06:40Z)" in said, said
    assert "write 1750000000000" in said


DUPLICATE = "an exact duplicate of an earlier row for node bk01.us-east.example.net:3181"


def test_topology_takes_two_ids_differing_only_in_letter_case_as_one_node(tmp_path: Path) -> None:
    inventory = _edited(SAMPLE, tmp_path / "inv.csv", _same_host_upper_case)
    run = invoke(["topology", "-i", str(inventory), "--json"], watchdog=60)
    check_contract(run)
    assert run.result.exit_code == 0, run.describe()
    (rejected,) = json.loads(run.result.stdout)["rejected"]
    assert rejected["line"] == 26 and rejected["reason"].startswith(DUPLICATE)


def test_place_takes_two_ids_differing_only_in_letter_case_as_one_node(tmp_path: Path) -> None:
    """One host, one bookie: the ensembles cannot put two replicas on it."""
    inventory = _edited(SAMPLE, tmp_path / "inv.csv", _same_host_upper_case)
    stderr = _run(["place", "-i", str(inventory), *PLACE], 0)
    assert DUPLICATE in " ".join(stderr.replace("│", " ").split())  # the table's cells wrap
    run = invoke(["place", "-i", str(inventory), *PLACE], watchdog=60)
    assert run.result.stdout.lower().count("bk01.us-east") == 1, run.result.stdout


def test_shed_with_two_ids_differing_only_in_letter_case(tmp_path: Path) -> None:
    inventory = _edited(SHEDDING / "inventory.csv", tmp_path / "inv.csv", _same_host_upper_case)
    args = ["shed", "-i", str(inventory), "--brokers", str(SHEDDING / "node_metrics.csv")]
    run = invoke([*args, "--bundles", str(SHEDDING / "bundle_metrics.csv"), "--json"])
    check_contract(run)
    assert run.result.exit_code == 0, run.describe()
    doc = json.loads(run.result.stdout)
    brokers = [b["broker"].lower() for b in doc["brokers"]]
    assert len(brokers) == len(set(brokers)) == 6


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["bookieinfo", "--timeout", "1"], id="bookieinfo"),
        pytest.param(
            ["agent", "--id", "127.0.0.1:3181", "--ledger-dirs", str(ROOT)],
            id="agent",
            marks=pytest.mark.server,  # it binds its gRPC port before dialling ZooKeeper
        ),
        pytest.param(["watch", "--metrics-port", "0"], id="watch"),
    ],
)
@pytest.mark.parametrize("zk", ["dead port", "unresolvable host"])
def test_a_zookeeper_nobody_answers_is_one_error_line_and_no_client_log(
    command: list[str], zk: str
) -> None:
    address = f"127.0.0.1:{dead_ports(1)[0]}" if zk == "dead port" else "no-such-host.invalid:2181"
    run = invoke([*command, "--zk", address], watchdog=60)
    check_contract(run)
    assert run.result.exit_code == 2, run.describe()
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    (line,) = [x for x in lines if x.startswith("error:")]
    assert address.rsplit(":", 1)[0] in line, line
    # kazoo's and gRPC's own log lines stay off stderr without --verbose: only our lines
    assert all(x.startswith(("error:", "warning:")) for x in lines), run.describe()
