"""Builders that mirror Pulsar's ``TransferShedderTest`` fixtures (not tests themselves).

Upstream builds load data with ``getCpuLoad(ctx, load, broker)``: cpu = load %, every other
usage 0, ``msgThroughputIn = 1`` and ``msgThroughputOut`` = the sum of the broker's top
bundles; and top bundles with ``getTopBundlesLoad(prefix, load1, load2)``: throughput out only,
named ``<prefix>/0x00000000_0x0FFFFFFF`` and ``<prefix>/0x0FFFFFFF_0xFFFFFFFF``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from trimtab.config import Config, SheddingConfig
from trimtab.shedding import (
    BrokerLoad,
    Bundle,
    CycleResult,
    Label,
    LoadSnapshot,
    Reason,
    ShedderState,
    TransferShedder,
)

NOW = 1_700_000_000.0

#: The standard fixture: broker, namespace, bundle loads, cpu %.
FIVE = (
    ("broker1", "my-tenant/my-namespaceA", (1_000_000, 2_000_000), 2),
    ("broker2", "my-tenant/my-namespaceB", (1_000_000, 3_000_000), 4),
    ("broker3", "my-tenant/my-namespaceC", (2_000_000, 4_000_000), 6),
    ("broker4", "my-tenant/my-namespaceD", (2_000_000, 6_000_000), 80),
    ("broker5", "my-tenant/my-namespaceE", (2_000_000, 7_000_000), 90),
)
SETUP_AVG = 0.364
SETUP_STD = 0.3982762860126121

BUNDLE_D1 = "my-tenant/my-namespaceD/0x00000000_0x0FFFFFFF"
BUNDLE_D2 = "my-tenant/my-namespaceD/0x0FFFFFFF_0xFFFFFFFF"
BUNDLE_E1 = "my-tenant/my-namespaceE/0x00000000_0x0FFFFFFF"
BUNDLE_E2 = "my-tenant/my-namespaceE/0x0FFFFFFF_0xFFFFFFFF"
BUNDLE_C1 = "my-tenant/my-namespaceC/0x00000000_0x0FFFFFFF"

TWO_RANGES = ("0x00000000_0x0FFFFFFF", "0x0FFFFFFF_0xFFFFFFFF")
FIVE_RANGES = (
    "0x00000000_0x1FFFFFFF",
    "0x1FFFFFFF_0x2FFFFFFF",
    "0x2FFFFFFF_0x3FFFFFFF",
    "0x3FFFFFFF_0x4FFFFFFF",
    "0x4FFFFFFF_0x5FFFFFFF",
)


def config(**keys: object) -> SheddingConfig:
    """Upstream's test configuration: hit-count threshold 0, debug mode on (an upstream key
    trimtab accepts and ignores: upstream it only adds logs), plus ``keys``."""
    base = {"hit_count_threshold": 0, "loadBalancerDebugModeEnabled": True}
    return Config.of(**(base | keys)).shedding


def cpu_load(broker: str, percent: float, throughput_out: float, *, at: float = NOW) -> BrokerLoad:
    """``getCpuLoad``: the first sample sets both averages."""
    load = percent / 100.0
    return BrokerLoad(
        broker=broker,
        cpu=load,
        msg_throughput_in=1.0,
        msg_throughput_out=throughput_out,
        weighted_max=load,
        weighted_max_ema=load,
        msg_throughput_ema=1.0 + throughput_out,
        updated_at=at,
        samples=1,
    )


def top_bundles(broker: str, prefix: str, loads: Sequence[float]) -> list[Bundle]:
    """``getTopBundlesLoad``: throughput out only, upstream's range names."""
    ranges = TWO_RANGES if len(loads) <= 2 else FIVE_RANGES
    return [
        Bundle(name=f"{prefix}/{r}", broker=broker, throughput_out=float(x))
        for r, x in zip(ranges, loads, strict=False)
    ]


def snapshot(
    brokers: Iterable[tuple[str, str, Sequence[float], float]],
    *,
    percent: dict[str, float] | None = None,
    at: float = NOW,
) -> LoadSnapshot:
    """Brokers as (name, namespace, bundle loads, cpu %); ``percent`` overrides some cpu %."""
    loads, bundles = [], []
    for broker, prefix, sizes, cpu in brokers:
        loads.append(cpu_load(broker, (percent or {}).get(broker, cpu), sum(sizes), at=at))
        bundles += top_bundles(broker, prefix, sizes)
    return LoadSnapshot.of(loads, bundles)


def five(**percent: float) -> LoadSnapshot:
    """The standard five-broker fixture, with cpu % overridden by keyword."""
    return snapshot(FIVE, percent=percent)


def with_load(snap: LoadSnapshot, broker: str, **changes: object) -> LoadSnapshot:
    """A copy in which one broker's load data has other field values."""
    loads = dict(snap.loads)
    loads[broker] = replace(loads[broker], **changes)  # type: ignore[arg-type]
    return LoadSnapshot.of(loads.values(), snap.bundles, available=snap.available)


def run(snap: LoadSnapshot, state: ShedderState | None = None, **keys: object) -> CycleResult:
    """One TransferShedder cycle at :data:`NOW` with :func:`config` (plus ``keys``)."""
    return TransferShedder(config(**keys)).cycle(snap, state or ShedderState(), now=NOW)


def moves(result: CycleResult) -> set[tuple[str | None, str, str | None, Reason]]:
    """``(source, bundle, destination, reason)`` of each move, as upstream's decision set."""
    return {
        (d.broker, d.move.bundle, d.move.destination, d.reason) for d in result.decisions if d.move
    }


def outcome(result: CycleResult) -> tuple[Label, Reason]:
    return result.outcome.label, result.outcome.reason
