"""A Spark failure that gets past the checks is one ``error:`` line with Spark's own reason and
the crash report's path, never a page of Java stack traces (issue 43, point 1)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.online.conftest import trimtab_command
from trimtab.cli import _spark_failure

EXAMPLES = Path(__file__).parent.parent / "examples" / "shedding"


def _spark_exception(module: str, text: str) -> Exception:
    kind: type[Exception] = type("AnalysisException", (Exception,), {"__module__": module})
    return kind(text)


def test_spark_reason_is_the_first_line_of_the_java_message() -> None:
    exc = _spark_exception(
        "pyspark.errors.exceptions.captured",
        "[PATH_NOT_FOUND] Path does not exist: file:/data/x.\n\tat org.apache.spark.sql...\n",
    )
    assert _spark_failure(exc) == "[PATH_NOT_FOUND] Path does not exist: file:/data/x."
    py4j = _spark_exception(
        "py4j.protocol",
        "An error occurred while calling o33.load.\n: java.net.ConnectException: refused\n\tat x",
    )
    assert _spark_failure(py4j) == ": java.net.ConnectException: refused"
    assert _spark_failure(ValueError("ours")) is None


@pytest.mark.spark
def test_a_jvm_that_cannot_start_is_one_error_line(tmp_path: Path) -> None:
    """A driver heap too small for the JVM: past trimtab's checks, so Spark fails for real.
    The command prints the JVM's own two lines and then one ``error:`` line, exit 1."""
    run = subprocess.run(
        [
            *trimtab_command(),
            "pipeline",
            "run",
            "--input",
            str(EXAMPLES),
            "--output",
            str(tmp_path / "out"),
            "--conf",
            "spark.driver.memory=1k",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith("error: Spark failed: [JAVA_GATEWAY_EXITED] ")
    assert "the full report is in" in lines[-1]
    assert not any(line.lstrip().startswith("at ") for line in lines)
    assert "Traceback" not in run.stderr and len(lines) <= 4
