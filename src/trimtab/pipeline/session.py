"""The one place a SparkSession is made.

Which master runs the job, first match wins:

1. ``master=`` given by the caller (the CLI's ``--master``);
2. the ``TRIMTAB_SPARK_MASTER`` environment variable;
3. whatever ``spark-submit`` configured (it sets ``spark.master`` before Python starts);
4. ``local[*]``, the embedded default.

The Python workers must run this interpreter, or they fail to import pyarrow and trimtab, so
``PYSPARK_PYTHON`` is set to ``sys.executable`` unless the user set it. Small-data defaults
(few shuffle partitions, Arrow on, no UI in tests) are applied only where the user has not set
the key: ``--conf key=value`` always wins. Local masters bind to loopback (``SPARK_LOCAL_IP``)
and get a 4 GiB driver heap (:data:`LOCAL_CONF`).

The JVMs run with ``-XX:-DontCompileHugeMethods`` (:data:`JIT_OPTION`), added to any
``extraJavaOptions`` the user gives rather than replacing them: the row rules compile into
one generated method of about 10 KB of bytecode for ``node_metrics``, past the 8,000 bytes
HotSpot otherwise refuses to compile, and an interpreted rule pass was five times slower
(the whole job at 10 M rows: 77 s against 50 s). A small local run (``small=True``: the
CLI's ``pipeline run`` on telemetry the job will keep as local rows) compiles with C1 only
(:func:`java_options`). The driver logs with trimtab's log4j2 file unless the user has one
(:func:`logging_options`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_CONF",
    "JIT_OPTION",
    "LOCAL_CONF",
    "LOG_CONFIG",
    "MASTER_ENV",
    "SMALL_RUN_JIT_OPTION",
    "java_options",
    "logging_options",
    "parse_conf",
    "spark_session",
]

MASTER_ENV = "TRIMTAB_SPARK_MASTER"

DEFAULT_CONF: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    # The row rules and the stream's state function are wide plans; past 25 fields Spark
    # cuts their description short and warns on stderr, once a run, about its own debug text.
    "spark.sql.debug.maxToStringFields": "500",
    # Duplicate checks collect each key's sample times in one hash aggregation; past this
    # many keys per task Spark would switch to sorting every row.
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "1000000",
    # The row rules are one large expression. Inferring constraints from it (for the
    # not-null filters a join could use) cost 7-10 s of planning per query that joins the
    # checked rows, far more than those filters ever save here.
    "spark.sql.constraintPropagation.enabled": "false",
    # A rule's condition is an OR of tests whose later terms run only when the earlier ones
    # fail; by default Spark hoists a subexpression repeated under AND/OR out of them and
    # computes it for every row. Measured on 41.6 M bundle rows: the rules cost about half.
    "spark.sql.subexpressionElimination.skipForShortcutExpr": "true",
    # One run generates about 290 classes (the row rules per table and read format, the
    # aggregations, the writers); Spark keeps only 100, so every run evicted the last run's
    # and compiled all of them again, and HotSpot then compiled those anew: on the demo
    # fleet, 290 Janino compiles and most of the JIT's work in every warm run. A session
    # that runs the job again (a bench, `pipeline stream`'s triggers) reuses them.
    "spark.sql.codegen.cache.maxEntries": "2000",
    # Inputs small enough to keep as local rows are handed to the per-cluster steps in one
    # partition, which needs no shuffle to be grouped. Spark 4 shuffles anyway when it
    # estimates a single partition above 128 MiB, and it estimates a join as the product of
    # its sides' sizes: the shedding plans' join of three local tables shuffled both sides
    # of their cogroup (two Spark jobs of five). Spark 3's default, no limit, is restored.
    "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
    # PySpark's own applyInPandasWithState pads its output with all-empty frames and
    # concatenates them, which pandas 2 warns about on stderr at every trigger of `pipeline
    # stream`: a warning about PySpark's code that a user can do nothing about.
    "spark.executorEnv.PYTHONWARNINGS": (
        "ignore:The behavior of DataFrame concatenation:FutureWarning"
    ),
}

#: Lets HotSpot compile the row rules' large generated method (see the module docstring).
JIT_OPTION = "-XX:-DontCompileHugeMethods"
#: A small local run: HotSpot's quick compiler only (see :func:`java_options`).
SMALL_RUN_JIT_OPTION = "-XX:TieredStopAtLevel=1"
_JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")

#: The driver's log4j2 file when the user brings none (see :func:`logging_options`).
LOG_CONFIG = Path(__file__).resolve().parent.parent / "data" / "spark-log4j2.properties"
#: The same under ``trimtab --verbose`` (:data:`VERBOSE_ENV` set): warnings and stack traces.
LOG_CONFIG_VERBOSE = LOG_CONFIG.with_name("spark-log4j2-verbose.properties")
#: Set by ``trimtab --verbose``: libraries' warnings (Spark, kazoo) reach stderr.
VERBOSE_ENV = "TRIMTAB_VERBOSE"

#: Local runs only: the driver is the executor, and Spark's 1 GiB default heap makes a
#: fleet's aggregations spill long before the machine runs out of memory.
LOCAL_CONF: Mapping[str, str] = {"spark.driver.memory": "4g"}


def java_options(given: str, *, small: bool = False) -> str:
    """The JVM options the user ``given``, with :data:`JIT_OPTION` added, and for a
    ``small`` run :data:`SMALL_RUN_JIT_OPTION` unless the user chose a JIT mode.

    A job on a few megabytes is all planning: Spark's planner runs once, cold, and HotSpot's
    optimising compiler (C2) spent about 27 s of CPU compiling it on 2 cores, for code that
    then runs once. With C1 only, ``trimtab pipeline run`` on the demo fleet took 43-45 s
    instead of 55-58 s. Over big inputs the row rules and aggregations need C2's code."""
    options = given if JIT_OPTION in given else f"{given} {JIT_OPTION}".strip()
    if small and "TieredStopAtLevel" not in given and "TieredCompilation" not in given:
        options = f"{options} {SMALL_RUN_JIT_OPTION}"
    return options


def logging_options(given: str, env: Mapping[str, str]) -> str:
    """The driver's JVM options ``given``, with :data:`LOG_CONFIG` as its log4j2 file
    unless the user has one: named in ``given``, or in Spark's configuration directory
    (``SPARK_CONF_DIR``, else ``SPARK_HOME/conf``), where Spark would find it.

    Spark's default profile prints four lines on stderr at every start, before anything of
    the command's own: with an error, they buried the one ``error:`` line a user reads."""
    if "log4j2.configurationFile" in given or "log4j.configuration" in given:
        return given
    home = env.get("SPARK_HOME")
    conf_dir = env.get("SPARK_CONF_DIR") or (str(Path(home, "conf")) if home else None)
    if conf_dir and any(Path(conf_dir).glob("log4j2*")):
        return given
    chosen = LOG_CONFIG_VERBOSE if env.get(VERBOSE_ENV) else LOG_CONFIG
    return f"{given} -Dlog4j2.configurationFile={chosen.as_uri()}".strip()


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}``; a pair without ``=`` is an error."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf takes key=value, got {pair!r}")
        conf[key.strip()] = value.strip()
    return conf


def spark_session(
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "trimtab",
    small: bool = False,
) -> SparkSession:
    """Get or create the session (see the module docstring for how the master is chosen).

    ``small``: the run's input is small enough to be kept as local rows (a one-off job on
    a few megabytes); a local session then compiles with C1 only (:func:`java_options`)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Under spark-submit the JVM is already up with its settings as system properties;
        # connect to it first, or SparkConf cannot see them (and the master would be lost).
        from pyspark import SparkContext

        SparkContext._ensure_initialized()
    base = SparkConf()  # picks up what spark-submit passed
    chosen = master or os.environ.get(MASTER_ENV) or base.get("spark.master") or "local[*]"
    if chosen.startswith("local"):
        # A local run talks only to itself: keep the driver on loopback, not on whatever
        # interface the host name resolves to.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name).master(chosen)
    user = dict(conf or {})
    defaults = dict(DEFAULT_CONF)
    if chosen.startswith("local"):
        defaults |= LOCAL_CONF
    for key, value in defaults.items():
        if key not in user and not base.contains(key):
            builder = builder.config(key, value)
    for key, value in user.items():
        builder = builder.config(key, value)
    for key in _JAVA_OPTIONS:
        given = user.get(key) or base.get(key) or ""
        wanted = java_options(given, small=small and chosen.startswith("local"))
        if key == "spark.driver.extraJavaOptions":
            wanted = logging_options(wanted, os.environ)
        if wanted != given:
            builder = builder.config(key, wanted)
    session = builder.getOrCreate()
    # PySpark's own default (WARN) would undo the log4j2 file's errors-only level: Spark's
    # warnings ("Disabling AQE", "batch is falling behind") reach stderr only under --verbose
    session.sparkContext.setLogLevel("WARN" if os.environ.get(VERBOSE_ENV) else "ERROR")
    return session
