"""Suite-wide test markers, their guard and their timings; test order; a fixture for the CLI's
progress displays.

Every test that starts Spark, ZooKeeper, a server, a browser or a ``trimtab`` process is
marked from the fixtures it uses, and fails if it starts one without its marker
(tests/markers.py). ``pytest --fast`` (``make check``) runs only the tests without such a
marker; the run ends with the number of tests and their time per marker.

The local Spark session (tests/pipeline) starts JVM-side threads that touch Python's global
``random`` state; Hypothesis treats a change of that state during data generation as a bug
in the strategy and, with warnings as errors, fails. Spark tests therefore run last in a
run without xdist, after every property test, and the session lives only for them. Under
xdist (``make test``) a worker can run property modules after its Spark modules: the property
modules run after a Spark job in one process passed when this was checked (issue 38).
"""

from __future__ import annotations

import io
import os
from collections import defaultdict
from collections.abc import Generator, Iterator

import pytest

from tests.markers import HEAVY, apply_markers, guard, heavy_markers

#: ``tls_files``: the session's test certificates (trustme), for every TLS test
pytest_plugins = ["tests.tls_certs"]

# The CLI's consoles (trimtab.cli._common) fix their width from COLUMNS when they are built, at
# import; the tests give COLUMNS per command (CliRunner's env), so none may be set before. A
# parent's readline exports one: pytest-xdist's workers start with COLUMNS=80 and LINES=24.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help=f"run only the tests with none of the markers {', '.join(HEAVY)} (make check)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: before -m selects on the markers
    apply_markers(items)
    if config.getoption("fast"):
        left = [item for item in items if heavy_markers(item)]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = [item for item in items if not heavy_markers(item)]
    items.sort(key=lambda item: item.get_closest_marker("spark") is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with guard(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with guard(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    with guard(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """The report carries the test's markers (so xdist's workers send them along)."""
    report = yield
    report.heavy_markers = heavy_markers(item)  # type: ignore[attr-defined]
    return report


_seconds: dict[str, float] = defaultdict(float)
_markers: dict[str, list[str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Adds up each test's setup, call and teardown (reports from xdist's workers too)."""
    _seconds[report.nodeid] += report.duration
    _markers[report.nodeid] = getattr(report, "heavy_markers", [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Tests and their time per marker (a test counts under each of its markers)."""
    if len(_seconds) < 2:
        return
    total_tests, total_time = len(_seconds), sum(_seconds.values()) or 1.0
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for nodeid, seconds in _seconds.items():
        for name in _markers.get(nodeid) or ["(none)"]:
            rows[name][0] += 1
            rows[name][1] += seconds
    terminalreporter.section("tests and their time per marker")
    for name in [*HEAVY, "(none)"]:
        if name in rows:
            count, seconds = rows[name]
            terminalreporter.write_line(
                f"{name:<11} {count:>5.0f} tests {count / total_tests:>4.0%}"
                f" {seconds:>8.1f} s {seconds / total_time:>4.0%}"
            )
    terminalreporter.write_line(f"{'all':<11} {total_tests:>5} tests      {total_time:>8.1f} s")


@pytest.fixture(autouse=True)
def _secrets_stay_in_their_test() -> Iterator[None]:
    """The secret values a test makes trimtab remember (a password "admin", say) are forgotten
    after it: otherwise a later test on the same worker sees "admin" scrubbed out of its own
    messages."""
    from trimtab.config import secrets

    saved = set(secrets._KNOWN)
    yield
    secrets._KNOWN.clear()
    secrets._KNOWN.update(saved)


@pytest.fixture
def terminal_stderr(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """The CLI's progress displays drawn as on a terminal, into the returned buffer.

    Under CliRunner stderr is no terminal, so rich draws no progress at all and a test could
    not tell a display on stderr from none. This swaps the console that
    :func:`trimtab.cli._common.progress_bar` draws on for a terminal-like one writing here.
    """
    from rich.console import Console

    from trimtab.cli import _common

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120, color_system=None)
    monkeypatch.setattr(_common, "err", console)
    return buffer
