"""The pulsar-admin script of a plan of several cycles (issue 43 point 2): net moves grouped
by cycle, with the pause the shedder itself would take between cycles."""

from __future__ import annotations

from trimtab.shedding.decisions import Move
from trimtab.systems.pulsar.admin import unload_script


def _move(bundle: str, source: str, destination: str) -> Move:
    return Move(bundle=f"t/ns/{bundle}", source=source, destination=destination, throughput=1.0)


def test_one_cycle_is_the_bare_commands() -> None:
    lines = unload_script(
        [(1, _move("0x0_0x1", "a:8080", "b:8080"))], interval_s=60, cooldown_s=180
    )
    assert lines == [
        "pulsar-admin namespaces unload t/ns --bundle 0x0_0x1 --destinationBroker b:8080"
    ]


def test_cycles_wait_the_period_or_the_cooldown_of_a_broker_that_unloads_again() -> None:
    moves = [
        (1, _move("0x0_0x1", "a:8080", "c:8080")),
        (2, _move("0x1_0x2", "b:8080", "c:8080")),  # b never unloaded: the cycle period
        (3, _move("0x2_0x3", "a:8080", "d:8080")),  # a unloaded 60 s before: 120 s more
        (7, _move("0x3_0x4", "a:8080", "d:8080")),  # 4 periods, longer than the cooldown
    ]
    lines = unload_script(moves, interval_s=60, cooldown_s=180, rest=True)
    sleeps = [line for line in lines if line.startswith("sleep ")]
    assert sleeps == [
        "sleep 60  # the shedder's next cycle",
        "sleep 120  # a broker's cooldown after its last unload",
        "sleep 240  # the shedder's next cycle",
    ]
    assert [line for line in lines if line.startswith("# cycle")] == [
        f"# cycle {c}: 1 unload(s)" for c in (1, 2, 3, 7)
    ]
    assert sum(line.startswith("#   PUT /admin/v2/namespaces/t/ns/") for line in lines) == 4
