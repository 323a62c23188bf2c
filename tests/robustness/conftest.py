"""The campaign's pipeline runs share the suite's one local Spark session (tests/pipeline);
tests/conftest.py runs every test that asks for it after the property tests."""

from __future__ import annotations

from tests.pipeline.conftest import spark

__all__ = ["spark"]
