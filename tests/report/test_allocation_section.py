"""The report's "replicas per core" chart counts brokers only (issue 43, point 3): bookies'
cores hold no partition, and counting them lowered the even share so far that every broker
looked overloaded."""

from __future__ import annotations

import pandas as pd

from trimtab.report.data import ReportData
from trimtab.report.storage import allocation_section


def test_even_share_is_over_writable_brokers_only() -> None:
    inventory = pd.DataFrame(
        {
            "cluster": ["c"] * 4,
            "node": ["broker1", "broker2", "bookie1", "bookie2"],
            "region": [""] * 4,
            "rack": [""] * 4,
            "role": ["broker", "broker", "bookie", "bookie"],
            "state": ["writable"] * 4,
            "cores": [4, 4, 16, 16],
            "memory_bytes": [0] * 4,
            "disk_total_bytes": [0] * 4,
            "nic_bps": [0] * 4,
        }
    )
    allocations = pd.DataFrame(
        {
            "cluster": ["c"] * 16,
            "topic": ["t"] * 16,
            "partition": list(range(16)),
            "replica": [0] * 16,
            "node": ["broker1"] * 8 + ["broker2"] * 8,
            "core": [k % 4 for k in range(16)],
        }
    )
    data = ReportData(run={}, tables={"inventory": inventory, "allocations": allocations})
    html = str(allocation_section(data, "c", {}))
    assert "bookie1" not in html
    # 16 replicas over 8 broker cores: an even share of 2.00, which both brokers carry
    assert "even share (2.00)" in html
