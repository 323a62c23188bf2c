"""Prometheus metrics of a run (``--metrics-port``), read from its :class:`RunStats`.

``trimtab_execute_actions{state,reason}`` actions by state (pending, planned, started, done,
failed, cancelled) and cause (submitted, completed, already-done, resumed, aborted, cluster);
``trimtab_execute_bytes_moved_total`` bytes copied (finished moves plus progress of those in
flight); ``trimtab_execute_throttle_bytes_per_second`` the throttle in force (0: none);
``trimtab_execute_eta_seconds`` time left at the observed rate (absent until known). Like the
agent's, the collector reads a snapshot on each scrape and sits in its own registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from trimtab.execute.stats import RunStats

__all__ = ["ExecuteCollector"]


class ExecuteCollector(Collector):
    """Scrapes one run's :class:`~trimtab.execute.stats.RunStats`."""

    def __init__(self, stats: RunStats) -> None:
        self._stats = stats

    def collect(self) -> Iterable[Metric]:
        stats = self._stats
        actions = GaugeMetricFamily(
            "trimtab_execute_actions",
            "Plan actions by state and reason",
            labels=["state", "reason"],
        )
        for (state, reason), count in sorted(stats.by_state().items()):
            actions.add_metric([state, reason], count)
        moved = CounterMetricFamily(
            "trimtab_execute_bytes_moved",
            "Bytes copied by the plan's moves",
            value=stats.bytes_moved,
        )
        throttle = GaugeMetricFamily(
            "trimtab_execute_throttle_bytes_per_second",
            "Replication throttle in force (0: none)",
            value=stats.throttle or 0,
        )
        out: list[Metric] = [actions, moved, throttle]
        eta = stats.eta()
        if eta is not None:
            out.append(
                GaugeMetricFamily(
                    "trimtab_execute_eta_seconds", "Time left at the observed rate", value=eta
                )
            )
        return out
