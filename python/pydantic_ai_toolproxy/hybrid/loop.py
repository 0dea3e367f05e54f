"""The process-wide embedding loop: every embedder call of the process (tool texts and queries) runs on it.

A provider's HTTP connections belong to the loop that opened them, so one loop serves them all. Runs' loops come
and go (`asyncio.run` per request, `run_sync` in threads); this one does not, so an embedding in flight is never
cancelled by the end of the run that asked for it, and its answer is kept whichever run asked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from typing import TypeVar

__all__ = ('embedding_loop', 'joined')

T = TypeVar('T')

_LOOP_LOCK = threading.Lock()
_LOOP: list[tuple[int, asyncio.AbstractEventLoop]] = []
"""The process's embedding loop with the pid that started it (`embedding_loop`)."""


async def joined(future: concurrent.futures.Future[T]) -> T:
    """Await `future` (running on another thread's loop, e.g. `embedding_loop`) from the running loop and return
    its result (or raise its exception). Cancelling the awaiting task leaves `future` running; a loop that closes
    while it waits is never called back."""
    if not future.done():
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()

        def wake(_: object) -> None:
            if not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                    loop.call_soon_threadsafe(arrived.set)

        future.add_done_callback(wake)
        await arrived.wait()
    return future.result()


def embedding_loop() -> asyncio.AbstractEventLoop:
    """The event loop tool texts and queries are embedded on: one per process, running forever on a daemon thread
    (`pydantic-ai-toolproxy-embedding`), started on first use (again in a forked child, whose copy has no thread)."""
    with _LOOP_LOCK:
        if _LOOP and _LOOP[0][0] == os.getpid() and not _LOOP[0][1].is_closed():
            return _LOOP[0][1]
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name='pydantic-ai-toolproxy-embedding', daemon=True)
        thread.start()
        _LOOP[:] = [(os.getpid(), loop)]
        return loop


def running_loops() -> list[asyncio.AbstractEventLoop]:
    """The embedding loops started in this process that are not closed (for tests that stop them)."""
    with _LOOP_LOCK:
        return [loop for _, loop in _LOOP if not loop.is_closed()]
