"""Which master runs the job: --master, TRIMTAB_SPARK_MASTER, spark-submit's, or local[*]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from trimtab.pipeline.generate import GeneratedFleet
from trimtab.pipeline.session import JIT_OPTION, MASTER_ENV, parse_conf

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def test_conf_pairs_are_parsed() -> None:
    """key=value pairs keep everything after the first '='; a pair without one is refused."""
    assert parse_conf(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="key=value"):
        parse_conf(["nonsense"])


def test_the_jvm_compiles_the_row_rules_large_method(spark: SparkSession) -> None:
    """The local JVM runs with the JIT option (an interpreted rule pass was 5x slower), and
    executors are given it too, after any options of their own."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    arguments = list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert JIT_OPTION in arguments
    conf = spark.sparkContext.getConf()
    assert JIT_OPTION in (conf.get("spark.executor.extraJavaOptions") or "")


@pytest.mark.slow
def test_the_job_runs_under_spark_submit_on_its_master(
    dirty_fleet: GeneratedFleet, tmp_path: Path
) -> None:
    """`spark-submit --master local[1]` runs the same CLI job, on the master spark-submit set."""
    script = tmp_path / "job.py"
    out = tmp_path / "out"
    script.write_text(
        "from trimtab.cli import main\n"
        f"main(['pipeline', 'run', '--input', {str(dirty_fleet.out)!r}, "
        f"'--output', {str(out)!r}, '--json'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != MASTER_ENV}
    env |= {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(
        [
            str(SPARK_SUBMIT),
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            "--driver-memory",
            "1g",
            str(script),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    assert printed["spark"]["master"] == "local[1]"
    run = json.loads((out / "run.json").read_text())
    assert run["spark"]["master"] == "local[1]"
    assert run["tables"] == printed["tables"]
