"""Generated code for ``bookie_service_info.proto`` (a bookie's registration data), committed.

Do not edit ``bookie_service_info_pb2.py*`` by hand: change the ``.proto`` and run ``make
proto``. ``tests/online/test_protocol.py`` fails when the committed files differ from what the
pinned grpcio-tools generates.
"""

from __future__ import annotations

__all__: list[str] = []
