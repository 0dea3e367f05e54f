"""Stopping a server process by PID, and the thread that does it for servers whose event loop no longer runs
(`mcp_servers.pool`: a loop that is closed, or that no thread runs any more, cannot run the server's own teardown).

- `terminate(pid)`: SIGTERM to the server's process group (the MCP SDK starts each stdio server in a session of its
  own, so the group is the server and what it started), SIGKILL after `TERMINATE_GRACE` seconds, and the process
  reaped when nobody else does (a zombie otherwise: Python 3.12+ reaps a child through its loop). asyncio's child
  watcher thread then logs `Loop ... that handles pid ... is closed` for a closed loop's server; that record is
  dropped for the pids stopped here (the stop is this package's, not a fault of the host's).
- `Watcher(sweep)`: a daemon thread calling `sweep()` every `WATCH_EVERY` seconds while it answers True, started
  again by `start()` after it ended.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable

__all__ = ('TERMINATE_GRACE', 'WATCH_EVERY', 'Watcher', 'terminate')

WATCH_EVERY = 1.0
"""Seconds between two looks of the watcher (`Watcher`)."""

TERMINATE_GRACE = 2.0
"""Seconds a server stopped by PID gets after SIGTERM before SIGKILL (as the MCP SDK gives one)."""


_stopped: set[int] = set()
"""Pids `terminate` stopped (asyncio's record about their closed loop is dropped: `_QuietClosedLoop`)."""
_CLOSED_LOOP = 'Loop %r that handles pid %r is closed'


class _QuietClosedLoop(logging.Filter):
    """Drops asyncio's `Loop ... that handles pid ... is closed` for the servers `terminate` stopped."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (record.msg == _CLOSED_LOOP and isinstance(args, tuple) and len(args) == 2 and args[1] in _stopped)


_quiet = _QuietClosedLoop()


class Watcher:
    """A daemon thread that calls `sweep()` every `WATCH_EVERY` seconds until it answers False (nothing left to
    watch); `start()` starts it unless it runs. `sweep` must not raise (an exception ends the thread)."""

    def __init__(self, sweep: Callable[[], bool]) -> None:
        self._sweep = sweep
        self._thread: threading.Thread | None = None
        self._again = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the thread unless it runs (never waits for a sweep under way: called from event loops)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._again = True  # a sweep that found nothing must not end the thread now
                return
            self._thread = threading.Thread(target=self._run, name='toolproxy-mcp-watcher', daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_EVERY)
            more = self._sweep()
            with self._lock:
                if not more and not self._again:
                    self._thread = None
                    return
                self._again = False


def terminate(pid: int, grace: float = TERMINATE_GRACE) -> None:
    """Stop the server process `pid` and what it started (its process group): SIGTERM, then SIGKILL after `grace`
    seconds, and reap it when its loop cannot. Returns once it is gone (at most about 2 x `grace` seconds)."""
    _stopped.add(pid)
    if _quiet not in logging.getLogger('asyncio').filters:
        logging.getLogger('asyncio').addFilter(_quiet)
    if os.name == 'nt':  # pragma: no cover - Windows: TerminateProcess at once, no process group, no zombie
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            _reap(pid, take=True)
            return
        began = time.monotonic()
        while time.monotonic() - began < wait:
            if _reap(pid, take=time.monotonic() - began > 0.5):
                return
            time.sleep(0.05)


def _reap(pid: int, take: bool) -> bool:
    """Whether the process `pid` is gone: reaped by its loop's child watcher (a thread that waits for it, on
    Python 3.11), or, with `take`, exited and reaped here."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # pragma: no cover - not ours any more
        return True
    if not take or not _zombie(pid):
        return False
    with contextlib.suppress(ChildProcessError):  # reaped by another waiter meanwhile
        os.waitpid(pid, os.WNOHANG)
    return True


def _zombie(pid: int) -> bool:
    """Whether `pid` exited and waits to be reaped (/proc on Linux; elsewhere a non-blocking wait tells)."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            return f.read().rsplit(b')', 1)[1].split()[0] == b'Z'
    except OSError:
        pass
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    except OSError:  # pragma: no cover - not a child
        return False
    return done == pid
