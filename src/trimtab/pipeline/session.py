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
(the whole job at 10 M rows: 77 s against 50 s).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_CONF", "JIT_OPTION", "LOCAL_CONF", "MASTER_ENV", "parse_conf", "spark_session"]

MASTER_ENV = "TRIMTAB_SPARK_MASTER"

DEFAULT_CONF: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
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
}

#: Lets HotSpot compile the row rules' large generated method (see the module docstring).
JIT_OPTION = "-XX:-DontCompileHugeMethods"
_JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")

#: Local runs only: the driver is the executor, and Spark's 1 GiB default heap makes a
#: fleet's aggregations spill long before the machine runs out of memory.
LOCAL_CONF: Mapping[str, str] = {"spark.driver.memory": "4g"}


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
) -> SparkSession:
    """Get or create the session (see the module docstring for how the master is chosen)."""
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
        if JIT_OPTION not in given:
            builder = builder.config(key, f"{given} {JIT_OPTION}".strip())
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
