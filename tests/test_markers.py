"""The markers of heavy tests (tests/markers.py): set from fixtures, and a test that starts a
server, a JVM or a ``trimtab`` process without its marker fails at once, naming the marker."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from typing import Any

import pytest

from tests.markers import _Guard, apply_markers, guard, heavy_markers, process_needs


class FakeItem:
    """Just what the markers read of a test: its id, fixtures and markers."""

    def __init__(self, *markers: str, fixtures: tuple[str, ...] = ()) -> None:
        self.nodeid = "tests/test_fake.py::test_fake"
        self.fixturenames = fixtures
        self.markers = set(markers)

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.markers else None

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.markers.add(mark.name)


def item(*markers: str, fixtures: tuple[str, ...] = ()) -> pytest.Item:
    fake: Any = FakeItem(*markers, fixtures=fixtures)
    return fake  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["java", "-cp", "zk.jar", "org.apache.zookeeper.server.ZooKeeperServerMain"], "zookeeper"),
        (["/opt/spark/bin/spark-submit", "job.py"], "spark"),
        (["/opt/spark/bin/spark-class", "org.apache.spark.deploy.master.Master"], "spark"),
        (["/venv/playwright/driver/node", "cli.js", "run-driver"], "browser"),
        (["/venv/bin/trimtab", "topology", "-i", "x.csv"], "subprocess"),
        (["/venv/bin/trimtab", "pipeline", "run"], "subprocess spark"),
        (
            ["/venv/bin/python", "-c", "from trimtab.cli import main; main()", "agent"],
            "subprocess server",
        ),
        (
            ["/venv/bin/python", "tests/online/faults.py", "agent", "--id", "a:1"],
            "subprocess server",
        ),
        (["/venv/bin/python", "-c", "import sys"], None),
        ("git status", None),
    ],
    ids=[
        "zookeeper",
        "spark-submit",
        "spark-class",
        "playwright",
        "trimtab",
        "pipeline",
        "agent",
        "agent-with-faults",
        "plain-python",
        "other",
    ],
)
def test_each_kind_of_child_process_names_its_marker(args: Any, expected: str | None) -> None:
    """ZooKeeper, Spark, the browser's driver and trimtab itself are told apart by command."""
    found = process_needs(args)
    assert (None if found is None else " ".join(found[1])) == expected


def test_fixtures_mark_the_test_and_online_goes_with_servers() -> None:
    """A test of the ``zk_target`` fixture (through ``zookeeper``) is ``zookeeper`` and ``online``;
    a test of no such fixture stays unmarked."""
    zk, pure = FakeItem(fixtures=("zk_target", "zookeeper")), FakeItem(fixtures=("tmp_path",))
    apply_markers([zk, pure])  # type: ignore[list-item]
    assert zk.markers == {"zookeeper", "online"}
    assert pure.markers == set()


def test_an_unmarked_test_may_not_listen_and_its_socket_is_closed() -> None:
    """A listening socket is a server: refused at once, the socket closed, the marker named."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    with pytest.raises(pytest.fail.Exception) as refused, guard(item()):
        sock.listen()
    assert "without the marker server" in str(refused.value) and sock.fileno() == -1


def test_a_trimtab_process_is_refused_before_it_starts() -> None:
    """The refusal comes before the child exists (the path here could not run anyway)."""
    with pytest.raises(pytest.fail.Exception) as refused, guard(item()):
        subprocess.run(["/nonexistent/trimtab", "pipeline", "run"], check=False)
    assert "without the marker subprocess, spark" in str(refused.value)
    assert "@pytest.mark.subprocess and @pytest.mark.spark" in str(refused.value)


def test_a_refusal_the_code_swallows_still_fails_the_test() -> None:
    """A CLI's error handler (or another thread) may catch the refusal: the test fails anyway."""
    refused = pytest.raises(pytest.fail.Exception, match="without the marker subprocess")
    with refused, guard(item()), contextlib.suppress(pytest.fail.Exception):
        subprocess.run(["/nonexistent/trimtab", "--help"], check=False)


def test_markers_allow_what_they_name() -> None:
    """``server`` allows a server; a ZooKeeper test may run trimtab without ``subprocess``; but a
    Spark JVM needs ``spark`` whatever else the test carries."""
    _Guard(item("server")).check("a server", ("server",), "grpc.server")
    _Guard(item("zookeeper")).check("a trimtab process", ("subprocess",), "trimtab shed")
    with pytest.raises(pytest.fail.Exception, match="without the marker spark"):
        _Guard(item("zookeeper")).check("a Spark JVM", ("spark",), "spark-submit")
    assert heavy_markers(item("slow", "spark")) == ["spark", "slow"]
