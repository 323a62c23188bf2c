"""Tolerances for sampled shares and ratios, derived from the sample size (not upstream's ±1).

A share estimated from n independent trials has binomial standard error ``sqrt(p(1-p)/n)``; we
allow ``Z = 5`` standard errors (a false failure about once in 1.7 million checks). A ratio of
two counts uses the delta method on ``log(ratio)``; without assuming the two counts are
independent, ``sd(log a - log b) <= sd(log a) + sd(log b)`` (Cauchy-Schwarz), which we use.
"""

from __future__ import annotations

import math

__all__ = ["Z", "ratio_ok", "share_ok"]

Z = 5.0


def share_ok(count: int, trials: int, p: float) -> bool:
    """``count / trials`` is within Z binomial standard errors of ``p``."""
    se = math.sqrt(p * (1 - p) / trials)
    return abs(count / trials - p) <= Z * se + 1e-12


def ratio_ok(a: int, b: int, trials: int, pa: float, pb: float) -> bool:
    """``a / b`` is within Z standard errors (on the log scale) of ``pa / pb``."""
    sd = math.sqrt((1 - pa) / (trials * pa)) + math.sqrt((1 - pb) / (trials * pb))
    return abs(math.log(a / b) - math.log(pa / pb)) <= Z * sd
