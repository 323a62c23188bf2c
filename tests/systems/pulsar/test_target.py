"""The Pulsar execute target with real httpx against the admin stand-in's brokers: checks,
unloads through 307 redirects, faults mid-run, the cooldown, guards, splits."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.standins.pulsar.standin import PulsarStandin
from tests.systems.pulsar.conftest import TOKEN
from trimtab.errors import InputError
from trimtab.plans.document import Action
from trimtab.plans.target import Check
from trimtab.systems.pulsar.admin_api import PulsarAdmin
from trimtab.systems.pulsar.credentials import AdminAuth
from trimtab.systems.pulsar.rest import AdminRest
from trimtab.systems.pulsar.target import (
    PulsarTarget,
    PulsarTargetOptions,
    check_admin_url,
)

Start = Callable[..., PulsarStandin]


def moves(standin: PulsarStandin, source: int, dest: int | None, count: int = 1) -> list[Action]:
    """``count`` unloads of bundles broker ``source`` owns to broker ``dest``."""
    brokers = standin.brokers
    bundles = standin.cluster.owned_by(brokers[source])[:count]
    target = brokers[dest] if dest is not None else None
    return [
        Action(f"u{source}-{i}", "unload", b, {"owner": brokers[source]}, {"owner": target})
        for i, b in enumerate(bundles)
    ]


Connect = Callable[..., PulsarTarget]
Scripted = Callable[..., tuple[PulsarTarget, list[float]]]


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    """``scripted(standin, cooldown_s=, on_sleep=)``: a target whose clock moves only when it
    sleeps, and the list of its sleeps."""
    made: list[PulsarTarget] = []

    def make(
        standin: PulsarStandin,
        *,
        cooldown_s: float = 0.0,
        on_sleep: Callable[[], None] | None = None,
    ) -> tuple[PulsarTarget, list[float]]:
        now, sleeps = [0.0], []

        def sleep(seconds: float) -> None:
            sleeps.append(seconds)
            now[0] += seconds
            if on_sleep is not None:
                on_sleep()
            time.sleep(0.01)  # let the stand-in's real clock move too

        rest = AdminRest(standin.admin_url, AdminAuth(), timeout_s=5.0)
        options = PulsarTargetOptions(standin.admin_url, "standalone", cooldown_s=cooldown_s)
        admin = PulsarAdmin(rest, "standalone")
        target = PulsarTarget(admin, options, sleep=sleep, clock=lambda: now[0])
        made.append(target)
        return target, sleeps

    yield make
    for target in made:
        target.close()


def test_observe_reads_every_check_state(connect: Connect, pulsar_standin: Start) -> None:
    """READY on the source, DONE on the target, CHANGED when elsewhere or unowned."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 12})
    ready, done, elsewhere, unowned = moves(standin, 1, 2, count=4)
    b = standin.brokers
    standin.cluster.reown(done.item, b[2])
    standin.cluster.reown(elsewhere.item, b[0])
    standin.cluster.reown(unowned.item, None)
    seen = connect(standin.admin_url).observe([ready, done, elsewhere, unowned])
    checks = [seen[a.id].check for a in (ready, done, elsewhere, unowned)]
    assert checks == [Check.READY, Check.DONE, Check.CHANGED, Check.CHANGED]
    assert seen[elsewhere.id].why == f"owned by {b[0]}, not {b[1]}"
    assert seen[elsewhere.id].live == {"owner": b[0]}
    assert "not owned by any broker" in seen[unowned.id].why


def test_a_dry_run_makes_no_write(connect: Connect, pulsar_standin: Start) -> None:
    """Observing and reading the guards only reads: the stand-in counts no write call."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 6})
    target = connect(standin.admin_url)
    actions = moves(standin, 0, 1, count=2)
    target.observe(actions)
    target.guards(actions)
    counts = standin.cluster.counts()
    assert counts["writes"] == 0
    assert counts["reads"] > 0


def test_unloads_follow_the_redirect_with_the_token(
    connect: Connect, pulsar_standin: Start, token_file: Path
) -> None:
    """The admin broker answers 307 for a bundle another broker owns; the PUT follows it with
    its token (httpx alone would drop it), and each bundle lands before the next is sent."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 6}, tokens={TOKEN: "admin"})
    actions = moves(standin, 1, 2, count=2)
    target = connect(standin.admin_url, token_file=token_file, allow_insecure=True)
    target.submit(actions)
    b = standin.brokers
    assert [standin.cluster.owner(a.item) for a in actions] == [b[2], b[2]]
    assert all(p.done for p in target.poll(actions).values())
    puts = [(c.broker, c.status) for c in standin.cluster.writes()]
    assert puts == [(b[0], 307), (b[1], 204)] * 2


def test_a_null_destination_is_done_once_another_broker_owns_it(
    connect: Connect, pulsar_standin: Start
) -> None:
    """Without a destination the next lookup places the bundle; any broker but the source."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 6})
    [action] = moves(standin, 0, None)
    target = connect(standin.admin_url)
    target.submit([action])
    assert standin.cluster.owner(action.item) not in (None, standin.brokers[0])
    assert target.poll([action])[action.id].done


def test_the_cooldown_separates_unloads_of_one_broker(
    scripted: Scripted, pulsar_standin: Start
) -> None:
    """Two unloads from one broker are cooldown_s apart; one from another broker waits not."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 9}, unload_seconds=0.0)
    first, second = moves(standin, 0, 1, count=2)
    other = moves(standin, 2, 1)
    target, sleeps = scripted(standin, cooldown_s=180.0)
    target.submit([first, *other])
    assert sleeps == []
    target.submit([second])
    assert sleeps == [180.0]
    assert standin.cluster.owner(second.item) == standin.brokers[1]


def test_a_bundle_reowned_mid_run_fails_and_stops_the_rest(
    scripted: Scripted, pulsar_standin: Start
) -> None:
    """Someone moves the bundle elsewhere while it lands: it fails with the owner it has, and
    the actions after it in the call are not sent."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 9}, unload_seconds=1000.0)
    first, second = moves(standin, 1, 2, count=2)
    b = standin.brokers
    target, _sleeps = scripted(standin, on_sleep=lambda: standin.cluster.reown(first.item, b[0]))
    target.submit([first, second])
    progress = target.poll([first, second])
    assert progress[first.id].failed == f"owned by {b[0]}, not {b[1]}"
    assert (progress[second.id].failed or "").startswith("not sent:")
    assert standin.cluster.owner(second.item) == b[1]
    assert len([c for c in standin.cluster.writes() if c.status == 204]) == 1


def test_a_broker_going_away_shows_in_checks_and_guards(
    connect: Connect, pulsar_standin: Start
) -> None:
    """The destination leaves: its actions are CHANGED and the guards name it missing."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 6})
    actions = moves(standin, 0, 2)
    target = connect(standin.admin_url)
    gone = standin.brokers[2]
    standin.cluster.remove_broker(gone)
    seen = target.observe(actions)[actions[0].id]
    assert seen.check is Check.CHANGED
    assert seen.why == f"destination broker {gone} is gone"
    guards = target.guards(actions)
    assert guards.missing_nodes == (gone,)
    assert set(guards.loads) == {standin.brokers[0]}


def test_a_dropped_connection_is_read_again_and_resent(
    connect: Connect, pulsar_standin: Start
) -> None:
    """The first unload PUT and one read lose their connection: the read is retried, the
    owner is read again (still the source) and the PUT sent once more."""
    standin = pulsar_standin(brokers=2, namespaces={"t/ns": 4})
    [action] = moves(standin, 0, 1)
    target = connect(standin.admin_url)
    standin.cluster.drop_next("/unload")
    standin.cluster.drop_next("/ownedNamespaces")
    target.submit([action])
    assert standin.cluster.owner(action.item) == standin.brokers[1]
    statuses = [c.status for c in standin.cluster.writes()]
    assert statuses == [0, 204]


def test_guards_read_each_brokers_load_report(connect: Connect, pulsar_standin: Start) -> None:
    """A broker's load is its largest usage share, as LocalBrokerData.getMaxResourceUsage."""
    standin = pulsar_standin(brokers=3, namespaces={"t/ns": 6})
    b = standin.brokers
    standin.cluster.set_load(b[1], cpu=0.35, bandwidthOut=0.92)
    guards = connect(standin.admin_url).guards(moves(standin, 1, 2))
    assert guards.loads == {b[1]: pytest.approx(0.92), b[2]: pytest.approx(0.2)}
    assert guards.missing_nodes == ()


def test_a_split_action_splits_the_bundle(connect: Connect, pulsar_standin: Start) -> None:
    """PUT .../split: the range leaves the namespace's bundles and the action is DONE."""
    standin = pulsar_standin(brokers=2, namespaces={"t/ns": 2})
    owner = standin.brokers[0]
    bundle = standin.cluster.owned_by(owner)[0]
    split = Action(
        "s1", "split", bundle, {"owner": owner}, {"split_algorithm": "range_equally_divide"}
    )
    target = connect(standin.admin_url)
    assert target.observe([split])["s1"].check is Check.READY
    target.submit([split])
    assert target.observe([split])["s1"].check is Check.DONE
    assert len(standin.cluster.namespaces()["t/ns"]) == 3


def test_nothing_to_cancel_and_no_throttle(connect: Connect, pulsar_standin: Start) -> None:
    """Pulsar has no throttle and an unload cannot be cancelled: no call is made."""
    standin = pulsar_standin(brokers=2, namespaces={"t/ns": 2})
    target = connect(standin.admin_url)
    before = standin.cluster.counts()
    throttle = target.set_throttle(1000, [])
    target.clear_throttle(throttle)
    target.cancel([])
    assert throttle.entries == ()
    assert standin.cluster.counts() == before


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("broker-1:8080", "not an http:// or https:// URL"),
        ("ftp://broker-1:8080", "not an http:// or https:// URL"),
        ("https://admin:pw@broker-1:8443", "must not carry credentials"),
        ("https://broker-1:99999", "no valid port"),
        ("https://broker-1:8443/admin/v2", "without a path"),
    ],
)
def test_bad_admin_urls_are_refused_before_connecting(url: str, problem: str) -> None:
    """The address is checked first, with one line saying what is wrong."""
    with pytest.raises(InputError, match=problem):
        check_admin_url(url)


def test_a_slow_unload_fails_at_the_landing_timeout(
    scripted: Scripted, pulsar_standin: Start
) -> None:
    """A bundle that does not land within the landing timeout fails with that reason, and the
    action after it is not sent."""
    standin = pulsar_standin(brokers=2, namespaces={"t/ns": 4})
    first, second = moves(standin, 0, 1, count=2)
    standin.cluster.slow[first.item] = 1e9
    target, sleeps = scripted(standin)
    target.submit([first, second])
    progress = target.poll([first, second])
    assert (
        progress[first.id].failed
        == f"{first.item} did not land on {standin.brokers[1]} within 60 s"
    )
    assert (progress[second.id].failed or "").startswith("not sent:")
    assert sum(sleeps) == pytest.approx(60.0)
    assert standin.cluster.owner(second.item) == standin.brokers[0]


@pytest.mark.server
@pytest.mark.subprocess
def test_the_standin_runs_as_a_process(connect: Connect, tmp_path: Path) -> None:
    """``python -m tests.standins.pulsar`` prints its admin URL and serves until SIGTERM."""
    token = tmp_path / "admin.jwt"
    token.write_text(TOKEN)
    command = [sys.executable, "-m", "tests.standins.pulsar", "--brokers", "2"]
    command += ["--namespace", "t/ns=4", "--token-file", str(token)]
    root = Path(__file__).parents[3]
    with subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            started = json.loads(process.stdout.readline())
            token.chmod(0o600)
            target = connect(started["admin_url"], token_file=token, allow_insecure=True)
            assert sorted(target.admin.brokers()) == sorted(started["brokers"])
        finally:
            process.terminate()
        assert process.wait(timeout=10) == 0
