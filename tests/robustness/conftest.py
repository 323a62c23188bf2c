"""The campaign's pipeline runs share the suite's one local Spark session (tests/pipeline);
tests/conftest.py runs every test that asks for it after the property tests. Its ZooKeeper
rows share the worker's one real ZooKeeper server (tests/online)."""

from __future__ import annotations

from tests.online.conftest import zookeeper
from tests.pipeline.conftest import spark

__all__ = ["spark", "zookeeper"]
