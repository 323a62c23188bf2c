"""What one ``pipeline stream`` run reads, writes and decides with.

Why a module of its own
    The options are read by every part of the stream (its sources, its state function, its
    publication and the driver loop); kept apart, none of those imports another for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trimtab.config import Config
from trimtab.pipeline.loads import window_seconds

__all__ = ["StreamOptions", "interval"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamOptions:
    """What one streaming run reads, writes and decides with."""

    input: str
    output: str
    checkpoint: str | None = None  # default: OUTPUT/_checkpoint
    trigger: str = "1m"
    window: str = "1m"
    watermark: str = "2m"  # how late a row may land and still be folded in time order
    config: Config = field(default_factory=Config)
    strategy: str | None = None  # default: the config's loadBalancerLoadSheddingStrategy
    seed: int = 0
    future_tolerance_s: float = 300.0
    inventory_poll_s: float = 5.0

    @property
    def checkpoint_dir(self) -> str:
        return self.checkpoint or f"{self.output.rstrip('/')}/_checkpoint"


def interval(text: str) -> str:
    """A duration option (``1m``, ``10s``) as Spark's interval text."""
    return f"{window_seconds(text)} seconds"
