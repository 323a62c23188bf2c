"""``foreachBatch``: publish each micro-batch's tables once, then ``status.json``.

Why a module of its own
    Publication is what makes a restart neither lose nor repeat a decision: batch N's
    ``decisions``, ``transfers``, ``quarantine`` and ``node_load`` go under
    ``OUT/<table>/batch=N/``, each renamed into place from a staging directory, then
    ``status.json`` (written aside and renamed), then the marker ``OUT/_batches/N``. A batch
    whose marker exists is skipped; a table already in place is not written again. It reads
    the state function's long rows (:mod:`.rows`) and knows nothing of how they were made.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from trimtab.pipeline.loads import METRICS
from trimtab.pipeline.plans import DECISION_COLUMNS, TRANSFER_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from trimtab.pipeline.fs import HadoopFS

__all__ = ["OUTPUT_TABLES", "TABLE_SCHEMAS", "Publisher", "batch_status", "batch_tables"]

#: The tables a stream publishes, a ``batch=N`` directory per trigger each.
OUTPUT_TABLES = ("decisions", "transfers", "quarantine", "node_load")


@dataclass(slots=True)
class Publisher:
    """``foreachBatch``: batch N's tables published once, then ``status.json``."""

    spark: SparkSession
    fs: HadoopFS
    output: str
    on_status: Callable[[dict[str, Any]], None] | None = None

    def __call__(self, frame: DataFrame, batch: int) -> None:
        fs = self.fs
        root = fs.qualify(self.output.rstrip("/"))
        marker = f"{root}/_batches/{batch}"
        if fs.exists(marker):
            return  # published before a restart: never twice
        began = time.perf_counter()
        rows = frame.toPandas()  # runs the micro-batch: read, check, state, decide
        if rows.empty:
            return
        computed = time.perf_counter()
        trigger = datetime.now(UTC)
        staging = f"{root}/_staging/{batch}"
        for name, part in batch_tables(rows, trigger, batch).items():
            target = f"{root}/{name}/batch={batch}"
            if part.empty or fs.exists(target):
                continue
            fs.delete(f"{staging}/{name}")
            typed = self.spark.createDataFrame(part, TABLE_SCHEMAS[name])
            typed.coalesce(1).write.parquet(f"{staging}/{name}")
            fs.mkdirs(f"{root}/{name}")
            if not fs.rename(f"{staging}/{name}", target):
                raise OSError(f"could not publish {staging}/{name} as {target}")
        fs.delete(staging)
        status = batch_status(rows, trigger, batch, _previous_status(fs, root))
        status["timings_s"] = {
            "compute": round(computed - began, 3),
            "publish": round(time.perf_counter() - computed, 3),
        }
        fs.replace_text(f"{root}/status.json", json.dumps(status, indent=2) + "\n")
        fs.write_text(marker, "")
        if self.on_status is not None:
            self.on_status(status)


def _previous_status(fs: HadoopFS, root: str) -> dict[str, Any] | None:
    path = f"{root}/status.json"
    if not fs.exists(path):
        return None
    loaded: dict[str, Any] = json.loads(fs.read_text(path))
    return loaded


#: The published tables' columns: explicit, so a batch whose column is all null still writes
#: the same Parquet type as the others (readers merge the batches' files).
TABLE_SCHEMAS = {
    "decisions": "trigger_time timestamp, data_time timestamp, cluster string, cycle long, "
    "label string, reason string, broker string, bundle string, note string",
    "transfers": "trigger_time timestamp, data_time timestamp, cluster string, cycle long, "
    "bundle string, source string, destination string, throughput double, reason string, "
    "std_after double",
    "quarantine": "trigger_time timestamp, table string, source_file string, rule string, "
    "reason string, row string",
    "node_load": "trigger_time timestamp, cluster string, node string, window_start timestamp, "
    "samples long, last_sample_ts timestamp, "
    + ", ".join(f"{m} double" for m in METRICS)
    + ", load double, msg_throughput_ema double",
}


def batch_tables(rows: pd.DataFrame, trigger: datetime, batch: int) -> dict[str, pd.DataFrame]:
    """The batch's output tables, each with the trigger time and the data time decided at."""
    stamp = pd.Timestamp(trigger).tz_convert(None)

    def of(kinds: tuple[str, ...], columns: tuple[str, ...], order: list[str]) -> pd.DataFrame:
        part = rows[rows["kind"].isin(kinds)]
        table = part[list(columns)].copy()
        if "at_us" in part:
            table.insert(0, "data_time", pd.to_datetime(part["at_us"], unit="us"))
        table.insert(0, "trigger_time", stamp)
        table["cycle"] = table["cycle"].astype("int64")
        return table.sort_values(order, kind="stable").reset_index(drop=True)

    quarantine = rows[rows["kind"] == "quarantine"].rename(columns={"table_name": "table"})
    quarantine = quarantine[["table", "source_file", "rule", "reason", "row"]].copy()
    quarantine.insert(0, "trigger_time", stamp)
    loads = rows[rows["kind"] == "node_load"].copy()
    node_load = loads[["cluster", "node"]].copy()
    node_load["window_start"] = pd.to_datetime(loads["window_us"], unit="us")
    node_load["samples"] = loads["samples"].astype("int64")
    node_load["last_sample_ts"] = pd.to_datetime(loads["at_us"], unit="us")
    for metric in METRICS:
        node_load[metric] = loads[metric]
    node_load["load"] = loads["load"]
    node_load["msg_throughput_ema"] = loads["msg_throughput_ema"]
    node_load.insert(0, "trigger_time", stamp)
    return {
        "decisions": of(
            ("decision", "transfer"), DECISION_COLUMNS, ["cluster", "broker", "bundle"]
        ),
        "transfers": of(("transfer",), TRANSFER_COLUMNS, ["cluster", "source", "bundle"]),
        "quarantine": quarantine.sort_values(["table", "source_file", "rule", "row"]),
        "node_load": node_load.sort_values(["cluster", "node", "window_start"]),
    }


def batch_status(
    rows: pd.DataFrame, trigger: datetime, batch: int, previous: dict[str, Any] | None
) -> dict[str, Any]:
    """``status.json``: this trigger's figures and the running totals."""
    summaries = rows[rows["kind"] == "cluster"]
    rows_in = int(summaries["rows_in"].sum())
    quarantined = int((rows["kind"] == "quarantine").sum())
    landed = summaries["landed_us"].dropna()
    newest_landed = int(landed.max()) if len(landed) else None
    clusters: dict[str, Any] = dict((previous or {}).get("clusters", {}))
    # A batch run again after a restart was published and counted already.
    counted = previous is not None and int(previous.get("batch", -1)) >= batch
    transfers = rows[rows["kind"] == "transfer"].groupby("cluster").size()
    for row in summaries.to_dict("records"):
        if row["cluster"] is None or row["cycle"] is None or pd.isna(row["cycle"]):
            continue
        data_time = datetime.fromtimestamp(row["at_us"] / 1e6, UTC)
        entry = {
            "cycle": int(row["cycle"]),
            "batch": batch,
            "strategy": row["note"],
            "data_time": data_time.isoformat(),
            "std": _json_float(row["std"]),
            "std_after": _json_float(row["std_after"]),
            "transfers": int(transfers.get(row["cluster"], 0)),
            "lag_s": round((trigger - data_time).total_seconds(), 3),
        }
        stale = dict(clusters.get(row["cluster"], {}).get("stale_bundles", {}))
        forgotten = 0 if pd.isna(row["samples"]) else int(row["samples"])
        if forgotten and not counted:  # how many since the stream started, the latest names
            stale = {
                "count": int(stale.get("count", 0)) + forgotten,
                "latest": row["bundle"].split("\n"),
            }
        if stale:
            entry["stale_bundles"] = stale
        clusters[row["cluster"]] = entry
    totals = dict((previous or {}).get("totals", {"rows_in": 0, "rows_quarantined": 0}))
    if not counted:
        totals = {
            "rows_in": int(totals["rows_in"]) + rows_in,
            "rows_quarantined": int(totals["rows_quarantined"]) + quarantined,
        }
    landing = None if newest_landed is None else round(time.time() - newest_landed / 1e6, 3)
    return {
        "last_trigger": trigger.isoformat(),
        "batch": batch,
        "rows_in": rows_in,
        "rows_quarantined": quarantined,
        "landing_to_decision_s": landing,
        "totals": totals,
        "clusters": dict(sorted(clusters.items())),
    }


def _json_float(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 6)
