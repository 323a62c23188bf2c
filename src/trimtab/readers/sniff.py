"""Say what a file seems to be, so a refusal can name the file the user gave by its kind.

Every reader of a real format refuses a file of another kind with three facts (the issue's
rule): the format it expected, the format the file seems to be, and the command that makes
the expected one. :func:`seems_to_be` recognises the documents operators usually have at hand
(the outputs of Kafka's and Redpanda's tools, Pulsar's load data, BookKeeper and Pulsar
``.conf`` files, trimtab's own tables) by a marker each prints; :func:`refusal` words the
message. The markers are the tools' own lines and field names, as upstream prints them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trimtab.errors import InputError

__all__ = ["PLAN_DOCUMENT", "raw_kind", "read_text", "refusal", "seems_to_be"]

#: What :func:`seems_to_be` calls trimtab's own plan document (rebalance/shed --plan).
PLAN_DOCUMENT = "a trimtab plan document"


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines()[:200]}


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        first = text.lstrip().splitlines()[:1]
        try:
            return json.loads(first[0]) if first else None
        except (json.JSONDecodeError, RecursionError, ValueError):
            return None


def _keys(doc: Any) -> set[str]:
    if isinstance(doc, dict):
        return set(doc)
    if isinstance(doc, list) and doc and isinstance(doc[0], dict):
        return set(doc[0])
    return set()


_TEXT_MARKS: tuple[tuple[Callable[[set[str], str], bool], str], ...] = (
    (
        lambda lines, _: "Status of partition reassignment:" in lines,
        "the output of kafka-reassign-partitions.sh --verify (reassignment states, no replicas)",
    ),
    (
        lambda lines, _: "Proposed partition reassignment configuration" in lines,
        "the output of kafka-reassign-partitions.sh --generate",
    ),
    (
        lambda lines, _: "Current partition replica assignment" in lines,
        "the output of kafka-reassign-partitions.sh --execute",
    ),
    (
        lambda lines, _: "----- got message -----" in lines,
        "the output of pulsar-client consume",
    ),
    (
        lambda lines, _: "Querying brokers for log directories information" in lines,
        "the output of kafka-log-dirs.sh --describe",
    ),
    (
        lambda _, text: any(
            line.split()[:2] == ["NAMESPACE", "TOPIC"] for line in text.splitlines()[:50]
        ),
        "the output of rpk cluster partitions list",
    ),
    (
        lambda _, text: any(
            line.split()[:3] == ["PARTITION", "LEADER", "EPOCH"] for line in text.splitlines()
        ),
        "the output of rpk topic describe",
    ),
)

_JSON_MARKS: tuple[tuple[set[str], str], ...] = (
    ({"format", "digest", "actions"}, PLAN_DOCUMENT),
    ({"version", "partitions"}, "a Kafka reassignment JSON"),
    ({"brokers"}, "the JSON of kafka-log-dirs.sh --describe"),
    ({"partition_id", "replicas"}, "the JSON of rpk cluster partitions list --format json"),
    ({"lastStats"}, "a Pulsar LocalBrokerData load report (/loadbalance/brokers/<broker>)"),
    ({"bundleStats"}, "a Pulsar LocalBrokerData load report (/loadbalance/brokers/<broker>)"),
    ({"weightedMaxEMA"}, "a Pulsar BrokerLoadData (extensible load manager, PIP-192)"),
    ({"topBundlesLoadData"}, "a Pulsar TopBundlesLoadData (extensible load manager, PIP-192)"),
    ({"cpu", "ts", "node"}, "a trimtab node_metrics table"),
    ({"bundle", "broker", "ts"}, "a trimtab bundle_metrics table"),
    ({"cluster", "node", "cores"}, "a trimtab inventory (nodes) table"),
)

_CONF_MARKS: tuple[tuple[str, str], ...] = (
    ("metadataStoreUrl", "a Pulsar broker.conf"),
    ("zookeeperServers", "a Pulsar broker.conf or bookkeeper.conf"),
    ("journalDirectory", "a BookKeeper bk_server.conf"),
    ("bookiePort", "a BookKeeper bk_server.conf"),
)


def seems_to_be(text: str) -> str | None:
    """What ``text`` seems to be, in words (``the output of kafka-log-dirs.sh --describe``);
    None when nothing known matches."""
    if not text.strip():
        return "an empty file"
    lines = _lines(text)
    for test, what in _TEXT_MARKS:
        if test(lines, text):
            return what
    doc = _json(text)
    keys = _keys(doc)
    for wanted, what in _JSON_MARKS:
        if wanted <= keys:
            return what
    if isinstance(doc, list):
        return f"a JSON array of {len(doc)} value(s)"
    if isinstance(doc, dict):
        shown = ", ".join(sorted(keys)[:6])
        return f"a JSON object with keys {shown}" if shown else "an empty JSON object"
    props = {line.partition("=")[0].strip() for line in lines if "=" in line}
    for key, what in _CONF_MARKS:
        if key in props:
            return what
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "," in first and not first.lstrip().startswith(("{", "[")):
        return f"a CSV table with columns {first.strip()[:80]}"
    return None


def refusal(source: object, expected: str, command: str, text: str) -> str:
    """One refusal in the issue's words: what was expected, what the file seems to be, and
    the command that makes the expected one."""
    guess = seems_to_be(text)
    seems = f"it seems to be {guess}" if guess else "it is no format trimtab knows"
    return f"{source} is not {expected}: {seems}. Make one with: {command}"


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "a gzip archive (gunzip it first)"),
    (b"PAR1", "a Parquet file"),
    (b"PK\x03\x04", "a ZIP archive (an .xlsx workbook, say)"),
    (b"\x7fELF", "a program (an ELF binary)"),
)


def _utf16(data: bytes) -> str | None:
    """The text of UTF-16 ``data`` (as PowerShell's ``>`` and Windows editors save it), with
    or without a byte-order mark; None for anything else."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        codec = "utf-16"
    elif len(data) >= 4 and data[1:4:2] == b"\0\0" and data[0] and data[2]:
        codec = "utf-16-le"
    elif len(data) >= 4 and data[0:4:2] == b"\0\0" and data[1] and data[3]:
        codec = "utf-16-be"
    else:
        return None
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def raw_kind(data: bytes) -> str | None:
    """What ``data`` is when it is no UTF-8 text a reader can take (empty, UTF-16, an
    archive, binary), in words; None for UTF-8 text."""
    if not data.strip():
        return "an empty file"
    text16 = _utf16(data)
    if text16 is not None:
        inner = seems_to_be(text16)
        of = f" ({inner})" if inner else ""
        return f"UTF-16 text{of}; save it as UTF-8 (iconv -f UTF-16 -t UTF-8 IN > OUT)"
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return what
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 3:  # not merely a character cut by a head read
            return "binary data, not UTF-8 text"
        text = data[: exc.start].decode("utf-8-sig")
    return "binary data (it holds NUL bytes)" if "\0" in text else None


def read_text(path: Path, expected: str, command: str) -> str:
    """The UTF-8 text of ``path``; a directory, an unreadable, empty, UTF-16 or binary file is
    an :class:`~trimtab.errors.InputError` with the three facts of :func:`refusal`."""
    if path.is_dir():
        raise InputError(
            f"{path} is a directory, not {expected}: give the file. Make one with: {command}"
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path} does not exist: give {expected}") from None
    except OSError as exc:
        raise InputError(f"{path} cannot be read: {exc.strerror or exc}") from None
    kind = raw_kind(data)
    if kind is not None:
        raise InputError(f"{path} is not {expected}: it is {kind}. Make one with: {command}")
    return data.decode("utf-8-sig")
