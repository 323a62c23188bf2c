"""Campaign rows for the stream cases issue 43 found, as ``trimtab pipeline stream`` runs as a
real process on local Spark (one test, one JVM, the cases one after the other):

- a FIFO landing in a watched directory is skipped with one ``warning:`` and never blocks the
  stream; the CSV file beside it is read and decided on (its one unknown node quarantined);
- a file written in place in two halves was read only up to its first half (25 of 52 rows),
  with no warning: Spark's file source reads a file once, so the stream now says the file
  changed after it was read, and the docs say to move files in whole;
- a Latin-1 file was accepted, where ``pipeline run`` refuses its rows: its row now goes to
  quarantine under ``not_utf8``, as in the batch job;
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


def _batch(out: Path) -> int:
    try:
        return int(json.loads((out / "status.json").read_text())["batch"])
    except (OSError, ValueError, KeyError):
        return -1


@pytest.mark.spark
def test_a_fifo_a_file_in_two_halves_and_a_latin1_file_as_the_stream_lands_them(
    tmp_path: Path,
) -> None:
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

        # A file written in place in two halves, 25 rows then 27, a trigger apart.
        first = (frame["ts"] == frame["ts"].min()) & (frame["node"] != UNKNOWN_NODE)
        base = frame[first]  # one sample per node, then later ones
        rows = pd.concat(
            [base.assign(ts=base["ts"] + pd.Timedelta(minutes=10 + k)) for k in range(52)]
        ).iloc[:52]  # 52 distinct samples, later than the fleet's
        half = gen / "node_metrics" / "halves.csv"
        seen = _batch(out)
        rows.iloc[:25].to_csv(half, index=False)
        _wait("a trigger after the first half", lambda: _batch(out) > seen + 1, log)
        rows.iloc[25:].to_csv(half, mode="a", header=False, index=False)
        _wait(
            "the two halves' warning",
            lambda: "halves.csv" in log.read_text("utf-8", "replace"),
            log,
        )

        # A Latin-1 file: its one row names a node with an e-acute byte that is not UTF-8.
        latin = rows.iloc[:1].copy()
        latin["node"] = "caf\u00e9-broker:8080"
        (gen / "node_metrics" / "latin1.csv").write_bytes(
            latin.to_csv(index=False).encode("latin-1")
        )
        _wait("the Latin-1 row in quarantine", lambda: _quarantined(out, "not UTF-8"), log)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(180)
    said = log.read_text(errors="replace")
    assert code == 0, said
    warnings = [x for x in said.splitlines() if x.startswith("warning:")]
    assert warnings[0] == (
        f"warning: {fifo} is a FIFO (named pipe), not a regular file: the stream skips it; "
        "move telemetry files into the input directory whole"
    )
    assert len(warnings) == 2 and warnings[1].startswith(
        f"warning: {half} changed after the stream read it"
    ), warnings
    assert "move files into the input directory whole" in warnings[1]
    assert "Traceback" not in said and " WARN " not in said, said
    quarantine = pd.read_parquet(out / "quarantine")
    unknown = quarantine[quarantine["rule"] == "unknown_node"]
    assert list(unknown["reason"]) == [f"node {UNKNOWN_NODE} is not a node of cluster cluster-00"]
    latin = quarantine[quarantine["reason"].str.contains("not UTF-8")]
    assert list(zip(latin["table"], latin["rule"], strict=True)) == [("node_metrics", "malformed")]
    assert "save the file as UTF-8" in latin["reason"].iloc[0]  # as `pipeline run` says it
    assert len(quarantine) == 2, quarantine  # the two halves' rows are good rows


def _quarantined(out: Path, reason: str) -> bool:
    """A quarantined row whose reason holds ``reason`` (the stream writes parts as it goes)."""
    try:
        return bool(pd.read_parquet(out / "quarantine")["reason"].str.contains(reason).any())
    except (OSError, ValueError, KeyError):
        return False
