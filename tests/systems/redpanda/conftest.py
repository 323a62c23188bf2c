"""The Redpanda Admin API stand-in, and the Kafka stand-in fixtures (Redpanda speaks Kafka)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.standins.redpanda import RedpandaAdminStandin
from tests.systems.kafka.fixtures import kafka_cluster, kafka_standin, kafka_target

__all__ = ["kafka_cluster", "kafka_standin", "kafka_target", "redpanda_admin"]

USERS = {"admin": "rp-Secret-42"}


@pytest.fixture
def redpanda_admin() -> Iterator[RedpandaAdminStandin]:
    """The Admin API with ``admin_api_require_auth`` on (user ``admin``)."""
    with RedpandaAdminStandin(users=USERS) as standin:
        yield standin
