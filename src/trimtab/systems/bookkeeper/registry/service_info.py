"""What a registration znode says about where to ask the node, in every format it comes in.

A node's znode under ``available`` (or ``available/readonly``) holds one of three things:

* a trimtab agent's JSON, ``{"bookieinfo": "host:port"}``: its gRPC GetBookieInfo address;
* a BookKeeper 4.12+ bookie's serialized ``BookieServiceInfoFormat`` (upstream
  ``DataFormats.proto``, written by ``ZKRegistrationManager.serializeBookieServiceInfo``): a
  list of endpoints, the one whose protocol is ``bookie-rpc`` is the bookie port, which answers
  GET_BOOKIE_INFO in the v3 protocol (upstream's ``DefaultBookieAddressResolver`` picks the
  same endpoint); when that endpoint lists the ``tls`` extension the address reads
  ``bookie-rpc+tls://`` and the reader starts TLS there;
* nothing, from an older bookie: then, as upstream's ``buildLegacyBookieServiceInfo``, the
  bookie id itself is the ``host:port`` of the bookie port.

:func:`registration_address` turns any of them into the address the reader asks
(:func:`~trimtab.systems.bookkeeper.registry.model.split_address` says in which protocol), or
``None`` when the znode names no way to ask (the node is still a member, shown as ``no-address``).
"""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf.message import DecodeError

from trimtab.cluster import NodeId
from trimtab.systems.bookkeeper.registry.model import WireProtocol
from trimtab.systems.bookkeeper.registry.proto import bookie_service_info_pb2 as bsi
from trimtab.systems.zookeeper import decode_node_data

__all__ = [
    "BOOKIE_RPC",
    "TLS_EXTENSION",
    "bookie_rpc_endpoint",
    "encode_bookie_service_info",
    "registration_address",
]

#: upstream's protocol name of the endpoint that serves BookKeeper's own protocol
BOOKIE_RPC = WireProtocol.BOOKIE_RPC.value
#: the endpoint extension a bookie with TLS configured lists (upstream ``BookieService``)
TLS_EXTENSION = "tls"


def encode_bookie_service_info(
    host: str,
    port: int,
    *,
    endpoint_id: str = "bookie",
    extensions: tuple[str, ...] = (),
    properties: Mapping[str, str] | None = None,
) -> bytes:
    """A bookie's znode data with one ``bookie-rpc`` endpoint, as a 4.12+ bookie writes it."""
    info = bsi.BookieServiceInfoFormat()
    endpoint = info.endpoints.add()
    endpoint.id, endpoint.port, endpoint.host, endpoint.protocol = (
        endpoint_id,
        port,
        host,
        BOOKIE_RPC,
    )
    endpoint.extensions.extend(extensions)
    info.properties.update(properties or {})
    return info.SerializeToString()


def bookie_rpc_endpoint(data: bytes) -> str | None:
    """``host:port`` of the ``bookie-rpc`` endpoint in serialized BookieServiceInfoFormat."""
    found = _bookie_rpc(data)
    return found[0] if found else None


def _bookie_rpc(data: bytes) -> tuple[str, bool] | None:
    """``host:port`` of the ``bookie-rpc`` endpoint and whether it lists the ``tls`` extension
    (upstream's ``BookieService.publishInfo`` adds it when the bookie has a TLS provider)."""
    try:
        info = bsi.BookieServiceInfoFormat.FromString(data)
    except DecodeError:
        return None
    for endpoint in info.endpoints:
        if endpoint.protocol == BOOKIE_RPC and endpoint.host and 0 < endpoint.port < 65536:
            host = endpoint.host
            if ":" in host and not host.startswith("["):
                host = f"[{host}]"
            return f"{host}:{endpoint.port}", TLS_EXTENSION in endpoint.extensions
    return None


def registration_address(node: NodeId, data: bytes | None) -> str | None:
    """Where and how to ask ``node``, from its registration znode's ``data`` (see above)."""
    if not data:
        return WireProtocol.BOOKIE_RPC.address(node) if node.port is not None else None
    if data.lstrip().startswith(b"{"):
        return decode_node_data(data)
    found = _bookie_rpc(data)
    return WireProtocol.BOOKIE_RPC.address(found[0], tls=found[1]) if found else None
