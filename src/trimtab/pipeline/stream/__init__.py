"""``trimtab pipeline stream``: the shedder followed live on Spark Structured Streaming.

Goals
    Decide every trigger from the telemetry that has landed so far, as PIP-220's shedder
    decides every minute, with the batch job's schemas, row rules and quarantine reasons, and
    with a restart from the checkpoint that neither loses nor repeats a decision.

Algorithm
    1. One file stream per (telemetry table, format) under ``INPUT/node_metrics/`` and
       ``INPUT/bundle_metrics/`` (CSV files read whole, so that each file's header names its
       columns, as ingest matches them), and one over ``INPUT/load_reports/``, whose files
       become node and bundle rows by the batch job's own function
       (:func:`trimtab.pipeline.load_reports.report_rows`); all typed and checked by the row
       rules of :mod:`trimtab.pipeline.rules` (and the key rule ``bad_bundle``) exactly as
       ingest does, then unioned into one wide frame with a watermark on ``ts``.
    2. ``groupBy(cluster).applyInPandasWithState``: per cluster, Spark's state store keeps
       * per node, the samples not yet *sealed* (newer than the watermark's window), and the
         engine's fold (:func:`trimtab.shedding.telemetry.fold`: the moving averages with
         ``loadBalancerHistoryResourcePercentage``) through the sealed ones. Windows are
         sealed as the watermark passes their end; each sealed window is emitted once as a
         ``node_load`` row (metric means, sample count, load after its last sample). A row
         older than the sealed point is refused as ``late`` (a rule the batch job does not
         need); any later row is folded in its time order, so within the watermark a late
         file changes nothing against the batch job;
       * per (bundle, broker), its newest sample;
       * the shedder's own state (:class:`~trimtab.shedding.ShedderState`: hit counts,
         cooldowns, recently unloaded bundles and brokers) and its cycle count.
       Membership (``unknown_cluster``, ``unknown_node``) and repeats (``duplicate``,
       ``conflict``) are decided there, with the batch job's rule names and reasons.
       Each trigger with new rows for a cluster runs one shedder cycle on it (the engine's
       :func:`~trimtab.shedding.run_cycle`, as :class:`~trimtab.systems.pulsar.follow.Follower`),
       at the newest sample time, with a random source seeded by (seed, cluster, cycle): a
       batch Spark re-runs after a crash decides the same. That cycle is :func:`.cycle.live_cycle`,
       which ``pipeline run --replay`` (:mod:`trimtab.pipeline.replay`) runs once a minute.
    3. ``foreachBatch`` publishes batch N: ``decisions``, ``transfers``, ``quarantine`` and
       ``node_load`` under ``OUT/<table>/batch=N/``, each renamed into place from a staging
       directory, then ``status.json`` (written aside and renamed), then the marker
       ``OUT/_batches/N``. A batch whose marker exists is skipped; a table already in place
       is not written again. With Spark's checkpoint this makes each decision appear once.
    4. The driver polls the inventory (``INPUT/nodes/``) and restarts the query from its
       checkpoint when its files change, so the state function sees the new inventory.

Modules, one job each
    :mod:`.options` (what a run reads and writes), :mod:`.sources` (the inventory and the
    file streams) with :mod:`.wide` (typing and row rules), :mod:`.csv_files` and
    :mod:`.report_files`; :mod:`.state` (a cluster's state and its persistence),
    :mod:`.rows` (the state function's output rows), :mod:`.verdicts` (membership, repeats,
    lateness), :mod:`.cycle` (the live shedder's cycle), :mod:`.decide` (one micro-batch of
    one cluster); :mod:`.publish` (``foreachBatch``) and :mod:`.driver` (the query and the
    restart loop).
"""

from __future__ import annotations

__all__: list[str] = []
