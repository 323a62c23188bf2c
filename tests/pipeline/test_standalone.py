"""The same job on a real standalone Spark cluster (master + two workers on loopback)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from subprocess import Popen
from typing import IO

import pyarrow.parquet as pq
import pyspark
import pytest

from tests.pipeline.conftest import NOW, FinishedRun, run_command
from trimtab.pipeline.generate import GeneratedFleet

SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {deadline_s} s")


def start(spark_class: str, args: list[str], env: dict[str, str], log: IO[str]) -> Popen[bytes]:
    return subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark master and two one-core workers, all bound to 127.0.0.1."""
    logs = tmp_path_factory.mktemp("spark-logs")
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(logs / "work"),
        "PYSPARK_PYTHON": sys.executable,
    }
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    with ExitStack() as stack:
        handles = [stack.enter_context((logs / f"{n}.log").open("w")) for n in ("m", "w0", "w1")]
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        master += ["--port", str(port), "--webui-port", str(free_port())]
        procs = [start(spark_class, master, env, handles[0])]
        try:
            wait_for_port(port, 60)
            for log in handles[1:]:
                worker = ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1"]
                worker += ["--cores", "1", "--memory", "1g", "--webui-port", str(free_port())]
                procs.append(start(spark_class, worker, env, log))
            deadline = time.monotonic() + 60
            registered = "Successfully registered with master"
            while sum(registered in (logs / f"{n}.log").read_text() for n in ("w0", "w1")) < 2:
                assert time.monotonic() < deadline, "workers did not register with the master"
                time.sleep(0.3)
            yield url
        finally:
            for proc in reversed(procs):
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=20)


def _canonical(value: object) -> object:
    """Floats to ten significant digits: a sum may be added up in another order elsewhere."""
    return float(f"{value:.10g}") if isinstance(value, float) else value


def outputs(out: Path) -> dict[str, object]:
    """Every Parquet table as sorted rows, and every export file's text."""
    result: dict[str, object] = {}
    for path in sorted(p for p in out.iterdir() if any(p.glob("*.parquet"))):
        rows = [
            {k: _canonical(v) for k, v in row.items()} for row in pq.read_table(path).to_pylist()
        ]
        result[path.name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    for path in sorted((out / "exports").rglob("*")):
        if path.is_file() and not path.name.startswith("."):  # not Hadoop's .crc files
            result[str(path.relative_to(out))] = path.read_text()
    return result


@pytest.mark.slow
def test_standalone_cluster_gives_the_local_outputs(
    standalone_master: str, dirty_run: FinishedRun, dirty_fleet: GeneratedFleet, tmp_path: Path
) -> None:
    """`trimtab pipeline run --master spark://...` writes what local mode writes (the shared
    local run has the CLI's defaults at the same ``--now``)."""
    local = dirty_run.out
    remote = tmp_path / "standalone"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(Path(sys.executable).parent / "trimtab"), "pipeline", "run", "--json"]
    command += ["--input", str(dirty_fleet.out), "--output", str(remote)]
    command += ["--master", standalone_master, "--now", NOW.strftime("%Y-%m-%dT%H:%M:%S")]
    command += ["--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1"]
    proc = run_command(command, env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["tables"] == json.loads((local / "run.json").read_text())["tables"]
    local_outputs = outputs(local)
    assert {"quarantine", "node_load", "bookie_weights", "transfers"} <= set(local_outputs)
    assert outputs(remote) == local_outputs
