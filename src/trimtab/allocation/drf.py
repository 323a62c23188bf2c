"""Dominant Resource Fairness over cpu, memory, disk and network, and the dominant share as a
node score for placing work that needs several resources at once.

Goals
    Share a pool of several resources among tenants whose tasks need them in different
    proportions, so that no tenant would rather have another's allocation (envy-free), no
    tenant gains by lying about its demands (strategy-proof), and each gets at least what an
    equal split would give it (sharing incentive). Ghodsi et al., NSDI 2011.

Algorithm (progressive filling, the paper's Algorithm 1)
    A tenant's *dominant share* is the largest of its used fractions ``usedⱼ / capacityⱼ``
    (divided by its weight for weighted DRF). Repeatedly take the tenant of lowest dominant
    share (ties: the first in the order given) and give it one more task if it fits; the paper
    stops at the first task that does not fit (``stop_at_first_blocked=True``); otherwise the
    tenant is set aside and the others continue, which uses the rest of the pool.

Worked example (the paper's): 9 CPUs and 18 GB; A's tasks need ⟨1 CPU, 4 GB⟩ (dominant:
memory, 4/18 per task), B's ⟨3 CPU, 1 GB⟩ (dominant: CPU, 3/9 per task)::

    A 2/9 → B 1/3 → A 4/9 → B 2/3 → A 2/3 → (A's next task needs a CPU: none left)

A gets 3 tasks, B 2; both dominant shares are 2/3.

As a node score (multi-resource placement): ``maxⱼ (loadⱼ + demandⱼ) / capacityⱼ`` is the
node's dominant share after taking the work; lower is better, and above 1 it does not fit.
:func:`least_dominant_share` wraps it as a soft constraint for :mod:`trimtab.constraints`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from trimtab.cluster import Capacity, NodeId
from trimtab.constraints import MAX_SCORE, Soft

__all__ = [
    "DrfResult",
    "HasResources",
    "Resources",
    "dominant_share",
    "dominant_share_score",
    "drf",
    "least_dominant_share",
]

_KINDS = ("cores", "memory_bytes", "disk_bytes", "nic_bps")


@dataclass(frozen=True, slots=True, kw_only=True)
class Resources:
    """An amount of each resource: a capacity, a load or a demand (all default to 0)."""

    cores: float = 0.0
    memory_bytes: float = 0.0
    disk_bytes: float = 0.0
    nic_bps: float = 0.0

    def __post_init__(self) -> None:
        for kind in _KINDS:
            if getattr(self, kind) < 0:
                raise ValueError(f"{kind} must not be negative, got {getattr(self, kind)}")

    @classmethod
    def of(cls, capacity: Capacity) -> Resources:
        """A node's capacity from the inventory (disk: its total size)."""
        return cls(
            cores=capacity.cores,
            memory_bytes=capacity.memory_bytes,
            disk_bytes=capacity.disk_total_bytes,
            nic_bps=capacity.nic_bps,
        )

    def values(self) -> tuple[float, float, float, float]:
        return (self.cores, self.memory_bytes, self.disk_bytes, self.nic_bps)

    def __add__(self, other: Resources) -> Resources:
        a, b = self.values(), other.values()
        return Resources(**{k: x + y for k, x, y in zip(_KINDS, a, b, strict=True)})

    def scaled(self, factor: float) -> Resources:
        return Resources(**{k: x * factor for k, x in zip(_KINDS, self.values(), strict=True)})

    def fits_in(self, capacity: Resources) -> bool:
        """Every amount within the capacity (with a relative slack of 1e-12 for rounding)."""
        return all(
            x <= c * (1 + 1e-12) for x, c in zip(self.values(), capacity.values(), strict=True)
        )


def dominant_share(used: Resources, capacity: Resources, weight: float = 1.0) -> float:
    """``maxⱼ usedⱼ / capacityⱼ / weight`` over the resources the pool has; a demand for a
    resource of capacity 0 makes the share infinite."""
    share = 0.0
    for x, c in zip(used.values(), capacity.values(), strict=True):
        if c > 0:
            share = max(share, x / c)
        elif x > 0:
            return float("inf")
    return share / weight


@dataclass(frozen=True, slots=True)
class DrfResult:
    """Tasks per tenant, their dominant shares, and the resources used in all."""

    tasks: Mapping[str, int]
    dominant_shares: Mapping[str, float]
    used: Resources


def drf(
    capacity: Resources,
    demands: Mapping[str, Resources],
    *,
    weights: Mapping[str, float] | None = None,
    max_tasks: Mapping[str, int] | None = None,
    stop_at_first_blocked: bool = True,
) -> DrfResult:
    """Progressive filling by lowest (weighted) dominant share; see the module docstring.

    ``max_tasks`` bounds a tenant's tasks (its demand for work); tenants are visited in the
    order of ``demands`` on ties.
    """
    names = list(demands)
    weight = {n: (weights or {}).get(n, 1.0) for n in names}
    for name in names:
        if weight[name] <= 0:
            raise ValueError(f"tenant {name!r}: weight must be above 0")
        if not any(demands[name].values()):
            raise ValueError(f"tenant {name!r}: a task must need some resource")
    tasks = dict.fromkeys(names, 0)
    used_by = {n: Resources() for n in names}
    used = Resources()
    active = [n for n in names if (max_tasks or {}).get(n, 1) > 0]
    while active:
        name = min(active, key=lambda n: dominant_share(used_by[n], capacity, weight[n]))
        after = used + demands[name]
        limit = (max_tasks or {}).get(name)
        if not after.fits_in(capacity):
            if stop_at_first_blocked:
                break
            active.remove(name)
            continue
        used = after
        used_by[name] = used_by[name] + demands[name]
        tasks[name] += 1
        if limit is not None and tasks[name] >= limit:
            active.remove(name)
    shares = {n: dominant_share(used_by[n], capacity, weight[n]) for n in names}
    return DrfResult(tasks, shares, used)


def dominant_share_score(load: Resources, demand: Resources, capacity: Resources) -> int:
    """``MAX_SCORE·(1 − share)`` with share = the node's dominant share after the demand;
    0 when it would not fit.

    >>> dominant_share_score(Resources(cores=2), Resources(cores=2), Resources(cores=8))
    5000000
    """
    share = dominant_share(load + demand, capacity)
    return 0 if share > 1 else int(MAX_SCORE * (1 - share))


class HasResources(Protocol):
    def load_of(self, node: NodeId) -> Resources: ...

    def capacity_of(self, node: NodeId) -> Resources: ...


def least_dominant_share(demand: Resources) -> Soft[HasResources]:
    """Prefer the node whose dominant share stays lowest after taking ``demand``."""

    def prepare(ctx: HasResources) -> Callable[[NodeId], int]:
        return lambda node: dominant_share_score(ctx.load_of(node), demand, ctx.capacity_of(node))

    return Soft("node should keep the lowest dominant share after the work", prepare)
