"""The stream's driver: the stateful query, started, watched and restarted.

Why a module of its own
    The parts of the stream (sources, state, decisions, publication) meet here: the wide
    frame is grouped by cluster into ``applyInPandasWithState`` (one :class:`~.decide.Decider`
    call per cluster and micro-batch), the result goes to :class:`~.publish.Publisher`, and
    the loop polls the inventory's files and restarts the query from its checkpoint when
    they change, so the state function sees the new inventory. One :class:`HadoopFS` serves
    the whole run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from trimtab.pipeline.fs import HadoopFS
from trimtab.pipeline.inventory import Inventory
from trimtab.pipeline.loads import window_seconds
from trimtab.pipeline.stream.decide import Decider
from trimtab.pipeline.stream.landing import watch_dirs
from trimtab.pipeline.stream.options import StreamOptions, interval
from trimtab.pipeline.stream.publish import Publisher
from trimtab.pipeline.stream.rows import OUT_COLUMNS, OUT_SCHEMA, STATE_SCHEMA
from trimtab.pipeline.stream.sources import inventory_signature, read_inventory, telemetry_stream
from trimtab.pipeline.stream.state import ClusterStream
from trimtab.pipeline.stream.wide import STREAM_TABLES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.state import GroupState

__all__ = ["run_stream", "stateful"]


def stateful(wide: DataFrame, decider: Decider) -> DataFrame:
    """``groupBy(cluster).applyInPandasWithState``: the per-cluster state across batches."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    def per_cluster(
        key: tuple[Any, ...], frames: Iterator[pd.DataFrame], group: GroupState
    ) -> Iterator[pd.DataFrame]:
        cluster = key[0]
        state = ClusterStream.loads(group.get[0]) if group.exists else ClusterStream()
        parts = [f for f in frames if len(f)]
        if not parts:
            return
        rows = pd.concat(parts, ignore_index=True)
        watermark_us = int(group.getCurrentWatermarkMs()) * 1000
        out = decider.run(cluster, rows, state, watermark_us)
        if cluster is not None:
            group.update((state.dumps(),))
        yield pd.DataFrame(out, columns=OUT_COLUMNS)

    # ``ts`` stays: without the watermark's column the state function sees no watermark
    return wide.groupBy("cluster").applyInPandasWithState(
        per_cluster, OUT_SCHEMA, STATE_SCHEMA, "update", GroupStateTimeout.NoTimeout
    )


#: How long a stop waits for the trigger under way to finish.
_DRAIN_S = 120.0


def _busy(query: StreamingQuery) -> bool:
    """A trigger under way, or the query still starting: stopped then, Spark interrupts its
    first writes to the checkpoint and logs each with a Java stack trace."""
    if not query.isActive:
        return False
    status = query.status
    return bool(status["isTriggerActive"]) or str(status["message"]).startswith("Initializing")


def run_stream(
    spark: SparkSession,
    options: StreamOptions,
    *,
    on_status: Callable[[dict[str, Any]], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    hurry: Callable[[], bool] = lambda: False,
    on_restart: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> None:
    """Run until ``should_stop``; restart the query from its checkpoint when the inventory's
    files change, so the state function decides with the new inventory.

    A stop lets the trigger under way (or the first one, while the query starts) finish and
    publish (up to ``_DRAIN_S``, or until ``hurry``), so its decisions are out and the
    restart starts from the next one; stopped mid-trigger, the query would be interrupted
    inside its writes (Spark logs each one). ``on_warning`` hears of telemetry files that
    changed after they landed (:mod:`~.landing`)."""
    fs = HadoopFS(spark)  # the run's one FileSystem wrapper
    publisher = Publisher(spark, fs, options.output, on_status)
    landing = watch_dirs(options.input, STREAM_TABLES, options.checkpoint_dir)
    while not should_stop():
        inventory = read_inventory(spark, fs, options.input, now=datetime.now(UTC))
        query = _start(spark, fs, options, inventory, publisher)
        polled = time.monotonic()
        try:
            while not should_stop():
                if query.awaitTermination(1):
                    if query.exception() is not None:
                        raise RuntimeError(str(query.exception()))
                    return
                if time.monotonic() - polled < options.inventory_poll_s:
                    continue
                polled = time.monotonic()
                for warning in landing.check(fs):
                    if on_warning is not None:
                        on_warning(warning)
                if inventory_signature(fs, options.input) != inventory.signature:
                    if on_restart is not None:
                        on_restart("the inventory changed: restarting from the checkpoint")
                    break  # re-read it and go on from the checkpoint
            deadline = time.monotonic() + _DRAIN_S
            while time.monotonic() < deadline and not hurry() and _busy(query):
                time.sleep(0.2)
        finally:
            query.stop()


def _start(
    spark: SparkSession,
    fs: HadoopFS,
    options: StreamOptions,
    inventory: Inventory,
    publisher: Publisher,
) -> StreamingQuery:
    decider = Decider(
        inventory=inventory,
        config=options.config,
        strategy=options.strategy,
        seed=options.seed,
        window_us=window_seconds(options.window) * 1_000_000,
    )
    frame = stateful(telemetry_stream(spark, fs, options), decider)
    return (
        frame.writeStream.foreachBatch(publisher)
        .outputMode("update")
        .option("checkpointLocation", options.checkpoint_dir)
        .trigger(processingTime=interval(options.trigger))
        .start()
    )
