"""One Kafka admin connection (kafka-python's ``KafkaAdminClient``) and its failures as one line.

Before the client, :func:`~trimtab.systems.kafka.probe.probe` dials the bootstrap servers
once each (TCP, TLS, SASL) so that a failure names the endpoint and its cause: refused, a
certificate that does not verify, a host name that does not match, a peer that does not speak
TLS, a wrong password. (kafka-python retries those until its timeout and then says only
"Unable to bootstrap".)

kafka-python logs at WARNING and ERROR (and its DEBUG lines carry the client's configuration,
password included): its logger is silenced (no record is made, nothing propagates), so nothing
reaches the terminal or an application log; the errors reach the user as :class:`TargetError`
lines. (To debug the client, set the ``kafka`` logger's level and handler explicitly.)
Every call is counted by API in :attr:`AdminConnection.calls` (the bench reports calls/move).
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from trimtab.config.secrets import scrub
from trimtab.errors import TargetError
from trimtab.systems.kafka.command_config import ClientSecurity
from trimtab.systems.kafka.probe import ProbeError, probe

__all__ = ["AdminConnection", "parse_bootstrap"]

T = TypeVar("T")
_RETRY_PAUSE_S = 0.2  # before repeating a call whose connection was closed
_LOG = logging.getLogger("kafka")
_LOG.addHandler(logging.NullHandler())
_LOG.propagate = False
_LOG.setLevel(logging.CRITICAL + 1)  # no record is made: none can carry a secret anywhere


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``host:port,...`` as pairs; an empty list, a missing or bad port is a TargetError."""
    pairs = []
    for item in (s.strip() for s in servers.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise TargetError(
                f"--bootstrap-servers {item!r} is not host:port (for example kafka-1:9092)"
            )
        pairs.append((host, int(port)))
    if not pairs:
        raise TargetError("--bootstrap-servers is empty: give host:port[,host:port...]")
    return pairs


class AdminConnection:
    """A connected ``KafkaAdminClient`` with counted, translated calls."""

    def __init__(self, bootstrap: str, security: ClientSecurity, timeout_s: float) -> None:
        self.bootstrap = bootstrap
        self.endpoint = f"kafka {bootstrap}"
        self.calls: Counter[str] = Counter()
        servers = parse_bootstrap(bootstrap)
        kwargs = security.client_kwargs(self.endpoint)
        self._reach(servers, security, kwargs.get("ssl_context"), timeout_s)
        from kafka import KafkaAdminClient

        timeout_ms = int(timeout_s * 1000)
        try:
            self.client: Any = KafkaAdminClient(
                bootstrap_servers=[f"{h}:{p}" for h, p in servers],
                client_id="trimtab",
                request_timeout_ms=timeout_ms,
                bootstrap_timeout_ms=timeout_ms,
                reconnect_backoff_max_ms=1000,
                **kwargs,
            )
        except Exception as exc:
            raise self.error("connect", exc) from None

    def _reach(
        self,
        servers: list[tuple[str, int]],
        security: ClientSecurity,
        context: ssl.SSLContext | None,
        timeout_s: float,
    ) -> None:
        """Dial the bootstrap servers until one takes us (see :mod:`.probe`)."""
        reasons = []
        for host, port in servers:
            try:
                probe(host, port, security, context, timeout_s)
                return
            except ProbeError as exc:
                if exc.auth:
                    raise TargetError(
                        f"{self.endpoint}: {exc} at {host}:{port}: check the user and password "
                        "of sasl.jaas.config and sasl.mechanism in --command-config"
                    ) from None
                reasons.append(f"{host}:{port}: {exc}")
        raise TargetError(f"cannot reach {self.endpoint}: {'; '.join(reasons)}")

    def error(self, what: str, exc: BaseException) -> TargetError:
        """One line: the endpoint, what failed and why (no secret)."""
        name = type(exc).__name__
        text = str(exc).splitlines()[0] if str(exc) else ""
        if "SaslAuthenticationFailed" in name or "SaslAuthenticationFailed" in text:
            return TargetError(
                f"{self.endpoint}: authentication failed ({what}): check the user and password "
                "of sasl.jaas.config and sasl.mechanism in --command-config"
            )
        if "Timeout" in name:
            text = f"no answer within the timeout ({text})" if text else "no answer in time"
        detail = f"{name}: {text}" if text and name not in text else (text or name)
        return TargetError(scrub(f"{self.endpoint}: {what} failed: {detail[:300]}"))

    def call(self, api: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` counted under ``api``; any client error is a TargetError.

        A connection the broker closed is noticed by the client only when a request fails on
        it; such a call is made once more on a fresh connection. Every call trimtab makes is
        safe to repeat: reads, a SET of a config, a reassignment to the same replicas, and a
        cancel (a second one answers NO_REASSIGNMENT_IN_PROGRESS, which is ignored)."""
        from kafka.errors import KafkaConnectionError, NodeNotReadyError

        for attempt in (1, 2):
            self.calls[api] += 1
            try:
                return fn(*args, **kwargs)
            except TargetError:
                raise
            except (KafkaConnectionError, NodeNotReadyError) as exc:
                if attempt == 2:
                    raise self.error(api, exc) from None
                time.sleep(_RETRY_PAUSE_S)
            except Exception as exc:
                raise self.error(api, exc) from None
        raise AssertionError("unreachable")

    def metadata(self, topics: list[str] | None) -> Any:
        """One Metadata call (brokers, racks, the topics' partitions): kafka-python's response
        object as it decoded it. Its ``describe_topics`` would drop the brokers of the same
        response and turn 10,000 partitions into dicts; a guard reading reads them all."""
        from kafka.protocol.metadata import MetadataRequest

        wanted = None
        if topics is not None:
            wanted = [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        request = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
        manager = self.client._manager

        async def fetch() -> Any:
            return await manager.send(request)

        return self.call("Metadata", manager.run, fetch)

    def close(self) -> None:
        """Close the client (twice is harmless) and let go of it and its sockets."""
        client, self.client = self.client, None
        if client is not None:
            # closing a half-broken client must not hide the real error
            with contextlib.suppress(Exception):
                client.close()
