"""Which master runs the job: --master, TRIMTAB_SPARK_MASTER, spark-submit's, or local[*]."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from tests.pipeline.conftest import FinishedRun, interrupted, run_command
from trimtab.cli.pipeline import small_input
from trimtab.pipeline.generate import FleetSpec, GeneratedFleet, generate_fleet
from trimtab.pipeline.session import (
    JIT_OPTION,
    LOG_CONFIG,
    MASTER_ENV,
    SMALL_RUN_JIT_OPTION,
    java_options,
    logging_options,
    parse_conf,
)

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


def test_java_options_keep_the_users_and_add_c1_only_for_small_runs() -> None:
    """The JIT option is added once, after the user's options; a small run also compiles
    with C1 only, unless the user chose a JIT mode of their own."""
    assert java_options("") == JIT_OPTION
    assert java_options("-Xss4m") == f"-Xss4m {JIT_OPTION}"
    assert java_options(f"{JIT_OPTION} -Xss4m") == f"{JIT_OPTION} -Xss4m"
    assert java_options("", small=True) == f"{JIT_OPTION} {SMALL_RUN_JIT_OPTION}"
    for own in ("-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation"):
        assert java_options(own, small=True) == f"{own} {JIT_OPTION}"


def test_the_driver_logs_with_trimtabs_file_unless_the_user_has_one(tmp_path: Path) -> None:
    """The driver gets trimtab's log4j2 file after the user's options, unless the options
    name a file or Spark's configuration directory holds one (Spark would read it)."""
    mine = f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
    assert LOG_CONFIG.is_file()
    assert logging_options("", {}) == mine
    assert logging_options("-Xss4m", {"SPARK_CONF_DIR": str(tmp_path)}) == f"-Xss4m {mine}"
    own = "-Dlog4j2.configurationFile=/etc/spark/log4j2.xml"
    assert logging_options(own, {}) == own
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert logging_options("", {"SPARK_CONF_DIR": str(tmp_path)}) == ""
    assert logging_options("", {"SPARK_HOME": str(tmp_path.parent)}) == mine
    (tmp_path.parent / "conf").mkdir()
    (tmp_path.parent / "conf" / "log4j2.xml").write_text("<Configuration/>\n")
    assert logging_options("", {"SPARK_HOME": str(tmp_path.parent)}) == ""


@pytest.mark.spark
@pytest.mark.subprocess
def test_an_input_refused_after_spark_starts_is_one_error_line(tmp_path: Path) -> None:
    """`trimtab pipeline run` as typed, on telemetry lacking a required column (found once
    Spark reads the files): exit 2, and stderr is the error line alone; Spark's start-up
    lines are gone (the JVM's own notice of its incubator modules is not Spark's to drop)."""
    fleet = generate_fleet(FleetSpec(clusters=1, brokers=3, bookies=3, minutes=2), tmp_path)
    for part in (fleet.out / "node_metrics").glob("*.parquet"):
        pq.write_table(pq.read_table(part).drop_columns(["cpu"]), part)
    env = {k: v for k, v in os.environ.items() if k not in (MASTER_ENV, "SPARK_CONF_DIR")}
    command = [str(Path(sys.executable).parent / "trimtab"), "pipeline", "run"]
    done = run_command(
        [*command, "--input", str(fleet.out), "--output", str(tmp_path / "out")], env
    )
    assert done.returncode == 2, done.stderr[-3000:]
    lines = [x for x in done.stderr.splitlines() if not x.startswith("WARNING: Using incubator")]
    assert len(lines) == 1 and lines[0].startswith("error: table node_metrics: "), lines
    assert "lacks required column(s) cpu" in lines[0]
    assert not (tmp_path / "out").exists()


def test_ctrl_c_during_a_run_cancels_it_and_keeps_the_previous_output(
    dirty_run: FinishedRun, dirty_fleet: GeneratedFleet, tmp_path: Path
) -> None:
    """`trimtab pipeline run` as typed, over an earlier output, interrupted with Ctrl-C once
    its run has begun: its Spark jobs are cancelled, it says so and exits 130 (not "internal
    error", exit 1, as when PySpark's own handler cancelled the jobs under it), and the
    earlier output is still the one in place."""
    out = tmp_path / "out"
    shutil.copytree(dirty_run.out, out)
    before = (out / "run.json").read_text()
    command = [str(Path(sys.executable).parent / "trimtab"), "pipeline", "run"]
    command += ["--input", str(dirty_fleet.out), "--output", str(out)]
    status, said = interrupted(
        command, tmp_path / "run.log", lambda _: any(tmp_path.glob("out.staging-*"))
    )
    assert status == 130, said[-3000:]
    assert "interrupted: its Spark jobs were cancelled; nothing was published" in said
    assert "internal error" not in said and "Traceback" not in said, said[-3000:]
    assert (out / "run.json").read_text() == before


def test_small_input_is_local_telemetry_the_job_keeps_as_local_rows(tmp_path: Path) -> None:
    """Small: every telemetry table's files, with the load reports' (staged into both
    tables), hold at most the job's local-rows limit; a bigger table or a remote input is
    not small."""
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / "n.csv").write_bytes(b"x" * 500)  # the inventory does not count
    (tmp_path / "node_metrics").mkdir()
    (tmp_path / "node_metrics" / "a.csv").write_bytes(b"x" * 60)
    (tmp_path / "node_metrics" / "b.csv").write_bytes(b"x" * 40)
    assert small_input(str(tmp_path), 100)
    assert small_input(f"file://{tmp_path}", 100)
    assert small_input(f"file:{tmp_path}", 100)  # Hadoop's form, as the job prints paths
    assert not small_input(str(tmp_path), 99)
    (tmp_path / "bundle_metrics").mkdir()
    (tmp_path / "bundle_metrics" / "a.csv").write_bytes(b"x" * 100)
    assert small_input(str(tmp_path), 100)  # each table at the limit: both kept local
    reports = tmp_path / "load_reports" / "pulsar"
    reports.mkdir(parents=True)
    (reports / "b1.json").write_bytes(b"x")
    assert not small_input(str(tmp_path), 100)  # its rows join both tables
    assert small_input(str(tmp_path), 101)
    assert not small_input("hdfs://namenode/fleet", 1 << 40)


@pytest.mark.slow
@pytest.mark.spark
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
    submit = [str(SPARK_SUBMIT), "--master", "local[1]", "--conf", "spark.ui.enabled=false"]
    done = run_command([*submit, "--driver-memory", "1g", str(script)], env)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    assert printed["spark"]["master"] == "local[1]"
    run = json.loads((out / "run.json").read_text())
    assert run["spark"]["master"] == "local[1]"
    assert run["tables"] == printed["tables"]


def test_spark_logs_errors_without_stack_traces_unless_verbose() -> None:
    """Issue 43: Spark's warnings and Java stack traces stay off stderr unless
    ``trimtab --verbose`` (which sets TRIMTAB_VERBOSE) asks for them."""
    from trimtab.pipeline.session import LOG_CONFIG_VERBOSE, VERBOSE_ENV

    quiet = LOG_CONFIG.read_text()
    assert "rootLogger.level = error" in quiet
    assert "alwaysWriteExceptions = false" in quiet and "%ex" not in quiet
    loud = LOG_CONFIG_VERBOSE.read_text()
    assert "rootLogger.level = warn" in loud and "%ex" in loud
    assert logging_options("", {VERBOSE_ENV: "1"}).endswith(LOG_CONFIG_VERBOSE.as_uri())
