"""`MCPServerToolset`: one server of an `mcpServers` file as a group's source, started, lazily or not, without
ever failing a run (see `mcp_servers.config` for the whole story).

A server that does not start is caught when a run enters it: that run goes on without its group, with one warning
quoting its stderr. With a listing store, a lazy server whose cached listing is fresh is not started until a call
needs it, and an eager one is started in the background while the run serves that listing (a call waits for the
start); every live start stores what the server listed, and the live listing wins over the cached one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Self

import anyio
import anyio.to_thread
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._same import same_value
from ..grouping.members import bad_member_name, unsupported_member
from ..grouping.names import group_id
from ..mcp_listing_cache import DEFAULT_MAX_AGE, ListingStore, ServerListing
from .listing_io import STORE_TIMEOUT, SharedListing, load_entries
from .live_listing import bind_description, remember
from .pool import LoopServer, ServerPool, StartFailed
from .process import first_listing_with_ttl, start_offset, stderr_tail, tools_from_listing

logger = logging.getLogger('pydantic_ai_toolproxy')


@dataclass
class MCPServerToolset(WrapperToolset[AgentDepsT]):
    """One server of an `mcpServers` file: its `MCPToolset`, tolerant of a server that does not start, started
    concurrently with the file's other servers, or lazily from a cached listing.

    `for_run` gives each run its own copy (sharing the one `MCPToolset`, so one connection serves concurrent runs),
    which remembers whether its own start (the connection and the first tool listing) failed; a failed copy lists
    no tools and no instructions, and its exit leaves the `MCPToolset` alone. A later listing that fails marks the
    copy failed too (its exit still closes what its entry opened).

    Lazy (`lazy=True` with a `listing_store`): a run entry that finds a fresh entry for `cache_key` starts
    nothing; the copy lists the cached tools (built by Pydantic AI's own `MCPToolset.get_tools`, so the definitions
    equal a live listing's) until a call needs the server: `call_tool` then starts it inside the run (stopped when
    the run ends), and from then on the live listing wins (stored, listed, and the call checked against it). Every
    live start stores what the server listed.

    Attributes:
        server: The server's name in the file.
        start_error: The exception that kept the server from starting at this copy's last entry, or that a later
            tool listing raised (None: it started and lists, or was not entered yet).
    """

    server: str = ''
    group: str = ''
    """The server's group id (`grouping.names.group_ids`: distinct within its file); '' means `group_id(server)`."""
    stderr_path: Path | None = None
    """The file the server's stderr goes to (`prepare_transport`), None when it is no stdio process."""
    private_log: bool = True
    """Whether `stderr_path` is in the process's private folder (emptied before each fresh start)."""
    lazy: bool = False
    """Start the server only when a call needs it, while the listing cache holds a fresh entry."""
    describe: bool = False
    """Whether the group's description comes from what the server says (the host gave none): `shared.description`."""
    listing_store: ListingStore | None = None
    cache_key: str = ''
    max_age: float = DEFAULT_MAX_AGE
    shared: SharedListing = field(default_factory=SharedListing, repr=False, compare=False)
    pool: ServerPool | None = field(default=None, repr=False, compare=False)
    """The server's processes kept across runs (`mcp_servers.pool`), one per event loop; None for a server that is no stdio
    process (entered by each run, as Pydantic AI enters it)."""
    start_error: Exception | None = field(default=None, init=False, repr=False, compare=False)
    start_failure: str = field(default='', init=False, repr=False, compare=False)
    """`start_error` as reported: `MCP server 'x' did not start (...)`, with the server's last stderr lines."""
    listed: int = field(default=0, init=False, repr=False, compare=False)
    """How many tools the server listed at its last start, or the cached entry holds."""
    from_cache: bool = field(default=False, init=False, repr=False, compare=False)
    """Whether this copy serves the cached listing (nothing started yet)."""
    cache_state: Literal['fresh', 'stale', 'missing'] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """What a lazy start found in the listing cache at this copy's last start (None: not lazy, or `refresh`)."""
    _entered: int = field(default=0, init=False, repr=False, compare=False)
    """Entries of this copy that started the server and are not exited yet (entries nest, exits come in reverse)."""
    _prestarted: bool = field(default=False, init=False, repr=False, compare=False)
    """Started by the surface (`prestart`), concurrently with the other servers: the next entry is that start."""
    _call_lock: anyio.Lock | None = field(default=None, init=False, repr=False, compare=False)
    _leases: list[LoopServer] = field(default_factory=list, init=False, repr=False, compare=False)
    """The pooled servers this copy leased (released at its exit)."""
    _starting: LoopServer | None = field(default=None, init=False, repr=False, compare=False)
    """An eager copy serving its fresh cached listing while the pool starts the server (`start(background=True)`):
    that start, or None."""

    @property
    def id(self) -> str | None:
        return self.wrapped.id

    @property
    def group_name(self) -> str:
        """The server's group id: `group`, else `group_id(server)`."""
        return self.group or group_id(self.server)

    @property
    def label(self) -> str:
        return f'MCP server {self.server!r} ({self.wrapped.label})'

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        return replace(self, wrapped=await self.wrapped.for_run(ctx))

    @property
    def prestarted(self) -> bool:
        """Whether `prestart` ran and no entry has taken that start over yet."""
        return self._prestarted

    async def prestart(self) -> None:
        """Start now (`start`) on behalf of the next `__aenter__`: the surface starts all its servers at once."""
        await self.start(background=True)
        self._prestarted = True

    async def __aenter__(self) -> Self:
        if self._prestarted:
            self._prestarted = False
            return self
        await self.start(background=True)
        return self

    async def start(self, *, warn: bool = True, refresh: bool = False, background: bool = False) -> bool:
        """Make the server usable for this copy: serve a fresh cached listing (lazy, unless `refresh`), else enter
        the server (start it unless a run holds it already) and list its tools once (`first_listing`), storing the
        listing.

        `background` (a run's entry): an eager pooled server with a fresh cached listing and no process up on this
        loop is started by the pool without waiting for it, and the copy serves the cached listing meanwhile, as a
        lazy copy does (a call waits for the start; `eager_from_cache`).

        Returns False when that failed: nothing stays entered, `start_error` holds the exception and
        `start_failure` the text (with the server's last stderr lines), logged as a warning when `warn`.
        Cancellation propagates (the entry undone first).
        """
        self.from_cache = False
        self.cache_state = None
        self._starting = None
        if background and not self.lazy and not refresh and self.pool is not None and await self.eager_from_cache():
            return True
        if self.lazy and not refresh:
            entry = self.cached_entry()
            self.cache_state = 'missing' if entry is None else 'stale'
            if entry is not None and entry.fresh(self.max_age):
                self._serve_cached(entry)
                return True
        return await self._start_live(warn, 'this run')

    def _serve_cached(self, entry: ServerListing) -> None:
        """Serve `entry`, a fresh cached listing (`ServerListing`), for this run instead of a live one."""
        self.cache_state = 'fresh'
        self.from_cache = True
        self.start_error = None
        self.start_failure = ''
        self.listed = len(entry.tools)

    async def eager_from_cache(self) -> bool:
        """Serve the fresh cached listing while the pool starts the server in the background (`ServerPool.start_soon`),
        when the cache holds a fresh entry and no process is up on this loop (one that is up is leased instead, by
        the caller). The start stores what the server lists when it is up (`LoopServer.when_up`), whether or not
        the run is still there. Whether the copy serves the cache."""
        pool = self.pool
        assert pool is not None
        current = pool.current()
        if current is not None and current.state == 'up' and current.alive():
            return False  # up already: leased at once, its live listing served
        entry = self.cached_entry()
        if entry is None or not entry.fresh(self.max_age):
            return False  # no listing to serve: the run waits for the start, as without a cache
        starting = await pool.start_soon()
        if starting is not None and starting.state == 'starting':
            starting.when_up(lambda up: remember(self, up.tools, up.ttl_ms, up.toolset))
        self._starting = starting
        self._serve_cached(entry)
        return True

    def _warn_failed_start(self) -> None:
        """An eager copy serving its cached listing: one warning when the pool's start of its server failed (the
        group stays; a call gets `ToolFailed`; the pool retries in the background)."""
        pool = self.pool
        if pool is None or not pool.failures or pool.warned >= pool.failures:
            return
        current = pool.current()
        if current is None or current.state != 'failed' or pool.error is None:
            return
        pool.warned = pool.failures
        retry = pool.retry_in()
        logger.warning(
            '%s; group %r stays (its cached listing) and its calls fail until the server starts; %s',
            self.failure(pool.error, 'did not start'),
            self.group_name,
            f'it is tried again in the background in {retry:.0f} s'
            if retry
            else 'it is being tried again in the background',
        )

    def _live(self) -> bool:
        """Whether this copy holds the live server (a lease of the pool, or an entry of its own)."""
        return bool(self._leases) or self._entered > 0

    async def _start_live(self, warn: bool, left_out_of: str, *, call: bool = False) -> bool:
        """Lease the server from the pool (started when none runs on this loop), or enter it (not pooled), and keep
        its first listing. False when it is not available; a failed call-time start (`call`) keeps the copy's
        cached listing (the group stays, the next call may try again)."""
        if self.pool is None:
            entered = await self._enter_live(warn, left_out_of)
            if not entered and call:
                self.start_error = None  # the cached listing stays: the next call tries again
            return entered
        offset = self._log_offset()
        try:
            leased, started = await self.pool.acquire()
        except StartFailed as exc:
            self._unavailable(exc, left_out_of, offset, warn, call)
            return False
        self._leases.append(leased)
        self.wrapped = leased.toolset
        self.listed = len(leased.tools)
        self.start_error = None
        self.start_failure = ''
        if started:
            remember(self, leased.tools, leased.ttl_ms, self.wrapped)
        return True

    def _unavailable(self, exc: StartFailed, left_out_of: str, offset: int, warn: bool, call: bool) -> None:
        """Report a pooled server that did not start (now or earlier): one warning per failed start, saying when
        it is tried again."""
        pool = exc.pool
        retry = (
            f'it is tried again in the background in {exc.retry_in:.0f} s'
            if exc.retry_in
            else 'it is being tried again in the background'
        )
        text = self.failure(exc.error, 'did not start', offset if exc.fresh else 0)  # else: its file's last lines
        if not exc.fresh:
            text = f'{text} ({time.monotonic() - pool.failed_at:.0f} s ago)'
        self.start_failure = text
        if not call:
            self.start_error = exc.error if isinstance(exc.error, Exception) else exc
        if warn and pool.warned < pool.failures:
            pool.warned = pool.failures
            if call:  # a lazy or background-started server found at a call: its group stays, its calls fail
                logger.warning('%s; calls of group %r fail until it starts; %s', text, self.group_name, retry)
            else:
                logger.warning('%s; group %r is left out of %s; %s', text, self.group_name, left_out_of, retry)

    async def _enter_live(self, warn: bool, left_out_of: str) -> bool:
        offset = self._log_offset()
        try:
            await self.wrapped.__aenter__()
        except Exception as exc:  # the server's own failure: this run goes on without its group
            self._failed(exc, 'did not start', left_out_of, offset, warn)
            return False
        try:
            tools, ttl_ms = await first_listing_with_ttl(self.wrapped)
        except BaseException as exc:
            # Undo the entry (the server stops unless another run uses it), also when the run is being cancelled.
            with anyio.CancelScope(shield=True):
                await self.wrapped.__aexit__(None, None, None)
            if not isinstance(exc, Exception):
                raise
            self._failed(exc, 'did not start', left_out_of, offset, warn)
            return False
        self.listed = len(tools)
        self.start_error = None
        self.start_failure = ''
        self._entered += 1
        remember(self, tools, ttl_ms, self.wrapped)
        return True

    def cached_entry(self) -> ServerListing | None:
        """The listing cache's entry for this server, or None: the one `load_entries` read (at construction, for
        all servers of the file at once), else read now within `STORE_TIMEOUT` seconds (once per process; a
        store past it, failing, or holding an entry the MCP SDK rejects counts as holding none). Call
        `load_entry` from a running event loop."""
        if not self.shared.loaded:
            load_entries([self])
        return self.shared.entry

    async def load_entry(self) -> ServerListing | None:
        """`cached_entry` off the event loop: a read not done yet runs in a worker thread (the loop never waits
        for the store)."""
        if not self.shared.loaded:
            await anyio.to_thread.run_sync(load_entries, [self], abandon_on_cancel=True)
        return self.shared.entry

    def bind_description(self, listener: Callable[[str], bool]) -> None:
        """Tell `listener` the group description from what the server says, now or at its first live start
        (`live_listing.bind_description`). Does nothing unless `describe`."""
        bind_description(self, listener)

    def wait_stored(self, timeout: float = STORE_TIMEOUT) -> bool:
        """Wait up to `timeout` seconds for the last live listing's write to the store; whether the store holds it
        (written now, or unchanged since the store gave it; False: no store, no live listing, a store failure, or
        not done in time). Blocks: call it in a worker thread from an event loop."""
        write = self.shared.write
        if write is not None:
            write.join(timeout)
        return self.shared.written is True

    def _log_offset(self) -> int:
        """Where this start's stderr begins in `stderr_path` (`start_offset`: its private file emptied first when
        no run holds the server; a failed pooled server's file keeps its stderr for the warning)."""
        if self.pool is not None:
            current = self.pool.current()
            running = current is not None and current.state in ('starting', 'up', 'failed')
        else:
            running = getattr(self.wrapped, 'is_running', True)
        return start_offset(self.stderr_path, self.private_log, running)

    def failure(self, exc: BaseException, what: str, offset: int = 0) -> str:
        """`MCP server 'x' <what> (<error>)`, with the last lines of the server's stderr since `offset` when it
        wrote any (bounded: `stderr_tail`)."""
        text = f'MCP server {self.server!r} {what} ({type(exc).__name__}: {exc})'
        tail = stderr_tail(self.stderr_path, offset)
        return f'{text}; its stderr ended: {tail}' if tail else text

    def _failed(self, exc: Exception, what: str, left_out_of: str, offset: int = 0, warn: bool = True) -> None:
        self.start_error = exc
        self.start_failure = self.failure(exc, what, offset)
        if warn:
            logger.warning('%s; group %r is left out of %s', self.start_failure, self.group_name, left_out_of)

    async def __aexit__(self, *args: Any) -> bool | None:
        self.from_cache = False
        self._starting = None
        leases, self._leases = self._leases, []
        for leased in leases:  # the server stays up for later runs (until idle, its loop's end or exit)
            leased.release()
        if self._entered == 0:  # this entry started nothing (a failure, or a cached listing never called)
            return None
        self._entered, entered = 0, self._entered
        for _ in range(entered):  # a lazy start inside the run is closed with the run's exit
            await self.wrapped.__aexit__(*args)
        return None

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        if self.start_error is not None:
            return {}
        if self.from_cache and not self._live():
            entry = self.shared.entry
            if entry is None:  # pragma: no cover - from_cache is set only with an entry
                return {}
            if not self.lazy:  # an eager copy serving the cache while its server starts: say if that start failed
                self._warn_failed_start()
            return self.usable(await tools_from_listing(self.wrapped, entry, ctx))
        try:
            tools = await self.wrapped.get_tools(ctx)
        except Exception as exc:  # a listing after a change: the rest of the run goes on without the group
            self._failed(exc, 'failed to list its tools', 'the rest of this run')
            return {}
        return self.usable(tools)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Call the server's tool `name`; a copy serving the cached listing starts the server first (once per run).

        Raises:
            ToolFailed: the server did not start (the host gets one warning with its stderr): a failure the model
                reads, not a retry, so calling it again spends none of the tool's retries (at most 2,000 characters).
            ModelRetry: (at most 2,000 characters) it no longer has the tool, or the tool's schema changed since it
                was listed: the model is told to search the group again.
        """
        if self.from_cache and not self._live():
            if self._call_lock is None:
                self._call_lock = anyio.Lock()
            async with self._call_lock:
                if not self._live() and not await self._start_live(True, 'this call', call=True):
                    raise ToolFailed(
                        f'The MCP server of group {self.group_name!r} could not be started, so {name!r} did '
                        'not run. Use a tool of another group, or tell the user that this server is unavailable.'
                    )
            live = self.usable(await self.wrapped.get_tools(ctx))
            current = live.get(name)
            if current is None:
                raise ModelRetry(
                    f'Group {self.group_name!r} no longer has the tool {name!r}: its MCP server changed since '
                    'the tool was listed, and it did not run. Search the group again for its current tools.'
                )
            if not _same_definition(current.tool_def, tool.tool_def):
                raise ModelRetry(
                    f'The tool {name!r} of group {self.group_name!r} changed since it was listed (its MCP server '
                    'was updated), and it did not run. Search the group again for its current schema, then call it.'
                )
            tool = current
        return await self.wrapped.call_tool(name, tool_args, ctx, tool)

    def usable(self, tools: dict[str, ToolsetTool[AgentDepsT]]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """`tools` without those that cannot be proxy members (a name such as `""`, an unsupported kind), each
        warned about once per server; the same dict when all are usable."""
        bad: dict[str, str] = {}
        for name, tool in tools.items():
            shown = bad_member_name(name)
            if shown is not None:
                bad[name] = f'its name {shown} cannot be called through the proxy'
            elif (unsupported := unsupported_member(tool.tool_def)) is not None:
                bad[name] = unsupported.text
        if not bad:
            return tools
        for name, why in bad.items():
            if name not in self.shared.left_out:
                self.shared.left_out.add(name)
                logger.warning(
                    'MCP server %r listed a tool %r that is left out of group %r: %s',
                    self.server,
                    name,
                    self.group_name,
                    why,
                )
        return {name: tool for name, tool in tools.items() if name not in bad}

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> Any:
        if self.start_error is not None or (self.from_cache and not self._live()):
            return None
        return await self.wrapped.get_instructions(ctx)


def _same_definition(live: ToolDefinition, cached: ToolDefinition) -> bool:
    """Whether a live tool's definition is the one the model was shown from the cache (what a call is checked
    against)."""
    return (
        live.description == cached.description
        and same_value(live.parameters_json_schema, cached.parameters_json_schema)
        and same_value(live.return_schema, cached.return_schema)
    )
