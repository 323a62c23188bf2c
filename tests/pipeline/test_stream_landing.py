"""What lands in a watched directory besides whole UTF-8 files (issue 43, points 1 and 6), as a
real ``trimtab pipeline stream`` process on local Spark (one test: it costs a JVM).

- A Latin-1 CSV is read as ``pipeline run`` reads it: Spark's CSV decoding turns the bytes
  that are not UTF-8 into U+FFFD, and the row rules judge what is left. ``pipeline run`` on the
  same file quarantines the row as ``unknown_node`` with the reason asserted here (tried by
  hand on a generated fleet); neither command refuses the file as a whole.
- A FIFO arriving later is skipped with one ``warning:`` and never blocks the stream.
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

LATIN_NODE = "caf\u00e9-broker:8080"


def _wait(what: str, ready: object, log: Path, limit: float = 420) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        time.sleep(1)
    pytest.fail(f"{what} not seen; stderr: {log.read_text(errors='replace')[-2000:]}")


@pytest.mark.spark
def test_a_latin1_file_and_a_late_fifo_in_the_stream(tmp_path: Path) -> None:
    gen = tmp_path / "in"
    generate_fleet(FleetSpec(clusters=1, brokers=3, bookies=3, bundles=8, minutes=3), gen)
    (parquet,) = (gen / "node_metrics").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    frame.loc[len(frame)] = frame.iloc[0]
    frame.loc[len(frame) - 1, "node"] = LATIN_NODE
    parquet.unlink()
    frame.to_csv(gen / "node_metrics" / "part-0.csv", index=False, encoding="latin-1")
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
    assert row.reason == "node caf\ufffd-broker:8080 is not a node of cluster cluster-00"
