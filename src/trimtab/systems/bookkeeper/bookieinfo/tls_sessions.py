"""TLS session resumption for the readers' bookie-port connections.

Why: a full mutual-TLS handshake costs the reader about half a millisecond of OpenSSL CPU (key
exchange, checking the node's chain and signature, signing with the client key) plus asyncio's
Python-level SSL protocol; a scan of a thousand bookies that must connect again (``watch`` after
nodes restarted or timed out, a scan after ``retain`` dropped connections) pays it per node. A
resumed handshake skips the certificate work on both sides.

Algorithm: one :class:`SessionCache` per client holds the last session each ``host:port`` gave, for
the context that made it. :meth:`SessionCache.offering` sets the session to offer for one
``start_tls`` call in a context variable; :class:`ResumingContext` (the class
:meth:`~trimtab.systems.bookkeeper.bookieinfo.tls.ClientTls.build` makes) reads it in ``wrap_bio``,
which asyncio calls synchronously inside ``loop.start_tls``. A session is offered only to the node
it came from and only with the context it came from: when the certificate files are renewed (a new
context), every cached session is forgotten, so a renewed client certificate or CA is used in a full
handshake at once (Python's ``ssl`` refuses a session of another context too;
:class:`ResumingContext` then makes a full handshake). Verification is unchanged: a bookie takes
only a ticket it issued itself, after checking our certificate, and a session is offered only to the
``host:port`` that gave it.
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["ResumingContext", "SessionCache"]

_OFFER: contextvars.ContextVar[ssl.SSLSession | None] = contextvars.ContextVar(
    "trimtab_tls_offer", default=None
)


class ResumingContext(ssl.SSLContext):
    """An ``ssl.SSLContext`` that offers the session :meth:`SessionCache.offering` set."""

    def wrap_bio(  # the same call; the session's default comes from the variable
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        if session is None and not server_side:
            offered = _OFFER.get()
            if offered is not None:
                try:
                    return super().wrap_bio(
                        incoming, outgoing, server_side, server_hostname, offered
                    )
                except ValueError:  # a session of another context: a full handshake instead
                    pass
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)


class SessionCache:
    """The last session per ``host:port``, all from one context; :attr:`resumed` counts the
    handshakes that resumed one."""

    def __init__(self) -> None:
        self._context: ssl.SSLContext | None = None
        self._sessions: dict[str, ssl.SSLSession] = {}
        self._lock = threading.Lock()
        self.resumed = 0

    @contextlib.contextmanager
    def offering(self, key: str, context: ssl.SSLContext) -> Iterator[None]:
        """Offer ``key``'s session (if it came from ``context``) to the handshake started inside."""
        with self._lock:
            if context is not self._context:  # renewed files: no session of the old context
                self._context, self._sessions = context, {}
            session = self._sessions.get(key)
        token = _OFFER.set(session)
        try:
            yield
        finally:
            _OFFER.reset(token)

    def handshaken(self, ssl_object: Any) -> None:
        """Count a finished handshake that resumed a session."""
        if isinstance(ssl_object, ssl.SSLObject) and ssl_object.session_reused:
            with self._lock:
                self.resumed += 1

    def keep(self, key: str, context: ssl.SSLContext, ssl_object: Any) -> None:
        """Remember the session of a connection that worked, as it ends."""
        if not isinstance(ssl_object, ssl.SSLObject):
            return
        session = ssl_object.session  # a TLS 1.3 ticket, or a TLS 1.2 session id
        with self._lock:
            if context is self._context and session is not None:
                self._sessions[key] = session

    def forget(self, key: str) -> None:
        """Drop ``key``'s session (its connection failed: the next one starts afresh)."""
        with self._lock:
            self._sessions.pop(key, None)

    def clear(self) -> None:
        """Drop every session."""
        with self._lock:
            self._sessions.clear()
