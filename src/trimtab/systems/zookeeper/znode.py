"""What a registration znode holds: the node's GetBookieInfo address, as trimtab writes it.

trimtab agents put their gRPC GetBookieInfo address in the znode's data as a small JSON
document, ``{"bookieinfo": "127.0.0.1:3182"}``; a bookie puts its ``BookieServiceInfoFormat``
there, or nothing (before 4.12); how each is read is
:mod:`trimtab.systems.bookkeeper.registry.service_info`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode_node_data", "encode_node_data"]

_DATA_KEY = "bookieinfo"


def encode_node_data(address: str) -> bytes:
    return json.dumps({_DATA_KEY: address}, sort_keys=True).encode()


def decode_node_data(data: bytes | None) -> str | None:
    """The GetBookieInfo address in a registration znode, or ``None`` if it has none."""
    if not data:
        return None
    try:
        doc: Any = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    address = doc.get(_DATA_KEY) if isinstance(doc, dict) else None
    return address if isinstance(address, str) and address else None
