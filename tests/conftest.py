"""Suite-wide test ordering.

The local Spark session (tests/pipeline) starts JVM-side threads that touch Python's global
``random`` state; Hypothesis treats a change of that state during data generation as a bug
in the strategy and, with warnings as errors, fails. Spark tests therefore run last, after
every property test, and the session lives only for them.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: "tests/pipeline/" in item.nodeid.replace("\\", "/"))
