"""The campaign's share of ``pipeline run``: a few malformed fleets, run as a user types it.

Spark is slow to run, so this is a sample, not a hypothesis search: each fleet is the
campaign's valid tables (tests/robustness/strategies.py) with a fixed set of the faults the
strategies draw, written as CSV, JSON-lines or Parquet under ``nodes/``, ``node_metrics/``,
``bundle_metrics/`` and ``allocation_requests/``. Each run must keep the error contract
(tests/robustness/harness.py) and, when it publishes, count every row:
``read = accepted + quarantined`` per table in ``run.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.robustness.harness import check_contract, fresh_dir, invoke
from tests.robustness.strategies import (
    BASE_TS,
    NODES,
    Row,
    csv_text,
    jsonl_text,
    parquet_bytes,
    valid_rows,
)

#: The reference time, after the valid tables' samples (BASE_TS + 10 min).
NOW = datetime.fromtimestamp(BASE_TS + 600, UTC).strftime("%Y-%m-%dT%H:%M:%S")
Tables = dict[str, list[Row]]
#: Extra files of a fleet, beside its tables: path under the input -> bytes.
Files = dict[str, bytes]


@dataclass(frozen=True)
class Fleet:
    """A malformed fleet: what is wrong with it, and how to spoil the valid tables."""

    name: str
    spoil: Callable[[Tables, Files], None]


def _conflicts(tables: Tables, files: Files) -> None:
    """Conflicting duplicates, equal times with different values, past and future samples,
    NaN, negative and non-numeric cells, an extra column, JSON-lines and Parquet files."""
    nodes, metrics = tables["nodes"], tables["node_metrics"]
    nodes.append({**nodes[0], "cores": 64, "state": "readonly"})
    metrics.append({**metrics[0], "cpu": 0.99})
    metrics.append({**metrics[1], "ts": 4_102_444_800})
    metrics.append({**metrics[2], "ts": 0})
    metrics[3]["memory"] = math.nan
    metrics[4]["net_in_bps"] = -5
    tables["bundle_metrics"][0]["msg_in_per_s"] = "many"
    for row in tables["allocation_requests"]:
        row["extra"] = "x"
    files["node_metrics/more.jsonl"] = jsonl_text(metrics[:3]).encode()
    files["bundle_metrics/more.parquet"] = parquet_bytes(tables["bundle_metrics"][:2])


def _huge_numbers(tables: Tables, files: Files) -> None:
    """1e308 in a throughput and a network column, cores 1e29 and disks 1e32."""
    tables["node_metrics"][0]["throughput_in_bytes_per_s"] = 1e308
    tables["node_metrics"][1]["net_out_bps"] = 1e308
    tables["bundle_metrics"][0]["throughput_out_bytes_per_s"] = 1e308
    tables["nodes"][1]["cores"] = 10**29
    tables["nodes"][2]["disk_total_bytes"] = 10**32


def _all_down(tables: Tables, files: Files) -> None:
    """Every node down."""
    for row in tables["nodes"]:
        row["state"] = "down"


def _bad_names(tables: Tables, files: Files) -> None:
    """Malformed bundle names and topics, unknown brokers."""
    tables["bundle_metrics"][0]["bundle"] = "acme/orders/not-a-range"
    tables["bundle_metrics"][1]["bundle"] = "\x1b[31m/x/0x0_0x1"
    tables["bundle_metrics"][2]["broker"] = "ghost:8080"
    tables["allocation_requests"][0]["topic"] = "bad topic!"


def _garbage_parquet(tables: Tables, files: Files) -> None:
    """A garbage .parquet file among the node metrics."""
    files["node_metrics/junk.parquet"] = b"PAR1 this is not parquet PAR1"


def _encodings(tables: Tables, files: Files) -> None:
    """A BOM (an Excel export), a Latin-1 file, an empty file."""
    files["nodes/excel.csv"] = b"\xef\xbb\xbf" + csv_text(tables["nodes"][:1]).encode()
    files["bundle_metrics/latin1.csv"] = "cluster,bundle\nzürich,x\n".encode("latin-1")
    files["allocation_requests/empty.csv"] = b""


def _percent_telemetry(tables: Tables, files: Files) -> None:
    """Every usage written in percent (85 for 0.85), a NIC written in Gb/s (issue 42)."""
    for row in tables["node_metrics"]:
        for column in ("cpu", "memory", "direct_memory"):
            row[column] = round(float(row[column]) * 100 + 1.5, 1)
    tables["nodes"][0]["nic_bps"] = 10


def _huge_and_bad_names(tables: Tables, files: Files) -> None:
    _huge_numbers(tables, files)
    _bad_names(tables, files)


FLEETS = [
    Fleet("conflicts", _conflicts),
    Fleet("huge numbers and bad names", _huge_and_bad_names),
    Fleet("every node down", _all_down),
    Fleet("garbage parquet", _garbage_parquet),
    Fleet("encodings", _encodings),
    Fleet("telemetry in percent", _percent_telemetry),
]


def _write_fleet(root: Path, fleet: Fleet) -> None:
    tables = {t: valid_rows(t) for t in ("nodes", "node_metrics", "bundle_metrics")}
    tables["allocation_requests"] = valid_rows("allocation_requests")
    files: Files = {}
    fleet.spoil(tables, files)
    for table, rows in tables.items():
        files.setdefault(f"{table}/part-0.csv", csv_text(rows).encode())
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def _fleet_param(fleet: Fleet) -> object:
    return pytest.param(fleet, id=fleet.name)


@pytest.mark.slow
@pytest.mark.parametrize("fleet", [_fleet_param(f) for f in FLEETS])
def test_pipeline_keeps_the_contract_on_malformed_fleets(spark: SparkSession, fleet: Fleet) -> None:
    """pipeline run on a malformed fleet: published with every row counted, or one error
    line and nothing published."""
    assert NODES  # the valid tables name these nodes
    with fresh_dir() as tmp:
        _write_fleet(tmp / "in", fleet)
        out = tmp / "out"
        args = ["pipeline", "run", "--input", str(tmp / "in"), "--output", str(out)]
        args += ["--now", NOW, "--master", "local[2]", "--json"]
        run = invoke(args, watchdog=1200)  # a backstop only: Spark on a busy machine is slow
        check_contract(run, outputs=[out])
        if run.result.exit_code == 0:
            tables = json.loads((out / "run.json").read_text())["tables"]
            for name, counts in tables.items():
                assert counts["read"] == counts["accepted"] + counts["quarantined"], name


@pytest.mark.slow
def test_pipeline_with_no_usable_telemetry_says_why_and_publishes_nothing(
    spark: SparkSession,
) -> None:
    """Usages in percent quarantine every sample: the run stops with one error line naming
    the dominant rule and what to write instead, exit 2, nothing published (it said "mean
    load 0.000" and exit 0 before, issue 42)."""
    with fresh_dir() as tmp:
        _write_fleet(tmp / "in", Fleet("percent", _percent_telemetry))
        out = tmp / "out"
        args = ["pipeline", "run", "--input", str(tmp / "in"), "--output", str(out)]
        run = invoke([*args, "--now", NOW, "--master", "local[2]"], watchdog=1200)
        check_contract(run, outputs=[out])
        assert run.result.exit_code == 2, run.describe()
        assert "no usable telemetry" in run.stderr and "as out_of_range" in run.stderr
        assert "usages are fractions; for" in run.stderr
        assert not out.exists()
