"""Streaming trigger benchmark: a 1,000-broker minute of telemetry, from landing to decision.

    .venv/bin/python -m bench.stream                          # 1,000 brokers, 100,000 bundles
    .venv/bin/python -m bench.stream --brokers 100 --bundles 10000 --minutes 3   # a quick look

Generates one cluster of ``--brokers`` brokers and ``--bundles`` bundles (one node row per
broker and bookie and one bundle row per bundle each minute), starts ``trimtab pipeline
stream`` as a user would (a real process, ``--trigger 2s``, ``--master local[2]``), waits for
its first trigger, then lands each minute's ``node_metrics`` and ``bundle_metrics`` files
together (written hidden, then renamed) and reads the stream's ``--json`` status lines.
Figures: the first trigger after the start (Spark's start included) and, per later minute,
``landing_to_decision_s`` from ``status.json`` (the newest file's modification time to the
published decision) with the trigger's compute and publish times when the stream reports
them. Goal (issue #22): a warm trigger under 10 s for 1,000 brokers and 100,000 bundle rows.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from trimtab.pipeline.generate import FleetSpec, generate_fleet

TABLES = ("node_metrics", "bundle_metrics")


def _lines(stream: Any, out: queue.Queue[dict[str, Any]]) -> None:
    for line in stream:
        line = line.strip()
        if line.startswith("{"):
            out.put(json.loads(line))


def _next_status(lines: queue.Queue[dict[str, Any]], after: int, timeout: float) -> dict[str, Any]:
    """The first status of a batch after ``after`` that read rows."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no trigger with rows within {timeout:.0f} s")
        try:
            status = lines.get(timeout=left)
        except queue.Empty:
            continue
        if int(status.get("batch", -1)) > after and int(status.get("rows_in", 0)) > 0:
            return status


def _land(gen: Path, into: Path, stamp: object, minute: int) -> None:
    """One minute's rows of every telemetry table, landed together."""
    staged = []
    for table in TABLES:
        rows = pq.read_table(gen / table)
        picked = rows.filter(pc.equal(rows["ts"], stamp))
        directory = into / table
        directory.mkdir(parents=True, exist_ok=True)
        hidden = directory / f".minute-{minute:04d}.parquet"
        pq.write_table(picked, hidden)
        staged.append(hidden)
    for hidden in staged:
        hidden.rename(hidden.with_name(hidden.name[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--bundles", type=int, default=100_000)
    parser.add_argument("--minutes", type=int, default=4, help="minutes landed after the first")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per trigger")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="trimtab-bench-stream-"))
    try:
        spec = FleetSpec(
            clusters=1,
            brokers=args.brokers,
            bookies=3,
            bundles=args.bundles,
            minutes=args.minutes + 1,
            seed=1,
        )
        gen = generate_fleet(spec, root / "gen").out
        stamps = pq.read_table(gen / "node_metrics", columns=["ts"])["ts"].unique().sort()
        shutil.copytree(gen / "nodes", root / "in" / "nodes")
        command = [
            str(Path(sys.executable).with_name("trimtab")),  # the command a user types
            "pipeline",
            "stream",
            "--input",
            str(root / "in"),
            "--output",
            str(root / "out"),
            "--trigger",
            "2s",
            "--master",
            args.master,
            "--conf",
            "spark.ui.enabled=false",
            "--json",
        ]
        env = os.environ | {"PYSPARK_PYTHON": sys.executable}
        log = (root / "stream.log").open("w")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=_lines, args=(process.stdout, lines), daemon=True).start()
        try:
            print(
                f"1 cluster: {args.brokers:,} brokers + 3 bookies, {args.bundles:,} bundles; "
                f"`pipeline stream --trigger 2s --master {args.master}`"
            )
            started = time.monotonic()
            _land(gen, root / "in", stamps[0], 0)
            first = _next_status(lines, -1, args.timeout)
            print(
                f"first trigger (Spark's start included): {time.monotonic() - started:.1f} s "
                f"after the process started, {first['rows_in']:,} rows"
            )
            batch, warm = int(first["batch"]), []
            for minute in range(1, len(stamps)):
                _land(gen, root / "in", stamps[minute], minute)
                status = _next_status(lines, batch, args.timeout)
                batch = int(status["batch"])
                landing = float(status["landing_to_decision_s"])
                warm.append(landing)
                timings = status.get("timings_s", {})
                extra = " ".join(f"{k} {v:.2f} s" for k, v in timings.items() if _number(v))
                print(
                    f"minute {minute}: {status['rows_in']:,} rows, landing → decision "
                    f"{landing:.1f} s {extra}".rstrip()
                )
        except TimeoutError as error:
            tail = (root / "stream.log").read_text().splitlines()[-15:]
            sys.exit("\n".join([f"bench: {error}; the stream's stderr ended with:", *tail]))
        else:
            print(
                f"warm trigger, landing → decision: median {statistics.median(warm):.1f} s, "
                f"max {max(warm):.1f} s over {len(warm)} minutes (goal < 10 s); "
                f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
            )
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


if __name__ == "__main__":
    main()
