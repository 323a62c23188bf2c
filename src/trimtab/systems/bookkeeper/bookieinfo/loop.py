"""An asyncio event loop on a thread of its own, for the threaded code around it.

The v3 client and server speak asyncio (one loop serves a thousand connections without a thread
each), while the reader, the agent and the CLI are threaded. :class:`LoopThread` is the bridge:
coroutines are handed to the loop from any thread and their results awaited there with a
time-out. :meth:`LoopThread.close` cancels what still runs, stops the default executor and
joins the thread, so nothing outlives its owner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")
_CLOSE_SECONDS = 10.0


class LoopThread:
    """One event loop running on one daemon thread until :meth:`close`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; raises ``RuntimeError`` once closed."""
        with self._lock:
            if self._closed:
                coro.close()
                raise RuntimeError("event loop is closed")
            return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop and wait at most ``timeout`` seconds for its result."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no result within {timeout:g} s") from None

    def close(self) -> None:
        """Cancel every task, stop the executor and the loop, join the thread; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(_wind_down(), self.loop)
            with contextlib.suppress(
                concurrent.futures.TimeoutError, concurrent.futures.CancelledError
            ):
                future.result(_CLOSE_SECONDS)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(_CLOSE_SECONDS)
        if not self._thread.is_alive():
            self.loop.close()


async def _wind_down() -> None:
    """Cancel the loop's other tasks, let them finish, then end the default executor's threads."""
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_default_executor()
