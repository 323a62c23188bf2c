"""Shedders by name: ``shedder_for(config)`` builds the one ``loadBalancerLoadSheddingStrategy``
names (trimtab names or the upstream Java class names, see :mod:`trimtab.config.pulsar`)."""

from __future__ import annotations

from dataclasses import replace

from trimtab.config.pulsar import SheddingConfig, Strategy
from trimtab.shedding.avg import AvgShedder
from trimtab.shedding.balanced import BalancedShedder
from trimtab.shedding.base import Shedder
from trimtab.shedding.overload import OverloadShedder
from trimtab.shedding.threshold import ThresholdShedder
from trimtab.shedding.transfer import TransferShedder
from trimtab.shedding.uniform import UniformLoadShedder

__all__ = ["STRATEGIES", "shedder_for"]

STRATEGIES: dict[Strategy, type[Shedder]] = {
    Strategy.TRANSFER: TransferShedder,
    Strategy.BALANCED: BalancedShedder,
    Strategy.THRESHOLD: ThresholdShedder,
    Strategy.OVERLOAD: OverloadShedder,
    Strategy.UNIFORM: UniformLoadShedder,
    Strategy.AVG: AvgShedder,
}


def shedder_for(config: SheddingConfig, strategy: str | None = None) -> Shedder:
    """The shedder ``strategy`` (default: ``config.strategy``) with ``config``."""
    name = strategy or config.strategy
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if name != config.strategy:
        config = replace(config, strategy=Strategy(name))
    return STRATEGIES[Strategy(name)](config)
