"""A FIFO landing in a directory ``trimtab pipeline stream`` watches (issue 43, point 1), as a
real process on local Spark (one test: it costs a JVM).

- The FIFO is skipped with one ``warning:`` and never blocks the stream: the CSV file beside
  it is read and decided on (its one unknown node quarantined).
- Spark's own warnings ("Disabling AQE ...") stay off stderr without ``trimtab --verbose``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from trimtab.pipeline.generate import FleetSpec, generate_fleet

UNKNOWN_NODE = "cafe-broker:8080"


def _wait(what: str, ready: object, log: Path, limit: float = 420) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        time.sleep(1)
    pytest.fail(f"{what} not seen; stderr: {log.read_text(errors='replace')[-2000:]}")


@pytest.mark.spark
def test_a_fifo_landing_beside_the_telemetry_is_one_warning(tmp_path: Path) -> None:
    gen = tmp_path / "in"
    generate_fleet(FleetSpec(clusters=1, brokers=3, bookies=3, bundles=8, minutes=3), gen)
    (parquet,) = (gen / "node_metrics").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    frame.loc[len(frame)] = frame.iloc[0]
    frame.loc[len(frame) - 1, "node"] = UNKNOWN_NODE
    parquet.unlink()
    frame.to_csv(gen / "node_metrics" / "part-0.csv", index=False)
    out, log = tmp_path / "out", tmp_path / "stream.err"
    trimtab = str(Path(sys.executable).parent / "trimtab")
    args = [trimtab, "pipeline", "stream", "--input", str(gen)]
    args += ["--output", str(out), "--trigger", "2s", "--conf", "spark.ui.enabled=false"]
    with log.open("wb") as err:
        env = os.environ | {"COLUMNS": "1000"}  # a warning on one line, as a log keeps it
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        _wait("the first trigger", lambda: (out / "status.json").exists(), log)
        fifo = gen / "node_metrics" / "late.csv"
        os.mkfifo(fifo)
        _wait("the FIFO's warning", lambda: "late.csv" in log.read_text(errors="replace"), log)
        status = json.loads((out / "status.json").read_text())
        assert status["totals"]["rows_quarantined"] == 1
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(180)
    said = log.read_text(errors="replace")
    assert code == 0, said
    warnings = [x for x in said.splitlines() if x.startswith("warning:")]
    assert warnings == [
        f"warning: {fifo} is a FIFO (named pipe), not a regular file: the stream skips it; "
        "move telemetry files into the input directory whole"
    ]
    assert "Traceback" not in said and " WARN " not in said, said
    quarantine = pd.read_parquet(out / "quarantine")
    (row,) = quarantine.itertuples()
    assert (row.table, row.rule) == ("node_metrics", "unknown_node")
    assert row.reason == f"node {UNKNOWN_NODE} is not a node of cluster cluster-00"
