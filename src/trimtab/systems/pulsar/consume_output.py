"""The saved output of ``pulsar-client consume`` on the extensible load manager's topics.

Why
    The extensible load manager (PIP-192) keeps no load report in ZooKeeper: each broker
    publishes its ``BrokerLoadData`` to ``non-persistent://pulsar/system/
    loadbalancer-broker-load-data`` and its ``TopBundlesLoadData`` to ``.../
    loadbalancer-top-bundles-load-data``, keyed by broker id, which the brokers read as table
    views. Reading those topics live needs a Pulsar client (the binary protocol); trimtab
    ships none. What an operator has instead is the output of Pulsar's own tool, which
    upstream's documentation shows for exactly this::

        bin/pulsar-client consume -s trimtab -n 0 \\
            non-persistent://pulsar/system/loadbalancer-broker-load-data > broker-load-data.txt

    Each message is a ``----- got message -----`` line, then one line
    ``[publishTime:[..], eventTime:[..], ]key:[BROKER], [properties:[..], ]content:JSON``
    (upstream ``CmdConsume.interpretMessage``; which of the bracketed parts appear depends on
    the version); the client's log lines may be interleaved.

Rules
    * A message's key is its broker; the newest message of a broker wins (a table view keeps
      the last value of a key); an empty or ``null`` content is a tombstone (upstream's
      ``removeAsync`` sends a null value): the broker left.
    * The values are JSON because the load data store writes them with ``Schema.JSON``
      (``TableViewLoadDataStoreImpl``), so the tool prints them as they are stored.
    * The content is read from ``content:`` to the end of the JSON value (``-pm`` adds
      metadata after it).
"""

from __future__ import annotations

import json

__all__ = ["BOUNDARY", "is_consume_output", "messages"]

#: The line ``pulsar-client consume`` prints before each message.
BOUNDARY = "----- got message -----"
_KEY = "key:["
_CONTENT = ", content:"


def is_consume_output(text: str) -> bool:
    """Whether ``text`` is the saved output of ``pulsar-client consume``."""
    return any(line.strip() == BOUNDARY for line in text.splitlines())


def _message(line: str) -> tuple[str, str] | None:
    """(key, content JSON) of one message line; None for a line that is none."""
    start = line.find(_KEY)
    if start < 0 or (start > 0 and not line[:start].endswith(", ")):
        return None
    end = line.find("]", start)
    content = line.find(_CONTENT, end)
    if end < 0 or content < 0:
        return None
    key = line[start + len(_KEY) : end]
    body = line[content + len(_CONTENT) :].strip()
    if not body or body == "null" or body.startswith("null, "):
        return key, ""  # removeAsync's null value: the broker's entry was deleted
    try:
        _, stop = json.JSONDecoder().raw_decode(body)
    except ValueError:
        return key, body  # refused by the report's reader, which names the reason
    return key, body[:stop]


def messages(text: str) -> dict[str, str]:
    """broker -> the content of its newest message, in the order brokers first appear;
    brokers whose newest message is a tombstone are left out."""
    latest: dict[str, str] = {}
    after_boundary = False
    for line in text.splitlines():
        if line.strip() == BOUNDARY:
            after_boundary = True
            continue
        if not after_boundary:
            continue
        found = _message(line)
        if found is None:
            continue
        after_boundary = False
        key, content = found
        latest[key] = content
    return {key: content for key, content in latest.items() if content}
