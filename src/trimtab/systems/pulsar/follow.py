"""The live loop: one shedding cycle per interval on the brokers' load reports, as a leader
broker runs it.

Goals
    ``trimtab shed --zk HOST:PORT --follow`` behaves as one long-running upstream shedder:
    its state (the hit count, recently unloaded bundles and brokers with their cooldown, the
    ThresholdShedder's scores) and each broker's load history (the moving averages) go from
    one cycle to the next, and every cycle acts only on data the TTL still allows.

Constraints
    * A report is checked (:func:`~trimtab.systems.pulsar.snapshots.check_report`) once, when it
      changes, never once per cycle: a cycle over 1,000 brokers reuses the rows.
    * A broker's new report (a newer ``lastUpdate``) is folded into its history once, however
      many cycles see it; a report that stops changing goes stale after
      ``loadBalancerBrokerLoadDataTTLInSeconds`` (OutDatedData), as upstream.
    * A report that goes away is a broker that left: its history is forgotten.
    * A report refused (bad JSON, a missing field, an impossible usage) leaves its broker
      registered without load data: the TransferShedder waits (NoLoadData) rather than act
      on a cluster it cannot see whole.
    * Registry unreadable (ZooKeeper connection lost): the cycle is Failure/Unknown, as
      upstream's; the loop goes on and resumes on fresh data.

Pure apart from the sources: the clock is passed in, so a test runs cycles at any time. The
sources are a directory of saved reports (:class:`DirReports`, read again at every cycle) and
the brokers' znodes followed with ZooKeeper watches
(:class:`~trimtab.systems.pulsar.watcher.ZkReports`, which owns the threads). The shedder's
state between cycles is the engine's own (:class:`~trimtab.shedding.decisions.ShedderState`,
the load history :class:`~trimtab.shedding.telemetry.Folded`); this loop only carries it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from trimtab.contract import RejectedRow
from trimtab.errors import ReportError
from trimtab.shedding.base import Shedder
from trimtab.shedding.cycle import run_cycle
from trimtab.shedding.decisions import CycleResult, Decision, Reason, ShedderState, skip
from trimtab.shedding.filters import Policies
from trimtab.shedding.load import LoadModel
from trimtab.shedding.snapshot import LoadSnapshot
from trimtab.shedding.telemetry import Built, Folded
from trimtab.systems.pulsar.load_reports import LoadReport, read_report_dir
from trimtab.systems.pulsar.snapshots import (
    Checked,
    check_report,
    report_cluster,
    report_snapshot,
)

__all__ = ["DirReports", "Entry", "Follower", "Reading", "Tick"]

#: A registered broker's report, or why it was refused.
Entry = LoadReport | ReportError


@dataclass(frozen=True, slots=True)
class Reading:
    """What a source holds now: per registered broker its report (or why it was refused);
    ``ok`` False when the registry could not be read (the entries are then the last known)."""

    entries: Mapping[str, Entry]
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Tick:
    """One cycle of the loop: its number, time, result (destinations assigned), snapshot,
    the brokers that joined and left since the last cycle, and the rows refused."""

    number: int
    now: float
    result: CycleResult
    built: Built | None
    joined: tuple[str, ...]
    left: tuple[str, ...]
    rejected: tuple[RejectedRow, ...]


@dataclass(slots=True)
class Follower:
    """One long-running shedder over a stream of readings (see the module docstring)."""

    shedder: Shedder
    model: LoadModel
    cluster: str = "pulsar"
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    policies: Policies | None = None
    state: ShedderState = field(default_factory=ShedderState)
    folded: dict[str, Folded] = field(default_factory=dict)
    cycles: int = 0
    _checked: dict[str, tuple[LoadReport, Checked]] = field(default_factory=dict)
    _brokers: frozenset[str] = frozenset()
    # how many checked reports list each bundle, and how many bundles two or more list:
    # kept as reports change, so a cycle knows without a pass over every bundle
    _listed: dict[str, int] = field(default_factory=dict)
    _twice: int = 0

    def cycle(self, reading: Reading, now: float) -> Tick:
        """Run one cycle on ``reading`` at ``now`` (seconds since the epoch)."""
        self.cycles += 1
        if not reading.ok:
            return self._unreadable(now)
        reports = {b: e for b, e in reading.entries.items() if isinstance(e, LoadReport)}
        refused = tuple(
            RejectedRow(e.source, 1, e.reason, {})
            for e in reading.entries.values()
            if isinstance(e, ReportError)
        )
        current = {r.broker for r in reports.values()}
        for gone in set(self._checked) - current:
            self._index(self._checked.pop(gone)[1].table.names, -1)
        checked = [self._check(r) for r in reports.values()]
        brokers = frozenset(str(b) for b in reading.entries)
        joined = tuple(sorted(brokers - self._brokers))
        left = tuple(sorted(self._brokers - brokers))
        self._brokers = brokers
        for gone in left:
            self.folded.pop(gone, None)
        state = report_cluster(reports.values(), self.cluster, silent=reading.entries)
        built = report_snapshot(
            state, checked, self.model, previous=self.folded, unique=self._twice == 0
        )
        self.folded = dict(built.folded)
        snapshot = built.snapshot
        if self.policies is not None:
            snapshot = replace(snapshot, policies=self.policies)
        # A broker whose latest report was refused keeps its history (for when a good report
        # comes) but not its place: without load data it is neither a source nor a destination.
        waiting = sorted(b for b, e in reading.entries.items() if isinstance(e, ReportError))
        if waiting:
            loads = {b: x for b, x in snapshot.loads.items() if b not in waiting}
            snapshot = replace(snapshot, loads=loads)
        result = run_cycle(self.shedder, snapshot, self.state, now=now, rng=self.rng)
        self.state = result.state
        if waiting:
            result = replace(
                result, decisions=(*result.decisions, *_waiting_notes(reading, waiting))
            )
        return Tick(self.cycles, now, result, built, joined, left, (*refused, *built.rejected))

    def _check(self, report: LoadReport) -> Checked:
        """The report's checked rows, computed once per report read."""
        seen = self._checked.get(report.broker)
        if seen is not None and seen[0] is report:
            return seen[1]
        checked = check_report(report, self.cluster)
        if seen is not None:
            self._index(seen[1].table.names, -1)
        self._index(checked.table.names, +1)
        self._checked[report.broker] = (report, checked)
        return checked

    def _index(self, names: tuple[str, ...], step: int) -> None:
        """Count ``names`` in (``step`` +1) or out (-1) of the bundles listed."""
        listed = self._listed
        for name in names:
            before = listed.get(name, 0)
            after = before + step
            self._twice += (after >= 2) - (before >= 2)
            if after:
                listed[name] = after
            else:
                del listed[name]

    def _unreadable(self, now: float) -> Tick:
        """The registry could not be read: the cycle fails (Failure/Unknown), state kept."""
        empty = LoadSnapshot.of([], [], available=None)
        result = self.shedder.cycle(empty, self.state, now=now)
        self.state = result.state
        return Tick(self.cycles, now, result, None, (), (), ())


def _waiting_notes(reading: Reading, waiting: list[str]) -> list[Decision]:
    """One Skip/NoLoadData row per broker left out because its latest report was refused."""
    notes = []
    for broker in waiting:
        entry = reading.entries[broker]
        why = entry.reason if isinstance(entry, ReportError) else "refused"
        notes.append(
            skip(
                Reason.NO_LOAD_DATA,
                broker=broker,
                note=f"latest report refused ({why}): neither a source nor a destination "
                "until a good report arrives",
            )
        )
    return notes


class DirReports:
    """A directory of saved reports, read again at every cycle."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def read(self) -> Reading:
        reports, errors = read_report_dir(self.path)
        entries: dict[str, Entry] = {r.broker: r for r in reports}
        for error in errors:
            entries.setdefault(Path(error.source).name.removesuffix(".json"), error)
        return Reading(entries)

    def close(self) -> None:
        return None
