"""The lives of the pool's servers outside their event loops (`mcp_servers.pool`): the registry of every server
started and not stopped, the watcher's sweep that stops by PID the servers of loops that no longer run, and the
interpreter's exit and SIGTERM hooks that stop the rest.

- `LIVE`: the servers started and not stopped, in every loop of the process (what exit must stop); `live()` copies
  it while other threads' loops change it.
- `watch()`: start the watcher thread (`watch.Watcher`) whose `sweep()` stops, by PID (`watch.terminate`), the servers
  whose loop is closed, or not running and unused past the idle timeout (`orphaned`).
- `install_exit_hooks()`: at the first pool, stop every server at exit (`stop_all_at_exit`) and turn a SIGTERM left at
  Python's default into `SystemExit(143)` so that clean-up runs.

A server here is any object with the attributes `KeptServer` names (`pool.LoopServer`).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import signal
import threading
import time
import weakref
from typing import Any, Literal, Protocol

from .watch import Watcher, terminate

__all__ = ('LIVE', 'KeptServer', 'install_exit_hooks', 'live', 'orphaned', 'stop_all_at_exit', 'sweep', 'watch')

logger = logging.getLogger('pydantic_ai_toolproxy')


class _Settings(Protocol):
    idle_timeout: float | None


class KeptServer(Protocol):
    """What this module reads of a pool's server (`pool.LoopServer`)."""

    loop: asyncio.AbstractEventLoop
    state: Literal['starting', 'up', 'failed', 'stopped']
    killed: bool
    users: int
    pid: int | None
    toolset: Any
    idle_since: float
    begun_at: float

    @property
    def pool(self) -> _Settings: ...

    async def stopped(self) -> None: ...


def _server_pid(toolset: Any) -> int | None:
    from .process import server_pid

    return server_pid(toolset)


_watcher = Watcher(lambda: sweep())


def watch() -> None:
    """Start the process-wide watcher thread unless it runs (`watch.Watcher`). It stops, by PID, the servers
    whose event loop no longer runs, where their own timers cannot fire: a loop closed (by hand: `asyncio.run`
    cancels its keepers itself) at once, a loop not running (a thread that ended after `run_sync`, a `run_sync`
    loop that `asyncio.run` replaced) once no run used the server for `idle_timeout` seconds. It ends when no
    server is left to watch."""
    _watcher.start()


def sweep() -> bool:
    """One look of the watcher: stop the servers of loops that no longer run (`orphaned`); whether any server is
    left to watch."""
    servers = [server for server in live() if not server.killed]
    for server in servers:
        try:
            if orphaned(server):
                server.killed = True
                pid = server.pid if server.pid is not None else _server_pid(server.toolset)
                if pid is not None:
                    terminate(pid)
                if server.loop.is_closed():
                    LIVE.discard(server)  # nothing can run its teardown: forget it
        except Exception:  # one server's trouble is not the watcher's end
            logger.debug('stopping an MCP server of a stopped loop failed', exc_info=True)
    return any(not server.killed for server in live())


def orphaned(server: KeptServer) -> bool:
    """Whether `server` is up, or starting, on a loop that no longer runs it: closed, or not running and unused
    past its idle timeout (a running loop stops its idle servers itself). A start left under way when its loop
    stopped running (an eager run's background start as `run_sync` returned) counts as idle from its beginning."""
    if server.state not in ('up', 'starting') or server.killed or server.users:
        return False
    loop = server.loop
    if loop.is_closed():
        return True
    idle = server.pool.idle_timeout
    since = server.idle_since if server.state == 'up' else server.begun_at
    return idle is not None and not loop.is_running() and time.monotonic() - since >= idle


def live() -> list[KeptServer]:
    """A copy of `LIVE`, which other threads' loops change while it is copied (a copy that met a change is
    taken again)."""
    while True:
        try:
            return list(LIVE)
        except RuntimeError:  # "Set changed size during iteration"
            continue


LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
"""Servers started and not stopped, in every loop of the process (what exit must stop)."""

_HOOKS = [False]


def install_exit_hooks() -> None:
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


def stop_all_at_exit(timeout: float = 10.0) -> None:
    """Stop every server still up, each on its own loop: a loop not running is run until its servers stopped, a loop
    running in another thread is asked to stop them (waiting at most `timeout` seconds); a closed loop stopped its
    servers when it cancelled their keepers."""
    by_loop: dict[asyncio.AbstractEventLoop, list[KeptServer]] = {}
    for server in live():
        if server.state in ('starting', 'up'):
            by_loop.setdefault(server.loop, []).append(server)
    for loop, servers in by_loop.items():
        if loop.is_closed():
            continue

        async def stop_these(servers: list[KeptServer] = servers) -> None:
            await asyncio.gather(*(s.stopped() for s in servers), return_exceptions=True)

        try:
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(stop_these(), loop).result(timeout)
            else:
                loop.run_until_complete(asyncio.wait_for(stop_these(), timeout))
        except Exception:  # exit goes on: the servers see their stdin close when this process ends
            logger.debug('stopping MCP servers at exit failed', exc_info=True)
