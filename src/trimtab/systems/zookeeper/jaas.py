"""The ``Client`` section of a JAAS file: the SASL user and password ZooKeeper clients log in with.

A secured BookKeeper or Pulsar deployment already has this file (passed to the JVM as
``-Djava.security.auth.login.config=FILE``)::

    Client {
      org.apache.zookeeper.server.auth.DigestLoginModule required
      username="bookie"
      password="secret";
    };

trimtab reads the same file so that it logs in as the cluster's own clients do (SASL
DIGEST-MD5). Only the ``DigestLoginModule`` (and the ``PlainLoginModule`` some deployments
write) carry a user and password; a Kerberos module (``Krb5LoginModule``, GSSAPI) is refused
with what to use instead. Comments (``//`` and ``/* */``) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trimtab.errors import ConfigError

__all__ = ["JaasLogin", "parse_jaas_section"]

_SECTION = re.compile(r"([A-Za-z0-9_.\-]+)\s*\{(.*?)\}\s*;", re.S)
_OPTION = re.compile(r"([A-Za-z0-9_.\-]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^\s;]+)")
_DIGEST_MODULES = ("DigestLoginModule", "PlainLoginModule")


@dataclass(frozen=True, slots=True)
class JaasLogin:
    """A user and password from a JAAS section (the password left out of ``repr``)."""

    username: str
    password: str = field(repr=False)
    module: str


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"(?m)//.*$", " ", text)


def parse_jaas_section(text: str, section: str, *, source: str) -> JaasLogin:
    """The login of ``section`` in a JAAS file's ``text``; :class:`ConfigError` naming
    ``source`` and what to fix if the section is missing or holds no user and password."""
    sections: dict[str, str] = dict(_SECTION.findall(_strip_comments(text)))
    if section not in sections:
        found = ", ".join(sorted(sections)) or "none"
        raise ConfigError(
            f"JAAS file {source} has no '{section}' section (sections: {found}): add one with "
            "org.apache.zookeeper.server.auth.DigestLoginModule, username and password"
        )
    body = sections[section].strip()
    module = body.split(None, 1)[0] if body else ""
    if not module.endswith(_DIGEST_MODULES):
        raise ConfigError(
            f"JAAS section '{section}' in {source} uses {module or 'no login module'}: trimtab "
            "speaks SASL DIGEST-MD5 only (org.apache.zookeeper.server.auth.DigestLoginModule "
            "with username and password); Kerberos (GSSAPI) is not supported"
        )
    options = {key: _unquote(value) for key, value in _OPTION.findall(body)}
    user, password = options.get("username"), options.get("password")
    if not user or password is None:
        raise ConfigError(
            f"JAAS section '{section}' in {source} has no username and password options"
        )
    return JaasLogin(user, password, module)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value
