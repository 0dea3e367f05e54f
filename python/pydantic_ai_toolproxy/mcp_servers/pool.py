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
  server is stopped as the MCP SDK stops one: stdin closed, then its process tree terminated after 2 s. A loop that
  no longer runs cannot stop its servers: a watcher thread (`lifetime.watch`) stops them by PID (SIGTERM to the server's
  process group, SIGKILL after `TERMINATE_GRACE`, reaped), at once when their loop was closed, else once unused
  for `idle_timeout` (a thread that ended after `run_sync`, a `run_sync` loop that `asyncio.run` replaced).
- **Started within bounds.** At most `start_slots()` servers start at once on one loop, and each server's
  `start_timeout` counts from the moment its start may begin (its slot), so on a loaded machine a server waits
  for a slot instead of losing its time to the others. The start includes the first `tools/list`, whose answer
  also fills the `MCPToolset`'s tools cache (one listing per start). `start_soon` starts without waiting (an eager
  run that serves the server's fresh cached listing meanwhile).
- **A failure costs the run that found it.** A server that did not start is not started again by the runs that
  follow: the pool retries it in the background after a back-off (`RETRY_AFTER`, doubling up to
  `RETRY_AFTER_MAX`), and those runs leave its group out at once, with one warning per failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Callable
from typing import Any, Literal

import anyio

from .lifetime import LIVE, install_exit_hooks, watch

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

LATE_RETRY = 1.0
"""Seconds late a background retry may fire and still be one runs do not wait for (`LoopServer._retry_now`)."""

RETRY_AFTER_MAX = 600.0
"""The longest back-off: each further failure doubles the wait up to this many seconds."""


def start_slots() -> int:
    """How many servers start at once on one event loop: twice the CPUs this process may use, at least 2 (a start is
    mostly one process's CPU; more at once only makes each slower, and each against its own deadline)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)
    return max(2, 2 * cpus)


_SLOTS: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}
"""Each running loop's start slots, by the loop's id (pruned of closed loops: a semaphore keeps its loop)."""


def _slots(loop: asyncio.AbstractEventLoop) -> asyncio.Semaphore:
    found = _SLOTS.get(id(loop))
    if found is None or found[0] is not loop:
        for key, (other, _) in list(_SLOTS.items()):
            if other.is_closed():
                del _SLOTS[key]
        found = _SLOTS[id(loop)] = (loop, asyncio.Semaphore(start_slots()))
    return found[1]


class StartFailed(Exception):
    """A server that is not available to this run: its start failed now (`fresh`), or failed earlier and the pool
    retries it later (`fresh` False; `retry_in` seconds left of the back-off, 0 while a retry is under way).

    Attributes:
        error: The exception the (last) start raised.
        fresh: Whether this run's own start attempt failed (False: an earlier one, remembered).
        retry_in: Seconds until the next try (0 when one is under way).
        pool: The server's pool (its `failures`, `failed_at` and `warned` say which failure this is).
    """

    def __init__(self, error: BaseException, *, fresh: bool, retry_in: float, pool: ServerPool) -> None:
        super().__init__(str(error))
        self.error = error
        self.fresh = fresh
        self.retry_in = retry_in
        self.pool = pool


class StartTimeout(TimeoutError):
    """A server gave no complete start (spawn, `initialize`, first `tools/list`) within its start timeout."""


class LoopServer:
    """One server process on one event loop: a keeper task holds its `MCPToolset` entered until told to stop.

    Attributes:
        toolset: The `MCPToolset` this loop's process is reached through.
        state: `starting`, `up`, `failed` or `stopped`.
        background: Whether the start under way is the pool's background retry (runs do not wait for it).
        tools: What the first `tools/list` of the start returned (MCP `Tool` objects), and `ttl_ms` its hint.
        users: Leases held (runs using it now).
    """

    def __init__(self, pool: ServerPool, loop: asyncio.AbstractEventLoop, toolset: Any) -> None:
        self.pool = pool
        self.loop = loop
        self.toolset = toolset
        self.state: Literal['starting', 'up', 'failed', 'stopped'] = 'stopped'
        self.background = False
        self.tools: list[Any] = []
        self.ttl_ms: int | None = None
        self.users = 0
        self.started_at = 0.0
        self.pid: int | None = None
        """The server's process id once up (`mcp_servers.process.server_pid`; None when it could not be read)."""
        self.idle_since = 0.0
        """When (monotonic seconds) the last lease ended, or the server came up with none."""
        self.killed = False
        """Stopped by the watcher, by PID, because its loop no longer runs (`lifetime.watch`): it is not alive."""
        self.begun_at = 0.0
        """When (monotonic seconds) the start under way began (`begin`)."""
        self.retry_due = 0.0
        """When (monotonic seconds) the scheduled background retry is due."""
        self._ready: asyncio.Future[None] = loop.create_future()
        self._stop = asyncio.Event()
        self._idle: asyncio.TimerHandle | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._on_up: list[Callable[[LoopServer], None]] = []

    def when_up(self, callback: Callable[[LoopServer], None]) -> None:
        """Call `callback(self)` once the start under way has listed the server's tools (dropped, uncalled, when
        it fails or is stopped): a run that did not wait for the start stores its listing this way."""
        self._on_up.append(callback)

    def begin(self, *, background: bool = False) -> None:
        """Start the keeper task (in a context of its own: the server outlives the run that started it, so it must
        not hold that run's context variables). A `background` start (the pool's retry) takes no start slot."""
        self.cancel_retry()
        if self.toolset is None:  # a keeper that ended let go of its toolset (and what its client still held)
            self.toolset = self.pool.make_toolset()
        self.state = 'starting'
        self.background = background
        self.killed = False
        self.begun_at = time.monotonic()
        self._ready = self.loop.create_future()
        self._stop = asyncio.Event()
        self._task = self.loop.create_task(self._keep(), context=contextvars.Context())
        # A keeper waits until its server stops: one still pending when its loop is closed by hand is expected
        # (the watcher stops its process by PID), not worth asyncio's "Task was destroyed but it is pending!".
        self._task._log_destroy_pending = False  # type: ignore[attr-defined]
        LIVE.add(self)
        install_exit_hooks()
        watch()

    async def wait_ready(self) -> None:
        """Wait for the start under way (its own timeout bounds it). Raises the start's exception when it failed."""
        await asyncio.shield(self._ready)

    async def _keep(self) -> None:
        from .process import first_listing_with_ttl, server_pid

        toolset = self.toolset
        entered = False
        try:
            async with contextlib.nullcontext() if self.background else _slots(self.loop):
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
                        'start_timeout (from_mcp_config, or --start-timeout of the CLI) or the entry\'s "startup_timeout_sec"'
                    ) from exc
        except BaseException as exc:
            if entered and self._on_own_loop():  # torn down first: a loop's end must not cancel a teardown under way
                with anyio.CancelScope(shield=True):
                    await _exit_quietly(toolset)
            self.toolset = None  # the pool outlives the runs: keep nothing of theirs (a client's last error, say)
            self._failed(exc)
            if not isinstance(exc, Exception):
                raise
            return
        self.tools, self.ttl_ms = tools, ttl
        self.pid = server_pid(toolset)
        self.idle_since = time.monotonic()
        self.killed = False
        self.state = 'up'
        self.pool.failures = self.pool.warned = 0
        if not self._ready.done():
            self._ready.set_result(None)
        callbacks, self._on_up = self._on_up, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # a listener's failure (a store's, say) is its own: the server stays up
                logger.debug('an MCP start listener failed', exc_info=True)
        if self.users == 0:
            self._arm_idle()
        try:
            await self._stop.wait()
        finally:
            self.state = 'stopped'
            LIVE.discard(self)
            if self._on_own_loop():  # else its loop was closed under it (not by asyncio.run): nothing can await here,
                with anyio.CancelScope(shield=True):  # and the server sees its stdin close when this process ends
                    await _exit_quietly(toolset)
            self.toolset = None

    def _on_own_loop(self) -> bool:
        """Whether this code runs in a task of the server's own loop. A keeper whose loop was closed under it is
        finalized later by the garbage collector, possibly while another loop runs: awaiting there would corrupt
        that loop's running task (its cancel scopes), so such a keeper awaits nothing."""
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def _failed(self, exc: BaseException) -> None:
        LIVE.discard(self)
        self._on_up = []
        if not isinstance(exc, Exception) or self.killed:  # cancelled (its loop ends, or a stop), or stopped by
            # the watcher while its loop did not run: no failure of the server's
            self.state = 'stopped'
            if not self._ready.done():
                self._ready.set_exception(RuntimeError('the start was cancelled'))
                self._ready.exception()
            return
        self.state = 'failed'
        self.pool.failed(exc)
        if not self._ready.done():
            self._ready.set_exception(exc)
            self._ready.exception()  # retrieved: a start nobody waits for does not log "never retrieved"
        if not self.loop.is_closed():
            delay = self.pool.backoff()
            self.retry_due = time.monotonic() + delay
            self._retry = self.loop.call_later(delay, self._retry_now, context=contextvars.Context())

    def cancel_retry(self) -> None:
        """Cancel a scheduled background retry (a run starts it now, or it is stopped)."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None

    def _retry_now(self) -> None:
        self._retry = None
        if self.state == 'failed' and not self.loop.is_closed():
            # A retry that fires late (its loop did not run when it was due: `run_sync` between runs) fires as the
            # next run begins; that run waits for it as for its own start, instead of going without the server.
            self.begin(background=time.monotonic() - self.retry_due < LATE_RETRY)

    def lease(self) -> None:
        """One more run uses the server: no idle stop while any does."""
        self.users += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def release(self) -> None:
        """A run that leased the server is done with it; the last one arms the idle stop."""
        self.users = max(0, self.users - 1)
        if self.users == 0:
            self.idle_since = time.monotonic()
        if self.users == 0 and self.state == 'up':
            self._arm_idle()

    def _arm_idle(self) -> None:
        idle = self.pool.idle_timeout
        if idle is not None and not self.loop.is_closed():
            if self._idle is not None:
                self._idle.cancel()
            self._idle = self.loop.call_later(idle, self._idle_stop, context=contextvars.Context())  # not the run's

    def _idle_stop(self) -> None:
        self._idle = None
        if self.users == 0 and self.state == 'up':
            self.stop()

    def alive(self) -> bool:
        """Whether the process still serves: up, and its MCP session open (a server that exited is not: the
        transport's connection task ended, or its session's reader closed)."""
        if self.state != 'up' or self.killed:
            return False
        transport = getattr(getattr(self.toolset, 'client', None), 'transport', None)
        task = getattr(transport, '_connect_task', None)
        if isinstance(task, asyncio.Future) and task.done():
            return False
        dead = getattr(transport, '_is_session_dead', None)
        try:
            return not (callable(dead) and dead())
        except Exception:  # another FastMCP's internals: trust the session
            return True

    def stop(self) -> None:
        """Tell the keeper to stop the server (from the loop's thread); a start under way is cancelled, a scheduled
        retry dropped."""
        self.cancel_retry()
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self.state == 'starting' and self._task is not None:
            self._task.cancel()
        self._stop.set()

    async def stopped(self) -> None:
        """Stop the server and wait until its process is gone (`stop`, then the keeper's end)."""
        self.stop()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task})
        if self.state == 'failed':
            self.state = 'stopped'


async def _exit_quietly(toolset: Any) -> None:
    try:
        await toolset.__aexit__(None, None, None)
    except Exception:  # a server that died already: nothing left to close
        logger.debug('closing an MCP server failed', exc_info=True)


class ServerPool:
    """The processes of one stdio server of an `mcpServers` file: one `LoopServer` per event loop, and what its
    last failed start (on any loop) was.

    Args:
        server: The server's name in the file (for messages).
        make_toolset: Builds a fresh `MCPToolset` for the server (its own transport and client), one per event loop.
        start_timeout: Seconds a start may take from its slot (`DEFAULT_START_TIMEOUT`).
        idle_timeout: Seconds an unused server stays up, or None to keep it until its loop ends or the process exits.

    Attributes:
        failures: Failed starts in a row (0 after a start that worked); `failed_at` (monotonic seconds) and `error`
            the last one; `warned`: how many failures a warning reported.
        starts: Processes started by this pool (all loops).
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
        self._by_loop: dict[int, LoopServer] = {}
        self.starts = 0
        self.failures = 0
        self.failed_at = 0.0
        self.error: BaseException | None = None
        self.warned = 0

    def failed(self, exc: BaseException) -> None:
        """Record a failed start (any loop): the runs after it do not start the server until the back-off passed."""
        self.failures += 1
        self.failed_at = time.monotonic()
        self.error = exc

    def backoff(self) -> float:
        """Seconds after the last failure before the server is tried again: `RETRY_AFTER`, doubled per further
        failure up to `RETRY_AFTER_MAX`."""
        return float(min(RETRY_AFTER_MAX, RETRY_AFTER * 2.0 ** min(max(self.failures, 1) - 1, 16)))

    def retry_in(self) -> float:
        """Seconds left of the back-off after the last failure (0: none, or over)."""
        return max(0.0, self.failed_at + self.backoff() - time.monotonic()) if self.failures else 0.0

    def current(self) -> LoopServer | None:
        """This loop's server, whatever its state (None when none was started on it)."""
        loop = asyncio.get_running_loop()
        found = self._by_loop.get(id(loop))
        return found if found is not None and found.loop is loop else None

    def _prune(self) -> None:
        """Forget the servers of closed loops (their loops are gone; keeping them would keep the loops)."""
        for key, server in list(self._by_loop.items()):
            if server.loop.is_closed():
                server.cancel_retry()
                del self._by_loop[key]

    async def acquire(self) -> tuple[LoopServer, bool]:
        """Lease this loop's server, starting it when none runs (waiting for a start a run began).

        Returns the server and whether this call started it.

        Raises:
            StartFailed: the start failed (`fresh`); or an earlier one did and the back-off is not over, or the
                pool's background retry is under way (this call starts nothing and returns at once).
        """
        loop = asyncio.get_running_loop()
        self._prune()
        current = self.current()
        started = False
        if current is not None and current.state == 'up' and not current.alive():
            await current.stopped()  # the process went away: a new one
        if current is not None and current.state == 'starting' and current.background:
            raise StartFailed(self.error or RuntimeError('retrying'), fresh=False, retry_in=0.0, pool=self)
        if current is None or current.state in ('failed', 'stopped'):
            if self.failures and self.retry_in() > 0:
                raise StartFailed(
                    self.error or RuntimeError('failed'), fresh=False, retry_in=self.retry_in(), pool=self
                )
            if current is None or current.state == 'stopped':
                current = LoopServer(self, loop, self.make_toolset())
                self._by_loop[id(loop)] = current
            current.begin()
            self.starts += 1
            started = True
        current.lease()
        try:
            await current.wait_ready()
        except BaseException as exc:
            current.release()
            if isinstance(exc, Exception):
                raise StartFailed(exc, fresh=started, retry_in=self.retry_in(), pool=self) from exc
            raise
        return current, started

    async def start_soon(self) -> LoopServer | None:
        """Start this loop's server without waiting for it and without a lease (an eager run that serves the
        server's fresh cached listing meanwhile): a start under way or a server up is left as it is; a server whose
        process went away is started again. A call then waits for the start through `acquire`.

        Returns this loop's server (starting, or up), or None when an earlier failure's back-off is not over (the
        pool retries it in the background; `acquire` raises `StartFailed` until then).
        """
        loop = asyncio.get_running_loop()
        self._prune()
        current = self.current()
        if current is not None and current.state == 'up' and not current.alive():
            await current.stopped()
        if current is not None and current.state in ('starting', 'up'):
            return current
        if self.failures and self.retry_in() > 0:
            return None
        if current is None or current.state == 'stopped':
            current = LoopServer(self, loop, self.make_toolset())
            self._by_loop[id(loop)] = current
        current.begin()
        self.starts += 1
        return current

    async def aclose(self) -> None:
        """Stop this loop's server, if one runs or starts, and wait for its process to end; forget past failures (a
        later run starts it again at once)."""
        current = self.current()
        if current is not None:
            await current.stopped()
        self.failures = 0


_POOLS: dict[tuple[object, ...], ServerPool] = {}
"""The pools of this process, by what defines a server's process (`shared_pool`)."""


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
    that made it, so its servers are still stopped when idle, at their loop's end or at exit. The newest
    capability's `start_timeout` and `idle_timeout` apply to the shared processes."""
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ServerPool(server, make_toolset, start_timeout=start_timeout, idle_timeout=idle_timeout)
    else:
        pool.start_timeout, pool.idle_timeout = start_timeout, idle_timeout
    install_exit_hooks()  # at construction, usually on the main thread (a SIGTERM handler can only be set there)
    return pool
