"""Rows built to break each rule of the contract, shared by the Python and the Spark tests.

Each case is one JSON-lines row of a table (or a raw line that is not a row) and the rule the
row must be refused under (None: accepted), so both sides read the very same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

NOW = datetime(2026, 11, 2, tzinfo=UTC)

GOOD = {
    "nodes": {
        "cluster": "c1",
        "node": "bk1:3181",
        "region": "dc1",
        "rack": "r1",
        "cores": "8",
        "memory_bytes": "68719476736",
        "disk_total_bytes": "4000000000000",
        "disk_free_bytes": "1000000000000",
        "nic_bps": "10000000000",
        "state": "writable",
        "role": "bookie",
    },
    "node_metrics": {
        "ts": "2026-11-01T00:00:00Z",
        "cluster": "c1",
        "node": "bk1:3181",
        "cpu": "0.5",
        "memory": "0.5",
        "direct_memory": "0.1",
        "net_in_bps": "1",
        "net_out_bps": "1",
        "msg_in_per_s": "1",
        "msg_out_per_s": "1",
        "throughput_in_bytes_per_s": "1",
        "throughput_out_bytes_per_s": "1",
        "disk_free_bytes": "500",
        "disk_total_bytes": "1000",
    },
    "bundle_metrics": {
        "ts": "2026-11-01T00:00:00Z",
        "cluster": "c1",
        "bundle": "t/n/0x0_0x1",
        "broker": "bk1:3181",
        "msg_in_per_s": "1",
        "msg_out_per_s": "1",
        "throughput_in_bytes_per_s": "1",
        "throughput_out_bytes_per_s": "1",
        "storage_bytes": "5",
    },
    "allocation_requests": {
        "cluster": "c1",
        "topic": "orders",
        "partitions": "3",
        "replication_factor": "1",
    },
}


@dataclass(frozen=True, slots=True)
class Case:
    """A row of ``table``: the good row with ``change`` applied (or the ``line`` as written)."""

    name: str
    table: str
    rule: str | None
    change: dict[str, str]
    line: str | None = None


CASES = (
    Case("a line that is not JSON", "node_metrics", "malformed", {}, line="{not json"),
    Case("no node", "node_metrics", "missing_key", {"node": ""}),
    Case("no topic", "allocation_requests", "missing_key", {"topic": " "}),
    Case("a day 45", "node_metrics", "bad_timestamp", {"ts": "2026-13-45T00:00:00Z"}),
    Case("cpu in words", "node_metrics", "wrong_type", {"cpu": "half"}),
    Case("fractional cores", "nodes", "wrong_type", {"cores": "8.5"}),
    Case("disk beyond a long", "nodes", "wrong_type", {"disk_total_bytes": "9" * 20}),
    Case("a boolean count", "allocation_requests", "wrong_type", {"partitions": "yes"}),
    Case("no cpu", "node_metrics", "missing_value", {"cpu": ""}),
    Case("no state", "nodes", "missing_value", {"state": ""}),
    Case(
        "no replication factor", "allocation_requests", "missing_value", {"replication_factor": ""}
    ),
    Case("NaN memory", "node_metrics", "not_finite", {"memory": "NaN"}),
    Case("infinite rate", "bundle_metrics", "not_finite", {"msg_in_per_s": "inf"}),
    Case("cpu in percent", "node_metrics", "out_of_range", {"cpu": "85"}),
    Case("negative memory", "nodes", "negative", {"memory_bytes": "-1"}),
    Case("negative rate", "node_metrics", "negative", {"net_in_bps": "-1"}),
    Case("zero cores", "nodes", "not_positive", {"cores": "0"}),
    Case("zero partitions", "allocation_requests", "not_positive", {"partitions": "0"}),
    Case("cores 1e29, beyond a long", "nodes", "wrong_type", {"cores": "1e29"}),
    Case("cores 1e12", "nodes", "implausible", {"cores": "1e12"}),
    Case("cores beyond any machine", "nodes", "implausible", {"cores": "100000"}),
    Case(
        "disk 5e18, above 4 EiB",
        "nodes",
        "implausible",
        {"disk_total_bytes": "5e18", "disk_free_bytes": "1e18"},
    ),
    Case(
        "a 1e308 throughput",
        "bundle_metrics",
        "implausible",
        {"throughput_in_bytes_per_s": "1e308"},
    ),
    Case("a 1e308 network rate", "node_metrics", "implausible", {"net_in_bps": "1e308"}),
    Case(
        "a million and one partitions",
        "allocation_requests",
        "implausible",
        {"partitions": "1000001"},
    ),
    Case("cores at the bound", "nodes", None, {"cores": "65536"}),
    Case("more free than total", "nodes", "free_above_total", {"disk_free_bytes": "5000000000000"}),
    Case("a NIC written in Gb/s", "nodes", "implausible", {"nic_bps": "10"}),
    Case("memory written in GiB", "nodes", "implausible", {"memory_bytes": "64"}),
    Case(
        "disk written in GB",
        "nodes",
        "implausible",
        {"disk_total_bytes": "4000", "disk_free_bytes": "1000"},
    ),
    Case("a 1 Mb/s NIC, the least", "nodes", None, {"nic_bps": "1000000"}),
    Case("a draining node", "nodes", "bad_state", {"state": "draining"}),
    Case("a zookeeper", "nodes", "bad_role", {"role": "zookeeper"}),
    Case("a space in the id", "nodes", "bad_node_id", {"node": "bk 9:3181"}),
    Case("a port beyond 65535", "nodes", "bad_node_id", {"node": "bk9:70000"}),
    Case("a slash in the rack", "nodes", "bad_location", {"rack": "r1/x"}),
    Case("a space in the topic", "allocation_requests", "bad_topic", {"topic": "a b"}),
    Case("a day ahead", "node_metrics", "future_timestamp", {"ts": "2026-11-02T00:10:00Z"}),
    Case("at the tolerance", "node_metrics", None, {"ts": "2026-11-02T00:05:00Z"}),
    Case(
        "a microsecond past the tolerance",
        "node_metrics",
        "future_timestamp",
        {"ts": "2026-11-02T00:05:00.000001Z"},
    ),
    Case("the year 9999", "node_metrics", "future_timestamp", {"ts": "9999-12-31T23:59:59Z"}),
    Case("no hash range", "bundle_metrics", "bad_bundle", {"bundle": "tenant/ns/notarange"}),
    Case("a blank namespace", "bundle_metrics", "bad_bundle", {"bundle": "t/\u2003/0x0_0x1"}),
    Case("whole cores as 8.0", "nodes", None, {"cores": "8.0"}),
    Case("read-only spelled with a dash", "nodes", None, {"state": "Read-Only"}),
    Case("no role: both", "nodes", None, {"role": ""}),
    Case("epoch seconds", "node_metrics", None, {"ts": "1793493000"}),
    Case("epoch milliseconds", "node_metrics", "bad_timestamp", {"ts": "1793493000000"}),
    Case("cpu exactly 1", "node_metrics", None, {"cpu": "1"}),
    Case(
        "no cluster: the only one", "allocation_requests", None, {"cluster": "", "topic": "clicks"}
    ),
)


def row(case: Case, index: int) -> dict[str, str]:
    """The case's row; inventory rows get their own node id and samples their own minute,
    so that no case is a duplicate of another."""
    values = dict(GOOD[case.table])
    if case.table == "nodes":
        values["node"] = f"bk{100 + index}:3181"
    elif "ts" in values:
        values["ts"] = f"2026-11-01T01:{index:02d}:00Z"
    return values | case.change


def write_case(root: Path, case: Case, index: int) -> Path:
    """``root/<table>/case-NN.jsonl`` holding the case's one line."""
    path = root / case.table / f"case-{index:02d}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((case.line if case.line is not None else json.dumps(row(case, index))) + "\n")
    return path


def write_good(root: Path) -> None:
    """One good row per table, so every table exists and ``bk1:3181`` is in the inventory."""
    for table, values in GOOD.items():
        path = root / table / "good.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values) + "\n")
