"""The live loop's logic (:class:`trimtab.systems.pulsar.follow.Follower`) on readings built in
memory; the same loop on a real ZooKeeper is tests/online/test_shed_follow.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.shedding.pulsar_reports import MOVED, broker_report, fixture_reports, mid_transfer
from trimtab.config import Config
from trimtab.errors import ReportError
from trimtab.shedding import LoadModel, shedder_for
from trimtab.shedding.decisions import Label, Reason
from trimtab.systems.pulsar.follow import Follower, Reading
from trimtab.systems.pulsar.load_reports import LoadReport

NOW = 1_750_000_000.0
CFG = Config.of(loadBalancerBrokerLoadDataTTLInSeconds=300).shedding


def follower() -> Follower:
    return Follower(shedder_for(CFG), LoadModel.of(CFG))


def reading(reports: list[LoadReport]) -> Reading:
    return Reading({r.broker: r for r in reports})


def test_state_goes_from_cycle_to_cycle_as_one_long_running_shedder() -> None:
    """Three hits, the transfers at the fourth cycle, then CoolDown: the hit count and the
    recently unloaded brokers live in the follower, not in one call."""
    loop = follower()
    reasons = []
    for k in range(5):
        tick = loop.cycle(reading(fixture_reports(NOW + 60 * k)), NOW + 60 * k)
        reasons.append(tick.result.outcome.reason)
    assert reasons[:3] == [Reason.HIT_COUNT] * 3
    assert reasons[3] is Reason.OVERLOADED and reasons[4] is Reason.COOL_DOWN
    assert set(loop.state.recently_unloaded_brokers) == {"broker4:8080", "broker5:8080"}


def test_a_report_is_folded_into_the_history_once_however_many_cycles_see_it() -> None:
    loop = follower()
    first = fixture_reports(NOW)
    for k in range(3):
        loop.cycle(reading(first), NOW + k)
    assert loop.folded["broker5:8080"].samples == 1
    cooler = [replace(r, last_update=NOW + 60) for r in fixture_reports(NOW, (0.02,) * 5)]
    tick = loop.cycle(reading(cooler), NOW + 61)
    assert loop.folded["broker5:8080"].samples == 2
    assert tick.built is not None
    load = tick.built.snapshot.loads["broker5:8080"]
    assert load.weighted_max_ema == pytest.approx(0.9 * 0.90 + 0.1 * 0.02)


def test_a_report_that_goes_away_is_a_broker_that_left() -> None:
    loop = follower()
    loop.cycle(reading(fixture_reports(NOW)), NOW)
    tick = loop.cycle(reading(fixture_reports(NOW)[:4]), NOW + 60)
    assert tick.left == ("broker5:8080",)
    assert "broker5:8080" not in loop.folded
    assert tick.built is not None and "broker5:8080" not in (tick.built.snapshot.available or ())


def test_a_refused_report_leaves_its_broker_without_load_data() -> None:
    """The TransferShedder does not act on a cluster it cannot see whole (NoLoadData)."""
    entries: dict[str, LoadReport | ReportError] = {r.broker: r for r in fixture_reports(NOW)}
    entries["broker6:8080"] = ReportError("zk://h/loadbalance/brokers/broker6:8080", "missing cpu")
    loop = follower()
    loop.state = replace(loop.state, hit_count=CFG.hit_count_threshold)
    tick = loop.cycle(Reading(entries), NOW)
    assert tick.result.outcome.reason is Reason.NO_LOAD_DATA
    assert [r.reason for r in tick.rejected] == ["missing cpu"]


def test_a_report_that_stops_changing_goes_stale_after_the_ttl() -> None:
    reports = fixture_reports(NOW)
    reports[2] = replace(reports[2], last_update=NOW - CFG.load_data_ttl_seconds - 1)
    loop = follower()
    loop.state = replace(loop.state, hit_count=CFG.hit_count_threshold)
    tick = loop.cycle(reading(reports), NOW)
    notes = [d for d in tick.result.decisions if d.reason is Reason.OUTDATED_DATA]
    assert [d.broker for d in notes] == ["broker3:8080"]


def test_an_unreadable_registry_fails_the_cycle_and_keeps_the_state() -> None:
    loop = follower()
    loop.cycle(reading(fixture_reports(NOW)), NOW)
    tick = loop.cycle(Reading({}, ok=False), NOW + 60)
    assert (tick.result.outcome.label, tick.result.outcome.reason) == (
        Label.FAILURE,
        Reason.UNKNOWN,
    )
    assert loop.state.hit_count == 1
    tick = loop.cycle(reading(fixture_reports(NOW + 120)), NOW + 120)
    assert loop.state.hit_count == 2


def test_a_report_is_checked_once_while_it_does_not_change() -> None:
    loop = follower()
    reports = [broker_report("b1:8080", cpu=0.5, bundles={}, last_update=NOW)]
    loop.cycle(reading(reports), NOW)
    first = loop._checked["b1:8080"][1]
    loop.cycle(reading(reports), NOW + 1)
    assert loop._checked["b1:8080"][1] is first


def test_a_bundle_in_two_reports_is_counted_as_reports_change() -> None:
    """While a transfer is under way two reports list one bundle: the follower knows it
    without a pass over every bundle, and the newer report keeps the bundle."""
    reports = fixture_reports(NOW)
    moved = MOVED
    both = mid_transfer(reports)
    loop = follower()
    loop.cycle(reading(reports), NOW)
    assert loop._twice == 0
    tick = loop.cycle(reading([reports[0], both, *reports[2:]]), NOW + 30)
    assert loop._twice == 1
    assert tick.built is not None
    bundles = tick.built.snapshot.bundles
    owner = {bundles.names[i]: bundles.broker_of(i) for i in range(len(bundles))}
    assert owner[moved] == "broker2:8080"
    old_stats = {k: v for k, v in reports[0].last_stats.items() if k != moved}
    gone = replace(reports[0], last_update=NOW + 60, last_stats=old_stats)
    loop.cycle(reading([gone, both, *reports[2:]]), NOW + 60)
    assert loop._twice == 0
    loop.cycle(reading(reports[2:]), NOW + 90)  # two brokers left: their bundles are forgotten
    assert loop._twice == 0 and moved not in loop._listed


@pytest.mark.parametrize("strategy", ["balanced", "threshold", "uniform", "avg"])
def test_a_broker_whose_latest_report_was_refused_is_neither_source_nor_destination(
    strategy: str,
) -> None:
    """Issue 43: the loop once unloaded a bundle *to* a broker whose last report had just been
    refused, acting on its previous (good) data. Now it waits for a good report."""
    cfg = Config.of(
        loadBalancerBrokerLoadDataTTLInSeconds=300,
        loadBalancerLoadSheddingStrategy=strategy,
        loadBalancerSheddingConditionHitCountThreshold=0,
    ).shedding
    loop = Follower(shedder_for(cfg), LoadModel.of(cfg))
    loop.cycle(reading(fixture_reports(NOW)), NOW)
    entries: dict[str, LoadReport | ReportError] = {r.broker: r for r in fixture_reports(NOW + 60)}
    entries["broker1:8080"] = ReportError("zk://h/loadbalance/brokers/broker1:8080", "garbage")
    for k in range(1, 4):
        tick = loop.cycle(Reading(entries), NOW + 60 * k)
        for d in tick.result.decisions:
            if d.move is not None:
                assert "broker1:8080" not in (d.move.source, d.move.destination)
        notes = [d for d in tick.result.decisions if "until a good report" in d.note]
        assert [(d.broker, d.reason) for d in notes] == [("broker1:8080", Reason.NO_LOAD_DATA)]
        assert "garbage" in notes[0].note
    assert "broker1:8080" in loop.folded  # its history waits for the next good report
