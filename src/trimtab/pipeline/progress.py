"""Per-stage progress of a running Spark job, for progress bars on long commands.

Spark's console progress bar is off (it would garble rich's), so this polls the session's
status tracker on a background thread while the caller's action blocks the main thread, and
reports each stage of the jobs started under one job group: tasks done of total. The status
tracker works with the UI disabled and on any master.

Example::

    with watch_stages(spark, lambda s: print(s.stage, s.done, s.total)) as group:
        frame.write.parquet(path)          # jobs of this thread run in ``group``
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["StageProgress", "watch_stages"]


@dataclass(frozen=True, slots=True)
class StageProgress:
    """One stage's tasks: ``done`` (completed) of ``total``, ``active`` running, ``failed``."""

    stage: int
    name: str
    done: int
    total: int
    active: int
    failed: int


@contextmanager
def watch_stages(
    spark: SparkSession,
    report: Callable[[StageProgress], None],
    *,
    every: float = 0.2,
    description: str = "trimtab",
) -> Iterator[str]:
    """Run the block's jobs in a fresh job group and ``report`` every change of their stages
    (from a background thread; once more at the end, so the last counts are seen)."""
    sc = spark.sparkContext
    group = f"trimtab-{uuid.uuid4().hex[:12]}"
    previous = {k: sc.getLocalProperty(k) for k in ("spark.jobGroup.id", "spark.job.description")}
    sc.setJobGroup(group, description)
    seen: dict[int, StageProgress] = {}
    stop = threading.Event()

    def poll() -> None:
        tracker = sc.statusTracker()
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in sorted(info.stageIds) if info is not None else ():
                got = tracker.getStageInfo(stage)
                if got is None or (got.numCompletedTasks == 0 and got.numActiveTasks == 0):
                    continue  # not started (or skipped: its output was reused)
                now = StageProgress(
                    stage=got.stageId,
                    name=got.name,
                    done=got.numCompletedTasks,
                    total=got.numTasks,
                    active=got.numActiveTasks,
                    failed=got.numFailedTasks,
                )
                if seen.get(stage) != now:
                    seen[stage] = now
                    report(now)

    def loop() -> None:
        while not stop.wait(every):
            try:
                poll()
            except Exception:  # a display must never break the job: stop showing instead
                return

    thread = threading.Thread(target=loop, name="trimtab-stage-progress", daemon=True)
    thread.start()
    try:
        yield group
    finally:
        stop.set()
        thread.join()
        poll()
        for key, value in previous.items():
            sc.setLocalProperty(key, value)  # type: ignore[arg-type]  # None clears it
