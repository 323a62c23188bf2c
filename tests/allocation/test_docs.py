"""The examples in the allocation modules' docstrings run and give what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

from trimtab.config import Config

MODULES = [
    "trimtab.allocation.model",
    "trimtab.allocation.replica_constraints",
    "trimtab.allocation.drf",
    "trimtab.allocation.plan",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    """Every >>> example in the module gives the output written under it."""
    failures, tried = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0


class TestProfile:
    def test_redpanda_profile_gives_todays_defaults(self) -> None:
        """profile = redpanda: 1,000 partitions per core and no core-0 reserve."""
        cfg = Config.of(profile="redpanda").allocation
        assert (cfg.topic_partitions_per_shard, cfg.topic_partitions_reserve_shard0) == (1000, 0)

    def test_explicit_values_win_over_the_profile(self) -> None:
        """A key set explicitly keeps its value, even equal to the RFC default."""
        cfg = Config.of(profile="redpanda", topic_partitions_per_shard=7000).allocation
        assert (cfg.topic_partitions_per_shard, cfg.topic_partitions_reserve_shard0) == (7000, 0)

    def test_the_rfc_profile_is_the_default(self) -> None:
        """Without a profile the RFC's 7,000 and 2 apply; Redpanda's key names are accepted."""
        cfg = Config.of(topic_partitions_reserve_shard0=1).allocation
        assert (
            cfg.profile,
            cfg.topic_partitions_per_shard,
            cfg.topic_partitions_reserve_shard0,
        ) == (
            "rfc",
            7000,
            1,
        )
