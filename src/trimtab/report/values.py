"""What every section of the fleet report shares: cells read as numbers, stats, formats, names.

Output tables hold cells that may be None, NaN or text; :func:`as_number` and :func:`as_floats`
read them as floats (NaN when they are not numbers), :func:`stats` gives mean, population std
and max − min of the finite ones, and :func:`fmt3`, :func:`fmt_count`, :func:`fmt_pct` write
them as the report shows them ("–" for a missing value). :func:`short_names` trims the prefix
and suffix node names share, :func:`target_band` is the shedder's band around the mean, and
:func:`subsection` is a cluster's ``<h3>`` part.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from trimtab.report.markup import Html
from trimtab.report.page import section
from trimtab.report.svg import Band

__all__ = [
    "DEFAULT_TARGET_STD",
    "HALF",
    "LOAD_MEANING",
    "LOAD_UNIT",
    "Stats",
    "as_floats",
    "as_number",
    "first_finite",
    "fmt3",
    "fmt_count",
    "fmt_pct",
    "live_roles",
    "nan_low",
    "short_names",
    "stats",
    "subsection",
    "target_band",
    "target_std",
]

DEFAULT_TARGET_STD = 0.25  # loadBalancerBrokerLoadTargetStd's default, for runs that omit it
LOAD_UNIT = "load (fraction of the broker's capacity; 1 = 100 %)"
LOAD_MEANING = (
    "Load is how busy a broker is: the highest of its CPU and network usages as a fraction of "
    "its own capacity (1 = 100 %), smoothed over recent samples, as Pulsar's load balancer "
    "computes it."
)
HALF = 560  # chart width when two sit side by side


def short_names(names: Sequence[str]) -> list[str]:
    """Names without the prefix and suffix they all share, cut at a separator.

    >>> short_names(["c0-broker1.east.example.net:8080", "c0-bk2.west.example.net:3181"])
    ['broker1.east', 'bk2.west']
    """
    if len(names) < 2:
        return list(names)
    hosts = [_host(n) for n in names]
    for candidates in (hosts, list(names)):  # ports dropped when the hosts alone are distinct
        prefix = _common_prefix(candidates)
        cut = max(prefix.rfind(s) for s in "-./:_") + 1 if prefix else 0
        suffix = _common_prefix([n[::-1] for n in candidates])[::-1]
        tail = min((suffix.find(s) for s in "-./:_" if s in suffix), default=len(suffix))
        trimmed = [n[cut : len(n) - (len(suffix) - tail)] for n in candidates]
        if all(trimmed) and len(set(trimmed)) == len(set(names)):
            return trimmed
    return list(names)


def _host(name: str) -> str:
    host, colon, port = name.rpartition(":")
    return host if colon and port.isdigit() else name


def _common_prefix(names: Sequence[str]) -> str:
    first, last = min(names), max(names)
    size = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), None)
    return first[: len(first) if size is None else size]


def subsection(title: str, *parts: Html) -> Html:
    """A cluster's sub-section: an ``<h3>`` heading over its parts."""
    return section(title, *parts, level=3)


def live_roles(nodes: pd.DataFrame) -> list[str]:
    return [
        "" if pd.isna(r) else str(r).strip().lower()
        for r, s in zip(nodes["role"], nodes["state"], strict=True)
        if str(s).strip().lower() != "down"
    ]


def target_band(loads: Iterable[float], target: float) -> Band:
    mean = stats(loads).mean
    mean = mean if math.isfinite(mean) else 0.0
    return Band(max(mean - target, 0.0), mean + target, "target band: mean ± target std")


def target_std(run: dict[str, Any], cluster: str) -> float:
    value = run.get("clusters", {}).get(cluster, {}).get("target_std")
    return float(value) if value is not None else DEFAULT_TARGET_STD


def as_number(value: object) -> float:
    """A cell as a float; None, NaN, NA and non-numbers read as NaN."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return number


def as_floats(values: Iterable[object], *, keep_nan: bool = False) -> list[float]:
    out = [as_number(v) for v in values]
    return out if keep_nan else [v for v in out if math.isfinite(v)]


def first_finite(values: pd.Series) -> float:
    finite = as_floats(values)
    return finite[0] if finite else math.nan


class Stats(NamedTuple):
    """Mean, population std and max − min of the finite values; NaN when there are none."""

    mean: float
    std: float
    spread: float


def stats(values: Iterable[float]) -> Stats:
    finite = np.array([v for v in values if math.isfinite(v)], dtype=float)
    if not finite.size:
        return Stats(math.nan, math.nan, math.nan)
    return Stats(float(finite.mean()), float(finite.std()), float(np.ptp(finite)))


def nan_low(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def fmt3(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "–"


def fmt_count(value: float) -> str:
    return f"{value:,.0f}"


def fmt_pct(value: float) -> str:
    return f"{value * 100:.1f} %" if math.isfinite(value) else ""
