"""Markers for the tests that start something heavy, and the guard that keeps them honest.

A test that starts a Spark JVM, a ZooKeeper server, a server on loopback, a browser or a
``trimtab`` process carries a marker saying so; ``make check`` (``pytest --fast``) runs only
the tests that carry none (and no ``slow``), ``make test`` runs them all. The markers are
registered in pyproject.toml:

=============  ==========================================================================
``spark``      a Spark JVM: the session ``spark`` fixture, a standalone cluster,
               ``trimtab pipeline``/``sweep`` as a process
``zookeeper``  a real ZooKeeper server (tests/online/conftest.py)
``server``     a server listening on loopback: a gRPC agent, the bookie v3 stand-in, an HTTP
               stand-in, a Prometheus endpoint, a ``trimtab agent`` process
``browser``    headless Chromium driven by playwright
``subprocess`` ``trimtab`` run as its own process (Python start-up and imports each time);
               needed only where no other marker here is (a ZooKeeper test may run them)
``online``     set with ``zookeeper`` and ``server``: real servers on loopback
``slow``       set by hand: seconds of pure Python
=============  ==========================================================================

Nobody has to remember them. :func:`apply_markers` marks every test from the fixtures it uses
(:data:`FIXTURE_MARKERS`), and :func:`guard` fails a test the moment it starts one of these
things without the marker, naming the marker to add: it watches ``subprocess.Popen`` (the
JVMs of Spark and ZooKeeper, Chromium's driver, ``trimtab`` processes), listening sockets,
``grpc.server`` and the creation of a Spark session.

``make test`` runs on two pytest-xdist workers with ``--dist loadfile``: a module's tests share
one worker, so its module-scoped fixtures (a demo run, a standalone cluster) are built once, and
each worker starts at most one Spark session and one ZooKeeper server. (``--dist loadgroup``
would put every Spark test on one worker, but pytest-xdist 3.8 cannot mark a group's tests
under pytest 9.2: it writes ``item._nodeid``, which pytest 9.2 no longer reads.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

__all__ = [
    "FIXTURE_MARKERS",
    "HEAVY",
    "apply_markers",
    "guard",
    "heavy_markers",
    "process_needs",
]

#: The markers of a test that starts something; ``make check`` runs the tests with none.
HEAVY = ("spark", "zookeeper", "server", "browser", "subprocess", "online", "slow")

#: What each fixture starts; a test using the fixture (directly or through another) gets these.
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "spark": ("spark",),  # tests/pipeline/conftest.py: the session's local Spark
    "standalone_master": ("spark",),  # tests/pipeline/test_standalone.py: master + workers
    "zookeeper": ("zookeeper",),  # tests/online/conftest.py: one server for the session
    "private_zookeeper": ("zookeeper",),  # a server of the test's own (restarts)
    "secure_zk": ("zookeeper",),  # test_zookeeper_security.py: SASL and a TLS port
    "mutual_tls_zk": ("zookeeper",),  # test_zookeeper_security.py: ssl.clientAuth=need
    "agents": ("server", "subprocess"),  # tests/online/conftest.py: `trimtab agent` processes
    "server": ("server",),  # test_bookkeeper_v3.py, test_protocol.py: a stand-in server
    "pulsar_standin": ("server",),  # tests/standins/pulsar: the admin REST stand-in's brokers
    "chromium": ("browser",),  # tests/pipeline/test_report.py
    "kafka_standin": ("server",),  # tests/systems/kafka/fixtures.py: the Kafka broker stand-in
    "redpanda_admin": ("server",),  # tests/systems/redpanda/conftest.py: its Admin API stand-in
}

_ONLINE = ("zookeeper", "server")
_TESTS = Path(__file__).resolve().parent


def heavy_markers(item: pytest.Item) -> list[str]:
    """The markers of :data:`HEAVY` that ``item`` carries."""
    return [name for name in HEAVY if item.get_closest_marker(name) is not None]


def apply_markers(items: Iterable[pytest.Item]) -> None:
    """Mark each test from its fixtures; ``online`` goes with ``zookeeper`` and ``server``."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        wanted = {marker for name in fixtures for marker in FIXTURE_MARKERS.get(name, ())}
        if any(item.get_closest_marker(name) or name in wanted for name in _ONLINE):
            wanted.add("online")
        for name in sorted(wanted):
            if item.get_closest_marker(name) is None:
                item.add_marker(getattr(pytest.mark, name))


# -- the guard --------------------------------------------------------------------------------


def process_needs(args: Any) -> tuple[str, tuple[str, ...]] | None:
    """What a child process started with ``args`` is, and the markers a test starting it needs;
    ``None`` for anything else (a plain ``python -c``, ``git``)."""
    words = [os.fsdecode(arg) for arg in args] if isinstance(args, list | tuple) else [str(args)]
    names = [Path(word).name for word in words]
    line = " ".join(words)
    if "ZooKeeperServerMain" in line:
        return "a ZooKeeper server", ("zookeeper",)
    if {"spark-submit", "spark-class"} & set(names) or "org.apache.spark" in line:
        return "a Spark JVM", ("spark",)
    if "playwright" in line or any(name.startswith("chrom") for name in names):
        return "a browser", ("browser",)
    if (names and names[0] == "trimtab") or "trimtab.cli" in line or any(map(_test_script, words)):
        needs = ["subprocess"]
        if {"pipeline", "sweep"} & set(words):
            needs.append("spark")
        if "agent" in words or "agent_pool" in line:
            needs.append("server")
        return "a trimtab process", tuple(needs)
    return None


def _test_script(word: str) -> bool:
    """A script of the suite's own (tests/online/faults.py runs ``trimtab agent`` with faults,
    tests/online/agent_pool.py runs agents): a trimtab process too."""
    return word.endswith(".py") and Path(word).resolve().is_relative_to(_TESTS)


class _Guard:
    """Checks each start against the running test's markers; remembers what it refused."""

    def __init__(self, item: pytest.Item) -> None:
        self.item = item
        self.refused: list[str] = []

    def check(self, what: str, needs: Iterable[str], detail: str) -> None:
        missing = [name for name in needs if self.item.get_closest_marker(name) is None]
        if "subprocess" in missing and len(heavy_markers(self.item)) > 0:
            missing.remove("subprocess")  # a process among other heavy things: out of --fast
        if not missing:
            return
        marks = " and ".join(f"@pytest.mark.{name}" for name in missing)
        message = (
            f"{self.item.nodeid} starts {what} ({detail[:160]}) without the marker "
            f"{', '.join(missing)}: add {marks} to the test (or pytestmark to its module), or "
            "name the fixture that starts it in FIXTURE_MARKERS (tests/markers.py), so that "
            "`make check` leaves the test out"
        )
        self.refused.append(message)
        pytest.fail(message, pytrace=False)


def _wrap(original: Callable[..., Any], before: Callable[..., None]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        before(*args, **kwargs)
        return original(*args, **kwargs)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    return wrapper


@contextmanager
def guard(item: pytest.Item) -> Iterator[None]:
    """While ``item`` runs, refuse every start its markers do not allow; fail it at the end
    too, if what it started swallowed the refusal (a CLI's error handler, another thread)."""
    watch = _Guard(item)

    def on_popen(_self: object, args: Any, *_rest: Any, **_kwargs: Any) -> None:
        # Popen._execute_child: after Popen set itself up, so a refusal closes its pipes
        found = process_needs(args)
        if found is not None:
            watch.check(found[0], found[1], repr(args))

    def on_listen(sock: socket.socket, *_rest: Any) -> None:
        marked = heavy_markers(item)
        if "spark" in marked or "server" in marked:
            return  # a Spark driver listens for its own workers and accumulators
        detail = f"a socket listening on {sock!r}"
        sock.close()  # refused: not left to the garbage collector's ResourceWarning
        watch.check("a server", ("server",), detail)

    def on_grpc(*_args: Any, **_kwargs: Any) -> None:
        watch.check("a server", ("server",), "grpc.server")

    def on_spark(*_args: Any, **_kwargs: Any) -> None:
        watch.check("a Spark session", ("spark",), "SparkSession.builder.getOrCreate()")

    with pytest.MonkeyPatch.context() as patch:
        start = subprocess.Popen._execute_child  # type: ignore[attr-defined]
        patch.setattr(subprocess.Popen, "_execute_child", _wrap(start, on_popen))
        patch.setattr(socket.socket, "listen", _wrap(socket.socket.listen, on_listen))
        patch.setattr(grpc, "server", _wrap(grpc.server, on_grpc))
        if "pyspark.sql.session" in sys.modules:
            builder = sys.modules["pyspark.sql.session"].SparkSession.Builder
            patch.setattr(builder, "getOrCreate", _wrap(builder.getOrCreate, on_spark))
        yield
    if watch.refused:
        pytest.fail(watch.refused[0], pytrace=False)
