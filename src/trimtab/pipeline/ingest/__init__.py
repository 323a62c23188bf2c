"""Read the input tables with explicit schemas and split every row into accepted or quarantined.

Goals
    A bad row is never silently dropped: it goes to ``quarantine`` whole (as JSON text), with
    its source file, the rule it broke and a readable reason, and per table
    ``read = accepted + quarantined``. An input that cannot be used at all (missing directory,
    missing required column, no rows) stops the job before any output with one message
    naming the table, the path and the fix. The checks must cost little beside reading the
    files: telemetry is never written back whole, and no rule shuffles every row.

Algorithm
    1. List the table's files through Hadoop's FileSystem; group them by format (suffix).
       CSV files are grouped by header too, so columns are matched by name, never position.
    2. Read each group with an explicit schema (CSV and JSON as strings, so nothing is lost to
       a failed parse; Parquet with its own types), keep the source file, and convert to the
       canonical types with ``try_cast`` (a value that does not convert is a ``wrong_type``
       row, not a job failure). The raw row is rendered only for refused rows.
    3. Row-local rules, first broken rule wins, in the order and with the names of
       :data:`trimtab.contract.ROW_RULES` (the plain commands' readers apply the same ones):
       expressions from :mod:`trimtab.pipeline.rules`.
    4. Rules needing only a row's key (bad_bundle) or other rows: unknown_cluster /
       unknown_node (the row's cluster or node is not in the accepted inventory), and rows
       sharing a key (for samples: and ``ts``) settled as :mod:`trimtab.contract.repeats`
       states: all equal, ``duplicate`` but the first; any two differ, all ``conflict``. A blank
       ``cluster`` where the contract allows it (allocation_requests) is the inventory's
       only cluster, else unknown_cluster.
    5. One aggregation per table, grouped by its key without the time (e.g. per bundle and
       broker) and then per key, summarises everything the later stages need from the whole
       table with fixed-size aggregates (compiled, pre-aggregated before the shuffle): the
       count of refused rows, the windows of time where a sample time may repeat (a bitmap
       screen that never misses a repeat, see :func:`summarize`), and for telemetry the
       newest accepted sample. Membership is then decided per key, on those few thousand
       summary rows. Copies share their key and almost every key is unique, so only the
       rows of unknown keys and of screened windows — the *candidates*, usually none — and
       the refused rows, where there are some, are read again: no telemetry row pays for a
       lookup or a comparison.
    6. The result per table is a :class:`CheckedTable`: every row with its verdict, plus the
       small *flagged* set (refused rows and candidates with copies resolved). Accepted rows
       are the clean non-candidates plus the flagged rows that passed; the quarantine is the
       flagged rows that did not.
    7. In a job's run, a table small enough to collect (the inventory, the requests, and
       telemetry of at most :data:`.check.LOCAL_TABLE_BYTES`) skips steps 5 and 6: its key rules
       run per row (membership by a lookup in the inventory's nodes, written into the plan
       as literals; copies by ``resolve_copies`` over every row) in one plan read in one
       task, whose rows are collected once and kept as local rows (``_localized`` in :mod:`.check`).
       Verdicts, reasons and raw rows are those of steps 5 and 6; with every table local,
       the quarantine is built from the collected rows. The tables checked against the
       inventory are read while it is checked and then checked side by side, in threads:
       most of a small table's cost is Spark planning its read and check on the driver,
       which then overlaps; the checks of big tables (steps 5 and 6), which keep every core
       busy, take turns.

Modules, one job each
    :mod:`.check` (``ingest``: the order of the steps, local or at scale), :mod:`.read`
    (steps 1 to 3), :mod:`.members` (the key and membership rules of step 4),
    :mod:`.copies` (repeats, step 4), :mod:`.summary` (step 5), :mod:`.result` (step 6 and
    the quarantine) and :mod:`.keys` (the key columns and the refusal every rule shares).
"""

from __future__ import annotations

__all__: list[str] = []
