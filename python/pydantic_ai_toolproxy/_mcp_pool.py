"""Stdio MCP server processes kept across runs: one process per server per event loop, started within bounds.

Plain Pydantic AI keeps a stdio server's process running after the run that started it, so the next run on the same
event loop starts nothing. `ServerPool` gives the servers of an `mcpServers` file that lifetime, and bounds it:

- **Kept across runs.** A server is started by the first run (or `async with agent:`) that needs it, on the run's
  event loop, by a keeper task of its own (`LoopServer`) that holds the `MCPToolset` entered; runs lease it
  (`ServerPool.acquire` / `release`). The next run on the same loop finds it running. Each event loop gets its own
  process (an MCP session belongs to the loop that opened it), built from the same command line.
- **Stopped when idle, when its loop ends, at exit.** A server no run has leased for `idle_timeout` seconds is
  stopped (counted while its loop runs). `asyncio.run` cancels the keeper when it ends its loop, which stops the
  server. At interpreter exit every server whose loop is still open and idle (the loop `run_sync` keeps) is stopped
  there; a SIGTERM with Python's default disposition exits through `SystemExit`, so the same clean-up runs. A
  server is stopped as the MCP SDK stops one: stdin closed, then its process tree terminated after 2 s.
- **Started within bounds.** At most `start_slots()` servers start at once on one loop, and each server's
  `start_timeout` counts from the moment its start may begin (its slot), so on a loaded machine a server waits
  for a slot instead of losing its time to the others. The start includes the first `tools/list`.
- **A failure costs the run that found it.** A server that did not start is not started again by the runs that
  follow: the pool retries it in the background after a back-off (`RETRY_AFTER`, doubling up to
  `RETRY_AFTER_MAX`), and those runs leave its group out at once, with one warning per failure.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import logging
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Literal

import anyio

__all__ = (
    'DEFAULT_IDLE_TIMEOUT',
    'DEFAULT_START_TIMEOUT',
    'RETRY_AFTER',
    'RETRY_AFTER_MAX',
    'LoopServer',
    'ServerPool',
    'StartFailed',
    'shared_pool',
    'start_slots',
)

logger = logging.getLogger('pydantic_ai_toolproxy')

DEFAULT_START_TIMEOUT = 30.0
"""Seconds a server may take to start (spawn, `initialize`, first `tools/list`), counted from its start slot."""

DEFAULT_IDLE_TIMEOUT = 600.0
"""Seconds a started server stays up with no run using it."""

RETRY_AFTER = 30.0
"""Seconds after a failed start before the pool tries that server again, in the background."""

RETRY_AFTER_MAX = 600.0
"""The longest back-off: each further failure doubles the wait up to this many seconds."""


def start_slots() -> int:
    """How many servers start at once on one event loop: twice the CPUs this process may use, at least 2 (a start is
    mostly one process's CPU; more at once only makes each slower, and each against its own deadline)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)
    return max(2, 2 * cpus)


_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _slots(loop: asyncio.AbstractEventLoop) -> asyncio.Semaphore:
    slots = _SLOTS.get(loop)
    if slots is None:
        slots = _SLOTS[loop] = asyncio.Semaphore(start_slots())
    return slots


class StartFailed(Exception):
    """A server that is not available to this run: its start failed now (`fresh`), or failed earlier and the pool
    retries it in the background (`fresh` False; `retry_in` seconds left of the back-off).

    Attributes:
        error: The exception the start raised.
        fresh: Whether this run's own start attempt failed (False: an earlier one, remembered).
        retry_in: Seconds until the background retry (0 when one is under way).
    """

    def __init__(self, error: BaseException, *, fresh: bool, retry_in: float, server: LoopServer) -> None:
        super().__init__(str(error))
        self.error = error
        self.fresh = fresh
        self.retry_in = retry_in
        self.server = server


class StartTimeout(TimeoutError):
    """A server gave no complete start (spawn, `initialize`, first `tools/list`) within its start timeout."""


class LoopServer:
    """One server process on one event loop: a keeper task holds its `MCPToolset` entered until told to stop.

    Attributes:
        toolset: The `MCPToolset` this loop's process is reached through.
        state: `starting`, `up`, `failed` or `stopped`.
        tools: What the first `tools/list` of the start returned (MCP `Tool` objects), and `ttl_ms` its hint.
        users: Leases held (runs using it now).
        failures: Failed starts in a row; `warned`: how many of them a warning reported.
    """

    def __init__(self, pool: ServerPool, loop: asyncio.AbstractEventLoop, toolset: Any) -> None:
        self.pool = pool
        self.loop = loop
        self.toolset = toolset
        self.state: Literal['starting', 'up', 'failed', 'stopped'] = 'starting'
        self.tools: list[Any] = []
        self.ttl_ms: int | None = None
        self.users = 0
        self.error: BaseException | None = None
        self.failed_at = 0.0
        self.failures = 0
        self.warned = 0
        self.started_at = 0.0
        self._ready: asyncio.Future[None] = loop.create_future()
        self._stop = asyncio.Event()
        self._idle: asyncio.TimerHandle | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """Start the keeper task (in a context of its own: the server outlives the run that started it, so it must
        not hold that run's context variables)."""
        self.state = 'starting'
        self._ready = self.loop.create_future()
        self._stop = asyncio.Event()
        self._task = self.loop.create_task(self._keep(), context=contextvars.Context())
        _LIVE.add(self)
        _install_exit_hooks()

    async def wait_ready(self) -> None:
        """Wait for the start under way (its own timeout bounds it). Raises the start's exception when it failed."""
        await asyncio.shield(self._ready)

    async def _keep(self) -> None:
        from ._mcp_server import first_listing_with_ttl

        toolset = self.toolset
        entered = False
        try:
            async with _slots(self.loop):
                self.started_at = time.monotonic()
                timeout = self.pool.start_timeout
                try:
                    with anyio.fail_after(timeout):
                        await toolset.__aenter__()
                        entered = True
                        tools, ttl = await first_listing_with_ttl(toolset, timeout=None)
                except TimeoutError as exc:
                    step = 'tools/list' if entered else 'initialize'
                    raise StartTimeout(
                        f'no answer to {step} within the start timeout of {timeout:g} s; raise it with '
                        'from_mcp_config(start_timeout=...) or the entry\'s "startup_timeout_sec"'
                    ) from exc
        except BaseException as exc:
            if entered:
                with anyio.CancelScope(shield=True):
                    await _exit_quietly(toolset)
            self._failed(exc)
            if not isinstance(exc, Exception):
                raise
            return
        self.tools, self.ttl_ms = tools, ttl
        self.state = 'up'
        self.failures = 0
        if not self._ready.done():
            self._ready.set_result(None)
        if self.users == 0:
            self._arm_idle()
        try:
            await self._stop.wait()
        finally:
            self.state = 'stopped'
            _LIVE.discard(self)
            if _loop_running():  # else its loop was closed under it (not by asyncio.run): nothing can await here,
                with anyio.CancelScope(shield=True):  # and the server sees its stdin close when this process ends
                    await _exit_quietly(toolset)

    def _failed(self, exc: BaseException) -> None:
        self.state = 'failed'
        self.error = exc
        self.failed_at = time.monotonic()
        self.failures += 1
        _LIVE.discard(self)
        if not self._ready.done():
            self._ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError('start cancelled'))
            self._ready.exception()  # retrieved: a start nobody waits for does not log "never retrieved"
        if isinstance(exc, Exception) and not self.loop.is_closed():
            self._retry = self.loop.call_later(self.backoff(), self._retry_now)

    def backoff(self) -> float:
        """Seconds between the last failure and the background retry: `RETRY_AFTER`, doubled per further failure
        up to `RETRY_AFTER_MAX`."""
        return float(min(RETRY_AFTER_MAX, RETRY_AFTER * 2.0 ** min(self.failures - 1, 16)))

    def retry_in(self) -> float:
        """Seconds left before the background retry (0 when due or under way)."""
        return max(0.0, self.failed_at + self.backoff() - time.monotonic()) if self.state == 'failed' else 0.0

    def _retry_now(self) -> None:
        self._retry = None
        if self.state == 'failed' and not self.loop.is_closed():
            self.begin()

    def lease(self) -> None:
        """One more run uses the server: no idle stop while any does."""
        self.users += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def release(self) -> None:
        """A run that leased the server is done with it; the last one arms the idle stop."""
        self.users = max(0, self.users - 1)
        if self.users == 0 and self.state == 'up':
            self._arm_idle()

    def _arm_idle(self) -> None:
        idle = self.pool.idle_timeout
        if idle is not None and not self.loop.is_closed():
            if self._idle is not None:
                self._idle.cancel()
            self._idle = self.loop.call_later(idle, self._idle_stop)

    def _idle_stop(self) -> None:
        self._idle = None
        if self.users == 0 and self.state == 'up':
            self.stop()

    def alive(self) -> bool:
        """Whether the process answers still: up, and its client session open (a server that exited is not)."""
        if self.state != 'up':
            return False
        client = getattr(self.toolset, 'client', None)
        connected = getattr(client, 'is_connected', None)
        return bool(connected()) if callable(connected) else True

    def stop(self) -> None:
        """Tell the keeper to stop the server (from the loop's thread); a failed server's retry is cancelled."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self._stop.set()

    async def stopped(self) -> None:
        """Stop the server and wait until its process is gone (`stop`, then the keeper's end)."""
        self.stop()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task})


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _exit_quietly(toolset: Any) -> None:
    try:
        await toolset.__aexit__(None, None, None)
    except Exception:  # a server that died already: nothing left to close
        logger.debug('closing an MCP server failed', exc_info=True)


class ServerPool:
    """The processes of one stdio server of an `mcpServers` file: one `LoopServer` per event loop.

    Args:
        server: The server's name in the file (for messages).
        make_toolset: Builds a fresh `MCPToolset` for the server (its own transport and client), one per event loop.
        start_timeout: Seconds a start may take from its slot (`DEFAULT_START_TIMEOUT`).
        idle_timeout: Seconds an unused server stays up, or None to keep it until its loop ends or the process exits.
    """

    def __init__(
        self,
        server: str,
        make_toolset: Callable[[], Any],
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.server = server
        self.make_toolset = make_toolset
        self.start_timeout = start_timeout
        self.idle_timeout = idle_timeout
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopServer] = weakref.WeakKeyDictionary()
        self.starts = 0
        """Processes started by this pool (all loops), for tests and `toolproxy inspect`."""

    def current(self) -> LoopServer | None:
        """This loop's server, whatever its state (None when none was started on it)."""
        return self._by_loop.get(asyncio.get_running_loop())

    async def acquire(self) -> tuple[LoopServer, bool]:
        """Lease this loop's server, starting it when none runs (waiting for a start under way).

        Returns the server and whether this call started it.

        Raises:
            StartFailed: the start failed (`fresh`), or an earlier one did and the back-off is not over (this call
                starts nothing and returns at once).
        """
        loop = asyncio.get_running_loop()
        current = self._by_loop.get(loop)
        started = False
        if current is not None and current.state == 'up' and not current.alive():
            await current.stopped()  # the process went away: a new one
            current = None
        if current is not None and current.state == 'failed':
            if current.retry_in() > 0 or current._retry is None:
                raise StartFailed(
                    current.error or RuntimeError('failed'), fresh=False, retry_in=current.retry_in(), server=current
                )
            current._retry.cancel()  # due now: this call makes the retry
            current._retry = None
            current.begin()
            started = True
        elif current is None or current.state == 'stopped':
            current = LoopServer(self, loop, self.make_toolset())
            self._by_loop[loop] = current
            current.begin()
            self.starts += 1
            started = True
        current.lease()
        try:
            await current.wait_ready()
        except BaseException as exc:
            current.release()
            if isinstance(exc, Exception):
                raise StartFailed(exc, fresh=started, retry_in=current.retry_in(), server=current) from exc
            raise
        return current, started

    async def aclose(self) -> None:
        """Stop this loop's server, if one runs, and wait for its process to end."""
        current = self._by_loop.get(asyncio.get_running_loop())
        if current is not None:
            await current.stopped()


_POOLS: dict[tuple[object, ...], ServerPool] = {}
"""The pools of this process, by what defines a server's process and its settings (`shared_pool`)."""


def shared_pool(
    key: tuple[object, ...],
    server: str,
    make_toolset: Callable[[], Any],
    *,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
) -> ServerPool:
    """The process-wide `ServerPool` of the server `key` names (its listing key, which hashes its command line,
    folder and environment, and its stderr file), made on first use: capabilities built from the same file (one per
    request, say) share the running processes instead of each starting its own, and a pool outlives the capability
    that made it, so its servers are still stopped when idle, at their loop's end or at exit."""
    full = (*key, start_timeout, idle_timeout)
    pool = _POOLS.get(full)
    if pool is None:
        pool = _POOLS[full] = ServerPool(server, make_toolset, start_timeout=start_timeout, idle_timeout=idle_timeout)
    return pool


_LIVE: weakref.WeakSet[LoopServer] = weakref.WeakSet()
"""Servers started and not stopped, in every loop of the process (what exit must stop)."""

_HOOKS = [False]


def _install_exit_hooks() -> None:
    """At the first start: stop every server at interpreter exit, and let a SIGTERM with the default disposition
    exit through `SystemExit` (so that clean-up runs) instead of killing the interpreter outright."""
    if _HOOKS[0]:
        return
    _HOOKS[0] = True
    atexit.register(stop_all_at_exit)
    if threading.current_thread() is threading.main_thread() and hasattr(signal, 'SIGTERM'):
        try:
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _exit_on_sigterm)
        except (ValueError, OSError):  # pragma: no cover - not the main interpreter
            pass


def _exit_on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM kills at once
    raise SystemExit(128 + signum)


def stop_all_at_exit(timeout: float = 5.0) -> None:
    """Stop every server still up, each on its own loop: a loop not running is run until its servers stopped, a loop
    running in another thread is asked to stop them (waiting at most `timeout` seconds); a closed loop stopped its
    servers when it cancelled their keepers."""
    by_loop: dict[asyncio.AbstractEventLoop, list[LoopServer]] = {}
    for server in list(_LIVE):
        if server.state in ('starting', 'up'):
            by_loop.setdefault(server.loop, []).append(server)
    for loop, servers in by_loop.items():
        if loop.is_closed():
            continue

        async def stop_these(servers: list[LoopServer] = servers) -> None:
            await asyncio.gather(*(s.stopped() for s in servers), return_exceptions=True)

        try:
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(stop_these(), loop).result(timeout)
            else:
                loop.run_until_complete(asyncio.wait_for(stop_these(), timeout))
        except Exception:  # exit goes on: the servers see their stdin close when this process ends
            logger.debug('stopping MCP servers at exit failed', exc_info=True)
