"""What a GetBookieInfo request asks for and what it can come back with.

:class:`Requested` is the request's flag bits; a :data:`FetchResult` is one node's outcome:
a :class:`~trimtab.diskinfo.BookieInfo` (the model's value, total and free disk bytes) or a
:class:`FetchError` saying why the node has none. Whoever consumes the answers is a
:class:`~trimtab.diskinfo.BookieInfoSink`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntFlag, StrEnum
from typing import TypeAlias

from trimtab.diskinfo import BookieInfo

__all__ = [
    "FetchError",
    "FetchErrorKind",
    "FetchResult",
    "Requested",
]


class Requested(IntFlag):
    """The bits of ``GetBookieInfoRequest.requested`` (upstream ``GetBookieInfoRequest.Flags``)."""

    TOTAL_DISK_CAPACITY = 0x01
    FREE_DISK_SPACE = 0x02


class FetchErrorKind(StrEnum):
    """Why a node has no BookieInfo after a request; each is counted separately in metrics."""

    TIMEOUT = "timeout"  # no answer within getBookieInfoTimeoutSecs (upstream TimeoutException)
    UNAVAILABLE = "unavailable"  # nothing listening, connection refused or reset
    STATUS = "status"  # the node answered with a status other than EOK (EIO, EBADVERSION...)
    BAD_RESPONSE = "bad-response"  # an EOK answer without the requested fields, or impossible
    NO_ADDRESS = "no-address"  # the node is registered but published no GetBookieInfo address
    TLS = "tls"  # TLS failed (certificate, CA, host name) or a plaintext/TLS mismatch


@dataclass(frozen=True, slots=True)
class FetchError:
    """A failed GetBookieInfo request: its kind and a sentence for people."""

    kind: FetchErrorKind
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.detail}"


FetchResult: TypeAlias = BookieInfo | FetchError
