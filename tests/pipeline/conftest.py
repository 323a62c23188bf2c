"""One local Spark session for the whole test run (it takes ~10 s to start), one dirty
fleet, and one job run on it with the default options that read-only tests share."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from trimtab.pipeline.generate import FleetSpec, GeneratedFleet, generate_fleet
from trimtab.pipeline.job import JobOptions, RunSummary, run_job
from trimtab.pipeline.session import spark_session

#: The clock the tests run the job at (the generated telemetry ends before it).
NOW = datetime(2026, 11, 2, tzinfo=UTC)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session(
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
        app_name="trimtab-tests",
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dirty_fleet(tmp_path_factory: pytest.TempPathFactory) -> GeneratedFleet:
    """A small fleet with malformed rows of every kind the generator knows."""
    out = tmp_path_factory.mktemp("fleet")
    return generate_fleet(
        FleetSpec(clusters=2, brokers=4, bookies=4, bundles=16, minutes=20, bad_rows=0.02), out
    )


@dataclass(frozen=True)
class FinishedRun:
    """A job run's options, summary and output directory (tests only read it)."""

    options: JobOptions
    summary: RunSummary
    out: Path


@pytest.fixture(scope="session")
def dirty_run(
    spark: SparkSession, dirty_fleet: GeneratedFleet, tmp_path_factory: pytest.TempPathFactory
) -> FinishedRun:
    """The job on ``dirty_fleet`` with default options at ``NOW``, run once per test run.

    Tests that need a previous output to protect copy this one instead of running the job.
    """
    out = tmp_path_factory.mktemp("dirty-run") / "out"
    options = JobOptions(input=str(dirty_fleet.out), output=str(out), now=NOW)
    return FinishedRun(options, run_job(spark, options), out)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run_command(
    args: list[str], env: Mapping[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """A command run as a user types it, its output captured as text; its status unchecked."""
    return subprocess.run(
        args, capture_output=True, text=True, env=dict(env), timeout=timeout, check=False
    )


def interrupted(args: list[str], log: Path, ready: Callable[[int], bool]) -> tuple[int, str]:
    """Run ``args`` as a process, stderr to ``log``; once ``ready(pid)``, Ctrl-C (SIGINT) it.
    Its exit status and what it said on stderr."""
    with log.open("wb") as stderr:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 180
        while not ready(process.pid) and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()[-3000:]
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        return process.wait(180), log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
