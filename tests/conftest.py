"""Suite-wide test ordering, and a fixture for the CLI's progress displays.

The local Spark session (tests/pipeline) starts JVM-side threads that touch Python's global
``random`` state; Hypothesis treats a change of that state during data generation as a bug
in the strategy and, with warnings as errors, fails. Spark tests (tests/pipeline, and any
other test using the ``spark`` fixture, such as the fuzzing campaign's pipeline runs)
therefore run last, after every property test, and the session lives only for them.
"""

from __future__ import annotations

import io

import pytest

#: ``tls_files``: the session's test certificates (trustme), for every TLS test
pytest_plugins = ["tests.tls_certs"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_needs_spark)


def _needs_spark(item: pytest.Item) -> bool:
    fixtures = getattr(item, "fixturenames", ())
    return "tests/pipeline/" in item.nodeid.replace("\\", "/") or "spark" in fixtures


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
