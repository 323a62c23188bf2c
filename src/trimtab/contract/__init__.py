"""The input tables, stated once: columns, types, required or optional, and the row rules.

Every input of trimtab — ``nodes`` (the inventory), ``node_metrics``, ``bundle_metrics`` and
``allocation_requests`` — is described here and nowhere else. The plain-Python readers
(``trimtab place``/``topology``/``shed``/``allocate``, through :func:`check_row`) and the Spark
ingest (``pipeline/ingest.py``, which derives its schema and rule expressions from
:data:`TABLES` and :data:`ROW_RULES`) refuse the same rows under the same rule names, so a rule
added here applies to every command and to ``pipeline run`` alike.

Rules
    :data:`ROW_RULES` are checked in order and the first one a row breaks is its verdict.
    Rules with ``scope="key"`` read only a row's key columns; the pipeline decides them once
    per key on its small summary (never per telemetry row), the Python readers per row. Rules
    needing other rows (:data:`MEMBERSHIP_RULES`: unknown cluster or node, duplicates and
    conflicts, see :mod:`trimtab.contract.repeats`) come after every row rule.

Cells
    Whole numbers (``count``) are exact (disk bytes exceed a float's 53 bits) and must fit a
    signed 64-bit long: ``8``, ``"8"``, ``8.0`` and ``"1e3"`` are whole, ``8.5`` is not.
    Numbers (``fraction``, ``rate``) must be finite. ``ts`` is UTC epoch seconds or ISO 8601.
"""

from __future__ import annotations

from trimtab.contract import declarations
from trimtab.contract.cells import number, split_bundle, text, timestamp, whole
from trimtab.contract.declarations import *  # noqa: F403  (the tables and rules, as data)
from trimtab.contract.rejected import RejectedRow
from trimtab.contract.repeats import Keyed, settle_repeats
from trimtab.contract.rows import PYTHON_CHECKS, check_row

__all__ = [
    "PYTHON_CHECKS",
    "Keyed",
    "RejectedRow",
    "check_row",
    "number",
    "settle_repeats",
    "split_bundle",
    "text",
    "timestamp",
    "whole",
    *declarations.__all__,
]
