"""The keys upstream defines, so a real ``bk_server.conf`` or ``broker.conf`` loads as it is.

trimtab reads a few dozen settings; a real upstream file holds hundreds of keys. Each upstream
file's key names are kept in ``trimtab/data/upstream_*.keys`` (generated from upstream's own
default files by ``tools/upstream_keys.py``; the header line names the file and commit). A key
found there is accepted and reported as ignored (by :func:`trimtab.config.core.apply_keys`); a key
found nowhere is a mistake.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from importlib.resources import files

__all__ = ["PASSTHROUGH_PREFIXES", "UPSTREAM_FILES", "defined_in", "spellings", "upstream_names"]

# Data file -> what the user knows it as, as shown beside an ignored key. Two versions of
# broker.conf: keys renamed since 2.x (replicatioPolicyCheckDurationSeconds...) still load.
UPSTREAM_FILES = {
    "upstream_bk_server.keys": "BookKeeper bk_server.conf",
    "upstream_bk_client.keys": "BookKeeper client (ClientConfiguration)",
    "upstream_broker.keys": "Pulsar broker.conf",
    "upstream_broker_2x.keys": "Pulsar broker.conf",
    # issue 41 part 2 (zksec): a ZooKeeper client properties file loads as it is
    "upstream_zk_client.keys": "ZooKeeper client (ZKClientConfig)",
}

# Pulsar's broker.conf passes 'bookkeeper_'-prefixed keys to its BookKeeper client, and
# distributedlog uses 'bkc.'; the rest of the key is then a BookKeeper key.
PASSTHROUGH_PREFIXES = ("bkc.", "bookkeeper_", "bookkeeperClient.")


@cache
def _catalogue() -> dict[str, tuple[str, ...]]:
    """Every upstream key -> the upstream files that define it."""
    found: dict[str, list[str]] = {}
    data = files("trimtab") / "data"
    for name, label in UPSTREAM_FILES.items():
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            key = line.strip()
            if key and not key.startswith("#"):
                labels = found.setdefault(key, [])
                if label not in labels:
                    labels.append(label)
    return {key: tuple(labels) for key, labels in found.items()}


def spellings(key: str) -> Iterator[str]:
    """``key`` itself, then ``key`` without the passthrough prefix it starts with, if any."""
    yield key
    for prefix in PASSTHROUGH_PREFIXES:
        if key.startswith(prefix):
            yield key[len(prefix) :]


def defined_in(key: str) -> tuple[str, ...]:
    """The upstream files defining ``key`` (also behind a passthrough prefix); () if none."""
    catalogue = _catalogue()
    return next((catalogue[name] for name in spellings(key) if name in catalogue), ())


def upstream_names() -> list[str]:
    """Every upstream key name, for suggesting the key a typo meant."""
    return sorted(_catalogue())
