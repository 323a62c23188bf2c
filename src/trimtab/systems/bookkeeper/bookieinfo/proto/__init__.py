"""Generated code for ``bookieinfo.proto`` (GetBookieInfo), committed so a fresh clone works.

Do not edit ``bookieinfo_pb2*.py*`` by hand: change ``bookieinfo.proto`` and run ``make proto``
(grpcio-tools, a dev dependency). ``tests/online/test_protocol.py`` fails when the committed
files differ from what the pinned grpcio-tools generates.
"""

from __future__ import annotations

__all__: list[str] = []
