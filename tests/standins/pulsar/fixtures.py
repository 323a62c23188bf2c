"""The ``pulsar_standin`` fixture: start stand-in Pulsar clusters, stopped after the test.

``pulsar_standin(brokers=3, namespaces={"public/default": 4}, tokens=..., tls=...)`` returns a
running :class:`~tests.standins.pulsar.standin.PulsarStandin`; tests/markers.py marks every
test using it ``server``. Registered by tests/systems/pulsar/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.standins.pulsar.standin import PulsarStandin

__all__ = ["pulsar_standin"]


@pytest.fixture
def pulsar_standin() -> Iterator[Callable[..., PulsarStandin]]:
    started: list[PulsarStandin] = []

    def start(**options: Any) -> PulsarStandin:
        standin = PulsarStandin(**options)
        started.append(standin)
        return standin

    yield start
    for standin in started:
        standin.close()
