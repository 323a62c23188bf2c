"""One micro-batch of one cluster: check its rows, absorb them, seal windows, decide.

Why a module of its own
    This is the body of the state function (:func:`.driver.stateful`), plain Python over a
    pandas frame and a :class:`~.state.ClusterStream`: the rows refused by a rule or by
    membership, the node samples into the pending windows, the bundle samples as columns,
    the windows the watermark passed folded into ``node_load`` rows, and, when anything new
    came in, one live shedder cycle (:func:`.cycle.live_cycle`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from trimtab.config import Config
from trimtab.contract.repeats import conflict_reason, duplicate_reason
from trimtab.pipeline.bundle_samples import Outcome
from trimtab.pipeline.inventory import Inventory, Node
from trimtab.pipeline.loads import METRICS
from trimtab.pipeline.plans import STALE_NAMED
from trimtab.pipeline.stream.cycle import live_cycle, node_sample, reference_limits, usable
from trimtab.pipeline.stream.rows import finite, out_row, records
from trimtab.pipeline.stream.state import ClusterStream
from trimtab.pipeline.stream.verdicts import absorb_node, bundle_key, first_verdict, quarantine_row
from trimtab.shedding import LoadModel
from trimtab.shedding.telemetry import fold

__all__ = ["Decider"]


@dataclass(frozen=True, slots=True)
class Decider:
    """What the state function needs besides the rows: inventory, model, strategy, seed."""

    inventory: Inventory
    config: Config
    strategy: str | None
    seed: int
    window_us: int

    def run(
        self, cluster: str | None, rows: pd.DataFrame, state: ClusterStream, watermark_us: int
    ) -> list[dict[str, Any]]:
        """One micro-batch of one cluster: check, absorb, seal, decide; the output rows.

        Row by row only where it is cheap (refused rows, node samples); the bundle samples, a
        hundred per broker, go in as columns (:meth:`BundleSamples.absorb`)."""
        nodes = self.inventory.clusters.get(cluster) if cluster is not None else None
        rows = rows.sort_values(["_landed_us", "_source_file", "ts_us"], kind="stable")
        rows = rows.reset_index(drop=True)
        newest_landed = int(rows["_landed_us"].max()) if len(rows) else 0
        is_node = (rows["_table"] == "node_metrics").to_numpy()
        member = pd.Series(np.where(is_node, rows["node"], rows["broker"]))
        known = member.isin(list(nodes or ())).to_numpy()
        checked = known & rows["_rule"].isna().to_numpy()
        refused: list[tuple[int, dict[str, Any]]] = []  # (row, quarantine row): in row order
        for at, rec in records(rows, np.flatnonzero(~checked)):
            rule, reason = first_verdict(rec, cluster, nodes)
            assert rule is not None  # not checked: a row rule, or not a node of the cluster
            refused.append((at, quarantine_row(rec, cluster, rule, reason)))
        fresh = False
        for at, rec in records(rows, np.flatnonzero(checked & is_node)):
            rule, reason = absorb_node(rec, state)
            if rule is not None:
                refused.append((at, quarantine_row(rec, cluster, rule, reason)))
            fresh = fresh or rule is None
        bundle_rows = np.flatnonzero(checked & ~is_node)
        outcome, seen_source = state.bundles.absorb(rows.iloc[bundle_rows])
        fresh = fresh or bool((outcome <= Outcome.OLDER).any())
        repeats = np.flatnonzero(outcome >= Outcome.DUPLICATE)
        for j, (at, rec) in zip(repeats, records(rows, bundle_rows[repeats]), strict=True):
            what = bundle_key(rec)
            rule, reason = (
                ("duplicate", duplicate_reason(what))
                if outcome[j] == Outcome.DUPLICATE
                else ("conflict", conflict_reason(what, seen_source[j]))
            )
            refused.append((at, quarantine_row(rec, cluster, rule, reason)))
        out = [row for _, row in sorted(refused, key=lambda pair: pair[0])]
        if cluster is None:  # rows without a cluster: all refused (missing_key)
            out.append(out_row(kind="cluster", rows_in=len(rows), landed_us=newest_landed))
            return out
        model = LoadModel.of(self.config.shedding)
        out += self._seal(str(cluster), state, watermark_us, nodes or {}, model)
        summary = out_row(
            kind="cluster", cluster=cluster, rows_in=len(rows), landed_us=newest_landed
        )
        if fresh and nodes:
            out += self._decide(str(cluster), state, nodes, model, summary)
        out.append(summary)
        return out

    def _seal(
        self,
        cluster: str,
        state: ClusterStream,
        watermark_us: int,
        nodes: Mapping[str, Node],
        model: LoadModel,
    ) -> list[dict[str, Any]]:
        """Fold the samples of windows the watermark has passed; a ``node_load`` row each."""
        until = watermark_us - watermark_us % self.window_us if watermark_us > 0 else 0
        if until <= state.sealed_us:
            return []
        reference = reference_limits(nodes, model)
        out = []
        for node in sorted(state.pending):
            by_ts = state.pending[node]
            done = sorted(ts for ts in by_ts if ts < until)
            windows: dict[int, list[int]] = {}
            for ts in done:
                windows.setdefault(ts - ts % self.window_us, []).append(ts)
            info = nodes.get(node)
            for start, stamps in sorted(windows.items()):
                kept = [by_ts[ts] for ts in stamps if not by_ts[ts].get("_conflict")]
                if kept and info is not None:
                    samples = [node_sample(ts, by_ts[ts]) for ts in stamps if usable(by_ts[ts])]
                    folded = fold(model, samples, info.limits, reference, state.folded.get(node))
                    if folded is not None:
                        state.folded[node] = folded
                        row = out_row(
                            kind="node_load",
                            cluster=cluster,
                            node=node,
                            window_us=start,
                            samples=len(kept),
                            at_us=round(folded.last.ts * 1e6),
                            load=folded.weighted_max_ema,
                            msg_throughput_ema=folded.msg_throughput_ema,
                        )
                        for metric in METRICS:
                            values = [float(s[metric]) for s in kept if s.get(metric) is not None]
                            row[metric] = sum(values) / len(values) if values else None
                        out.append(row)
            for ts in done:
                del by_ts[ts]
            if not by_ts:
                del state.pending[node]
        state.sealed_us = until
        return out

    def _decide(
        self,
        cluster: str,
        state: ClusterStream,
        nodes: Mapping[str, Node],
        model: LoadModel,
        summary: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """One shedder cycle on the cluster as it stands (see :func:`live_cycle`)."""
        cycle = live_cycle(
            cluster, state, nodes, model, self.config.shedding, self.strategy, self.seed
        )
        summary.update(
            cycle=cycle.number,
            at_us=cycle.at_us,
            std=finite(cycle.result.std),
            std_after=finite(cycle.result.std_after),
            note=cycle.strategy,
            # The bundles forgotten: how many, and the first names (see _status).
            samples=len(cycle.left_out),
            bundle="\n".join(cycle.left_out[:STALE_NAMED]) or None,
        )
        return [out_row(**row) for row in cycle.rows()]
