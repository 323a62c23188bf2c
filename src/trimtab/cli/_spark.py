"""Starting Spark for a command, and Ctrl-C while its jobs run.

PySpark, when it creates its context on the main thread, installs a SIGINT handler that
cancels every job and raises ``KeyboardInterrupt`` inside whatever call to the JVM is under
way: the command then failed on a cancelled job as if trimtab had a bug (an "internal
error" line and exit 1), or py4j logged its tracebacks. Here Spark starts on a helper thread,
so PySpark installs nothing, and a command's Spark work runs under :func:`interruptible`: the
first Ctrl-C cancels the jobs from another thread (a py4j call from the handler itself would
re-enter the connection the main thread is waiting on), the command ends with one line and
exit status 130, and an output being staged is not published (the previous one stays).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Interrupted", "interruptible", "start_spark"]


class Interrupted(Exception):  # noqa: N818 (what happened, not an error of the user's)
    """The user stopped a command with Ctrl-C; its Spark jobs were cancelled."""


def start_spark(**options: Any) -> SparkSession:
    """:func:`~trimtab.pipeline.session.spark_session` with ``options``, started on a helper
    thread so that PySpark leaves SIGINT alone (see the module docstring). The master and the
    ``--conf`` values are checked first (:mod:`trimtab.pipeline.preflight`): a mistake there
    is one error line in seconds, not a minute of JVM retries and stack traces."""
    from trimtab.pipeline.preflight import check_conf, check_master
    from trimtab.pipeline.session import MASTER_ENV, spark_session

    if not os.environ.get("PYSPARK_GATEWAY_PORT"):  # under spark-submit the JVM is up already
        master = options.get("master") or os.environ.get(MASTER_ENV)
        if master:
            check_master(master)
    check_conf(options.get("conf") or {})

    with ThreadPoolExecutor(1, thread_name_prefix="spark-start") as pool:
        return pool.submit(spark_session, **options).result()


@contextmanager
def interruptible(spark: SparkSession) -> Iterator[Callable[[], None]]:
    """Run the block's Spark work; a first Ctrl-C cancels its jobs and the block ends with
    :class:`Interrupted`, a second one ends the process at once (exit status 130). The block
    gets a check to call between its steps, so no new job starts after a Ctrl-C."""
    asked: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        asked.append(signum)
        if len(asked) > 1:
            os.write(2, b"interrupted again: stopping now\n")
            os._exit(130)
        os.write(2, b"interrupted: cancelling the Spark jobs (Ctrl-C again to stop now)\n")
        threading.Thread(target=spark.sparkContext.cancelAllJobs, daemon=True).start()

    def check() -> None:
        if asked:
            raise Interrupted("its Spark jobs were cancelled")

    previous = signal.signal(signal.SIGINT, on_signal)
    try:
        yield check
    except Exception as exc:
        if asked and not isinstance(exc, Interrupted):
            raise Interrupted("its Spark jobs were cancelled") from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
