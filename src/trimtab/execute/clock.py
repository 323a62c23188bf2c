"""Time as the executor sees it, injected so tests run hours of a plan in milliseconds.

The runner reads ``monotonic()`` for intervals (stall time-outs, ETA), ``now()`` for the local
wall time of ``--window``, and waits with ``sleep()``, which a stop request (SIGINT, SIGTERM,
``abort`` in the control file) cuts short through ``wake()``.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """The executor's time source."""

    def monotonic(self) -> float: ...

    def now(self) -> datetime:
        """Local wall time (naive), for ``--window``."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less if :meth:`wake` is called meanwhile."""
        ...

    def wake(self) -> None: ...


class SystemClock:
    """Real time; :meth:`sleep` waits on an event so a signal handler's :meth:`wake` ends it."""

    def __init__(self) -> None:
        self._woken = threading.Event()

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._woken.wait(seconds)
        self._woken.clear()

    def wake(self) -> None:
        self._woken.set()
