"""Fixtures of the Pulsar target tests: the admin stand-in."""

from tests.standins.pulsar.fixtures import pulsar_standin

__all__ = ["pulsar_standin"]
