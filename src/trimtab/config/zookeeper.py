"""How trimtab authenticates to ZooKeeper and protects what it writes there (issue 41, part 2).

One section of :class:`~trimtab.config.core.Config`, ``zookeeper``, under the names the upstream
clients already read, so a secured cluster's own settings work as they are:

- BookKeeper's ``zkEnableSecurity``: every znode trimtab creates is readable by all and
  writable only by its creator (BookKeeper's ``ZkUtils.getACLs``), which needs credentials;
- the JAAS file of the ZooKeeper Java client (``java.security.auth.login.config``; its
  ``Client`` section, ``zookeeper.sasl.clientconfig``): SASL DIGEST-MD5 with the
  ``DigestLoginModule`` user and password in it; ``zookeeper.sasl.client=false`` turns it off;
- ZooKeeper's client TLS properties (``zookeeper.client.secure``, ``zookeeper.ssl.keyStore.*``
  and ``zookeeper.ssl.trustStore.*`` in their PEM form, ``zookeeper.ssl.hostnameVerification``);
  ``zookeeper.clientCnxnSocket`` is accepted (trimtab's client always speaks TLS itself);
- ``digest_file`` (trimtab's own): a file holding ``user:password``, the credential
  ``addauth digest`` takes.

No secret is a value here: passwords come from files (or, for the key store, from the upstream
key that holds one, which every output redacts: :mod:`trimtab.config.secrets`). Reading these
files is :mod:`trimtab.systems.zookeeper.security`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trimtab.config.settings import setting

__all__ = ["ZooKeeperConfig"]


def _hidden(field: Any) -> Any:
    """A secret's field: left out of the section's ``repr`` (a log line or a traceback that
    shows the config never shows it; outputs redact it by name, :mod:`trimtab.config.secrets`)."""
    field.repr = False
    return field


@dataclass(frozen=True, slots=True, kw_only=True)
class ZooKeeperConfig:
    """ZooKeeper authentication, TLS and ACLs (upstream client names and defaults)."""

    enable_security: bool = setting(
        False,
        "create znodes readable by all, writable only by their creator (needs credentials)",
        aliases=("zkEnableSecurity",),
    )
    jaas_config: str | None = setting(
        None,
        "JAAS file whose Client section holds the SASL DIGEST-MD5 user and password",
        aliases=("java.security.auth.login.config",),
    )
    sasl_client: bool = setting(
        True, "use SASL when a JAAS Client section is found", aliases=("zookeeper.sasl.client",)
    )
    sasl_client_config: str = setting(
        "Client", "the JAAS section read", aliases=("zookeeper.sasl.clientconfig",)
    )
    digest_file: str | None = setting(
        None, "file holding user:password for digest authentication (addauth digest; trimtab)"
    )
    client_secure: bool = setting(
        False, "TLS to ZooKeeper's secure port", aliases=("zookeeper.client.secure",)
    )
    client_cnxn_socket: str | None = setting(
        None,
        "accepted for ZooKeeper's Java client (Netty for TLS); trimtab's client needs none",
        aliases=("zookeeper.clientCnxnSocket",),
    )
    key_store_location: str | None = setting(
        None,
        "PEM file with the client key and certificate chain (mutual TLS)",
        aliases=("zookeeper.ssl.keyStore.location",),
    )
    key_store_type: str | None = setting(
        None, "PEM (the only form trimtab reads)", aliases=("zookeeper.ssl.keyStore.type",)
    )
    key_store_password: str | None = _hidden(
        setting(
            None,
            "password of an encrypted key store key (a secret: prefer the passwordPath key)",
            aliases=("zookeeper.ssl.keyStore.password",),
        )
    )
    key_store_password_path: str | None = setting(
        None,
        "file holding the key store password",
        aliases=("zookeeper.ssl.keyStore.passwordPath",),
    )
    trust_store_location: str | None = setting(
        None,
        "PEM file of the CA certificates ZooKeeper's certificate is checked against",
        aliases=("zookeeper.ssl.trustStore.location",),
    )
    trust_store_type: str | None = setting(
        None, "PEM (the only form trimtab reads)", aliases=("zookeeper.ssl.trustStore.type",)
    )
    hostname_verification: bool = setting(
        True,
        "check that ZooKeeper's certificate names the host dialled",
        aliases=("zookeeper.ssl.hostnameVerification",),
    )
