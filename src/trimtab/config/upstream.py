"""The keys upstream defines, so a real ``bk_server.conf`` or ``broker.conf`` loads as it is.

trimtab reads a few dozen settings; a real upstream file holds hundreds of keys, and a file
written for an old release holds keys later releases dropped. Each upstream file's key names are
kept in ``trimtab/data/upstream_*.keys``, built by ``tools/upstream_keys.py`` from upstream's own
default files over their history (every BookKeeper release tag; every apache/pulsar commit on
master and on each release branch that changed ``conf/broker.conf`` or ``conf/bookkeeper.conf``);
the header lines name what was read. A key found there is accepted and reported as ignored (by
:func:`trimtab.config.core.apply_keys`); a key found nowhere is a mistake.

The Pulsar lists carry, beside each key, the first and last release line that shipped it; a key
the newest line no longer has is shown with its range ("Pulsar broker.conf, 2.6 to 2.8"), so a
user sees that the key their old file sets is gone upstream ("3.0-SNAPSHOT": only development
snapshots had it).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from importlib.resources import files

__all__ = ["PASSTHROUGH_PREFIXES", "UPSTREAM_FILES", "defined_in", "spellings", "upstream_names"]

# Data file -> what the user knows it as, as shown beside an ignored key. Pulsar's
# standalone.conf is not listed: every key it had on any branch read is in these lists.
UPSTREAM_FILES = {
    "upstream_bk_server.keys": "BookKeeper bk_server.conf",
    "upstream_bk_client.keys": "BookKeeper client (ClientConfiguration)",
    "upstream_pulsar_broker.keys": "Pulsar broker.conf",
    "upstream_pulsar_bookkeeper.keys": "Pulsar bookkeeper.conf",
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
        for key, shown in _entries((data / name).read_text(encoding="utf-8"), label):
            labels = found.setdefault(key, [])
            if shown not in labels:
                labels.append(shown)
    return {key: tuple(labels) for key, labels in found.items()}


_LINES_READ = "# release lines read, in order: "


def _entries(text: str, label: str) -> Iterator[tuple[str, str]]:
    """(key, label shown) per line of a key list: ``key`` alone, or ``key first last`` (a
    history list), where a key gone before the newest line read shows its range."""
    lines = text.splitlines()
    read = next(
        (line[len(_LINES_READ) :].split() for line in lines if line.startswith(_LINES_READ)), []
    )
    newest = read[-1] if read else None
    current = {newest, f"{newest}-SNAPSHOT"}  # the newest line's snapshots: master's own keys
    for line in lines:
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) == 3 and fields[2] not in current:
            span = fields[1] if fields[1] == fields[2] else f"{fields[1]} to {fields[2]}"
            yield fields[0], f"{label}, {span}"
        else:
            yield fields[0], label


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
