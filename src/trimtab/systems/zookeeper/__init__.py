"""ZooKeeper: sessions, targets (``HOST:PORT[/chroot]``) and znode encodings, shared by the
BookKeeper registry and Pulsar's metadata readers.

* :mod:`~trimtab.systems.zookeeper.session` — a kazoo client that reconnects forever, and
  ending a session so its ephemeral znodes go at once;
* :mod:`~trimtab.systems.zookeeper.security` — credentials (SASL DIGEST-MD5 from a JAAS file,
  digest), TLS and the ACL of created znodes, from the configuration (issue 41);
* :mod:`~trimtab.systems.zookeeper.jaas` — the JAAS ``Client`` section;
* :mod:`~trimtab.systems.zookeeper.target` — which ensemble and registry root
  (``zkServers``, ``zkLedgersRootPath``, ``metadataServiceUri``);
* :mod:`~trimtab.systems.zookeeper.znode` — the GetBookieInfo address in a registration znode;
* :mod:`~trimtab.systems.zookeeper.reading` — one read-only session for a command that looks
  and leaves (``inventory --zk``).
"""

from trimtab.systems.zookeeper.security import NO_SECURITY, ZkSecurity, zk_security
from trimtab.systems.zookeeper.session import end_session, make_client, start_session
from trimtab.systems.zookeeper.target import READONLY, ZkTarget, zk_servers, zk_target
from trimtab.systems.zookeeper.znode import decode_node_data, encode_node_data

__all__ = [
    "NO_SECURITY",
    "READONLY",
    "ZkSecurity",
    "ZkTarget",
    "decode_node_data",
    "encode_node_data",
    "end_session",
    "make_client",
    "start_session",
    "zk_security",
    "zk_servers",
    "zk_target",
]
