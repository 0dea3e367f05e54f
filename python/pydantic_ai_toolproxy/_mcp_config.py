"""`ToolProxyCapability.from_mcp_config`: every server of an `mcpServers` JSON file as one group.

The file is read by Pydantic AI's own `pydantic_ai.mcp.load_mcp_toolsets` (the format Claude Desktop, Claude Code
and Cursor use, with `${VAR}` and `${VAR:-default}` expansion); nothing here parses it again. That function returns
one `MCPToolset` per server (id = the server name) inside a `PrefixedToolset` named after the server; the prefix
is taken off, because the group already says which server a tool comes from, so each group lists its tools under
the server's own names.

Group ids (`group_id`): a server name is made a group id by one documented rule, and a name the rule cannot make
valid, or two names the rule makes equal, fail at construction with an error naming the server(s).

A server that does not start: Pydantic AI builds the toolsets without starting anything, and starts each server
when a run (or `async with agent:`) enters its toolset, where a bare `MCPToolset` that fails fails the whole run.
Here each server's toolset is wrapped (`MCPServerToolset`) so a failure to start is caught at that same moment:
the run goes on without that group (it is absent from the controls' group enum and descriptions, as a group with
no tools in a step always is), one warning naming the server and the error is logged on the `pydantic_ai_toolproxy`
logger, and the next run (or the next `async with agent:`) tries to start it again. Starting includes a first
tool listing (`first_listing`, bounded by `LISTING_TIMEOUT`): a server whose listing fails (one the MCP SDK
rejects, an exit, silence) is a server that did not start. A listing that fails later (the server announced a
change, then failed to list again) leaves its group out of the rest of that run, with one warning; the other
groups keep working in both cases.

Server processes: Pydantic AI builds each stdio server's FastMCP `StdioTransport` with `keep_alive` on, which keeps
the process running after the run (or `async with agent:`) that started it ends, until the interpreter exits, and
binds it to the event loop that started it (a later `asyncio.run` on the same agent then fails every server). Here
`keep_alive` is turned off: a server runs while a run (or the host's `async with agent:`) holds it, and stops when
the last one leaves; concurrent runs share one process. A server's stderr goes to a file of its own
(`server_log`: a folder the host names, else a private temporary folder), so a server that fails to start is
reported with the last lines it wrote (`stderr_tail`), not only "Connection closed", and its banners stay off the
host's terminal.

A listed tool that cannot be a proxy member (a name the MCP SDK accepts but the proxy cannot call, such as `""`,
or a tool of an unsupported kind) is left out of its group with one warning naming it; the server's other tools
stay.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Self

import anyio
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, PrefixedToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from . import _core
from ._members import bad_member_name, unsupported_member
from ._same import same_value
from .group import ToolProxyGroup
from .mcp_listing_cache import DEFAULT_MAX_AGE, ListingStore, ServerListing, listing_key, open_listing_store

__all__ = (
    'LISTING_TIMEOUT',
    'MCPServerToolset',
    'default_description',
    'first_listing',
    'group_id',
    'mcp_groups',
    'server_log_path',
    'stderr_tail',
)

logger = logging.getLogger('pydantic_ai_toolproxy')

_OUTSIDE = re.compile(r'[^A-Za-z0-9_-]+')
_UNDERSCORES = re.compile(r'_{2,}')
MAX_GROUP_CHARS = 32
LISTING_TIMEOUT = 5.0
"""Seconds a server that started may take to answer its first `tools/list` (Pydantic AI's `init_timeout` default
for the start itself; its 300 s `read_timeout` would hold every run that long)."""


STDERR_TAIL_LINES = 12
"""Most lines of a server's stderr quoted in a start failure's warning."""

STDERR_TAIL_BYTES = 1_500
"""Most bytes (UTF-8) of a server's stderr quoted in a start failure's warning."""

_private_log_dir: Path | None = None


def _log_dir() -> Path:
    """The private folder for server stderr files of this process (made on first use, removed at exit)."""
    global _private_log_dir
    if _private_log_dir is None:
        folder = Path(tempfile.mkdtemp(prefix='toolproxy-mcp-'))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _private_log_dir = folder
    return _private_log_dir


def server_log_path(server: str, server_log: str | os.PathLike[str] | None) -> Path:
    """Where the stderr of the MCP server named `server` goes: `<server_log>/<group id>.log` (appended to), or a file
    in a private temporary folder of this process (removed at exit) when `server_log` is None."""
    folder = Path(os.path.expanduser(os.fspath(server_log))) if server_log is not None else _log_dir()
    return folder / f'{group_id(server)}.log'


def stderr_tail(path: Path | None, offset: int = 0) -> str:
    """The last lines a server wrote to its stderr file `path` from byte `offset` on: at most `STDERR_TAIL_LINES`
    lines and `STDERR_TAIL_BYTES` bytes, joined with ` | `; '' when there are none or the file cannot be read."""
    if path is None:
        return ''
    try:
        with path.open('rb') as f:
            size = f.seek(0, os.SEEK_END)
            start = max(offset, size - 4 * STDERR_TAIL_BYTES)
            f.seek(start)
            data = f.read()
    except OSError:
        return ''
    lines = [line.strip() for line in data.decode('utf-8', 'replace').splitlines() if line.strip()]
    text = ' | '.join(lines[-STDERR_TAIL_LINES:])
    encoded = text.encode()
    if len(encoded) > STDERR_TAIL_BYTES:
        text = '...' + encoded[-(STDERR_TAIL_BYTES - 3) :].decode('utf-8', 'ignore')
    return text


def _log_size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def prepare_transport(toolset: Any, server: str, server_log: str | os.PathLike[str] | None) -> Path | None:
    """Turn `keep_alive` off on a stdio `MCPToolset`'s transport and send its stderr to `server_log_path`: the
    server stops when the last run holding it leaves (see the module docstring). Returns the stderr file (None for
    a server that is no stdio process)."""
    client = getattr(toolset, 'client', None)
    transport = getattr(client, 'transport', None)
    if transport is None or not hasattr(transport, 'keep_alive') or not hasattr(transport, 'log_file'):
        return None
    transport.keep_alive = False
    path = server_log_path(server, server_log)
    path.parent.mkdir(parents=True, exist_ok=True)
    transport.log_file = path
    return path


def group_id(server: str) -> str:
    """The group id of the MCP server named `server` in an `mcpServers` file.

    The rule, in order: every run of characters other than ASCII letters, digits, `-` and `_` becomes one `_`;
    runs of `_` become one `_` (a group id holds no `__`, the canonical-name separator); `_` and `-` are stripped
    from both ends; a name that then starts with a digit gets the prefix `mcp_`. Letter case is kept. A valid group
    name is returned unchanged.

    ```python
    from pydantic_ai_toolproxy._mcp_config import group_id

    assert group_id('github') == 'github'
    assert group_id('@acme/server-files') == 'acme_server-files'
    assert group_id('my server.v2') == 'my_server_v2'
    assert group_id('1password') == 'mcp_1password'
    ```

    Raises:
        ValueError: naming the server, when nothing is left (a name of only punctuation or non-ASCII letters) or
            the result is longer than 32 characters; rename the server in the file.
    """
    text = _UNDERSCORES.sub('_', _OUTSIDE.sub('_', server)).strip('_-')
    if text[:1].isdigit():
        text = 'mcp_' + text
    if not text:
        raise ValueError(
            f'MCP server {server!r} cannot be a ToolProxy group: its name holds no ASCII letter or digit. '
            'Rename the server in the mcpServers file (group ids are ASCII letters, digits, - and _).'
        )
    if len(text) > MAX_GROUP_CHARS:
        raise ValueError(
            f'MCP server {server!r} cannot be a ToolProxy group: its group id {text!r} is {len(text)} characters, '
            f'more than {MAX_GROUP_CHARS}. Give the server a shorter name in the mcpServers file.'
        )
    _core.validate_group_name(text)  # the rule above only yields valid names; the core's check stays the authority
    return text


MAX_DESCRIPTION_CHARS = 512
"""Most characters of a group description taken from what a server says about itself."""


def described(server: str, entry: ServerListing | None) -> str:
    """A group description for a server the file gives none: its `instructions`, else its `serverInfo` title or
    name (unless that name only repeats the file's), from its cached listing (whitespace collapsed, cut to 512
    characters), else `default_description`."""
    if entry is not None:
        name = entry.server_name if (entry.server_name or '').strip().lower() != server.strip().lower() else None
        for text in (entry.instructions, entry.server_title, name):  # a name that only repeats the file's: none
            said = ' '.join((text or '').split())
            if said:
                if len(said) > MAX_DESCRIPTION_CHARS:
                    said = said[: MAX_DESCRIPTION_CHARS - 3].rstrip() + '...'
                if text is not entry.instructions:
                    said = f'Tools of the MCP server "{server[:200]}": {said}'[:MAX_DESCRIPTION_CHARS]
                return said
    return default_description(server)


def default_description(server: str) -> str:
    """The group description used when the host gives none: `Tools of the MCP server "<name>"` (the name as written
    in the file, cut to 400 characters)."""
    return f'Tools of the MCP server "{server[:400]}"'


@dataclass
class _Shared:
    """What the run copies of one `MCPServerToolset` share: the listing cache entry and the log-once flags."""

    entry: ServerListing | None = None
    """The last listing known (read from the store once, replaced by each live start)."""
    loaded: bool = False
    store_failed: bool = False
    left_out: set[str] = field(default_factory=set)
    """Names of listed tools already warned about as unusable (one warning each per server)."""


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
    stderr_path: Path | None = None
    """The file the server's stderr goes to (`prepare_transport`), None when it is no stdio process."""
    private_log: bool = True
    """Whether `stderr_path` is in the process's private folder (emptied before each fresh start)."""
    lazy: bool = False
    """Start the server only when a call needs it, while the listing cache holds a fresh entry."""
    listing_store: ListingStore | None = None
    cache_key: str = ''
    max_age: float = DEFAULT_MAX_AGE
    shared: _Shared = field(default_factory=_Shared, repr=False, compare=False)
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

    @property
    def id(self) -> str | None:
        return self.wrapped.id

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
        await self.start()
        self._prestarted = True

    async def __aenter__(self) -> Self:
        if self._prestarted:
            self._prestarted = False
            return self
        await self.start()
        return self

    async def start(self, *, warn: bool = True, refresh: bool = False) -> bool:
        """Make the server usable for this copy: serve a fresh cached listing (lazy, unless `refresh`), else enter
        the server (start it unless a run holds it already) and list its tools once (`first_listing`), storing the
        listing.

        Returns False when that failed: nothing stays entered, `start_error` holds the exception and
        `start_failure` the text (with the server's last stderr lines), logged as a warning when `warn`.
        Cancellation propagates (the entry undone first).
        """
        self.from_cache = False
        self.cache_state = None
        if self.lazy and not refresh:
            entry = self.cached_entry()
            self.cache_state = 'missing' if entry is None else 'stale'
            if entry is not None and entry.fresh(self.max_age):
                self.cache_state = 'fresh'
                self.from_cache = True
                self.start_error = None
                self.start_failure = ''
                self.listed = len(entry.tools)
                return True
        return await self._start_live(warn, 'this run')

    async def _start_live(self, warn: bool, left_out_of: str) -> bool:
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
        self._remember(tools, ttl_ms)
        return True

    def cached_entry(self) -> ServerListing | None:
        """The listing cache's entry for this server (read from the store once per process), or None."""
        shared = self.shared
        if not shared.loaded and self.listing_store is not None:
            shared.loaded = True
            try:
                shared.entry = self.listing_store.get(self.cache_key)
            except Exception as exc:
                self._store_failed(exc)
        return shared.entry

    def _remember(self, tools: list[Any], ttl_ms: int | None) -> None:
        """Keep what a live start listed, in memory and in the store (a store failure is logged once)."""
        info = getattr(self.wrapped, '_server_info', None)
        try:
            entry = ServerListing(
                tools=tuple(tool.model_dump(mode='json', by_alias=True, exclude_none=True) for tool in tools),
                server_name=_text_attr(info, 'name'),
                server_version=_text_attr(info, 'version'),
                server_title=_text_attr(info, 'title'),
                instructions=_text_attr(self.wrapped, 'instructions'),
                fetched_at=time.time(),
                ttl_ms=ttl_ms,
            )
        except Exception as exc:  # a listing that cannot be dumped as JSON: not cached
            self._store_failed(exc)
            return
        shared = self.shared
        shared.loaded = True
        if shared.entry is not None and shared.entry.tools == entry.tools and shared.entry.fresh(self.max_age):
            return  # unchanged and fresh: no write
        shared.entry = entry
        if self.listing_store is not None:
            try:
                self.listing_store.put(self.cache_key, entry)
            except Exception as exc:
                self._store_failed(exc)

    def _store_failed(self, exc: BaseException) -> None:
        if not self.shared.store_failed:
            self.shared.store_failed = True
            logger.warning(
                'MCP listing cache %r failed for server %r (%s: %s); servers are started as without a cache',
                self.listing_store,
                self.server,
                type(exc).__name__,
                exc,
            )

    def _log_offset(self) -> int:
        """Where this start's stderr begins in `stderr_path`; a private file is emptied first when no run holds the
        server (nothing writes to it then), so it holds one process's stderr at most."""
        path = self.stderr_path
        if path is None:
            return 0
        if self.private_log and not getattr(self.wrapped, 'is_running', True):
            with contextlib.suppress(OSError):
                path.write_bytes(b'')
        return _log_size(path)

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
            logger.warning('%s; group %r is left out of %s', self.start_failure, group_id(self.server), left_out_of)

    async def __aexit__(self, *args: Any) -> bool | None:
        self.from_cache = False
        if self._entered == 0:  # this entry started nothing (a failure, or a cached listing never called)
            return None
        self._entered, entered = 0, self._entered
        for _ in range(entered):  # a lazy start inside the run is closed with the run's exit
            await self.wrapped.__aexit__(*args)
        return None

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        if self.start_error is not None:
            return {}
        if self.from_cache and self._entered == 0:
            entry = self.shared.entry
            if entry is None:  # pragma: no cover - from_cache is set only with an entry
                return {}
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
            ModelRetry: (at most 2,000 characters) the server did not start (the host gets one warning with its
                stderr), it no longer has the tool, or the tool's schema changed since it was listed: the model is
                told to search the group again or to use another group.
        """
        if self.from_cache and self._entered == 0:
            if self._call_lock is None:
                self._call_lock = anyio.Lock()
            async with self._call_lock:
                if self._entered == 0 and not await self._start_live(True, 'this call (other calls try again)'):
                    raise ModelRetry(
                        f'The MCP server of group {group_id(self.server)!r} could not be started, so {name!r} did '
                        'not run. Use a tool of another group, or tell the user that this server is unavailable.'
                    )
            live = self.usable(await self.wrapped.get_tools(ctx))
            current = live.get(name)
            if current is None:
                raise ModelRetry(
                    f'Group {group_id(self.server)!r} no longer has the tool {name!r}: its MCP server changed since '
                    'the tool was listed, and it did not run. Search the group again for its current tools.'
                )
            if not _same_definition(current.tool_def, tool.tool_def):
                raise ModelRetry(
                    f'The tool {name!r} of group {group_id(self.server)!r} changed since it was listed (its MCP server '
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
                    group_id(self.server),
                    why,
                )
        return {name: tool for name, tool in tools.items() if name not in bad}

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> Any:
        if self.start_error is not None or (self.from_cache and self._entered == 0):
            return None
        return await self.wrapped.get_instructions(ctx)


def _text_attr(obj: object, name: str) -> str | None:
    value = getattr(obj, name, None) if obj is not None else None
    return value if isinstance(value, str) else None


def _same_definition(live: ToolDefinition, cached: ToolDefinition) -> bool:
    """Whether a live tool's definition is the one the model was shown from the cache (what a call is checked
    against)."""
    return (
        live.description == cached.description
        and same_value(live.parameters_json_schema, cached.parameters_json_schema)
        and same_value(live.return_schema, cached.return_schema)
    )


class _ListedFrom:
    """An `MCPToolset` seen through a cached listing: `list_tools` answers the listing, everything else is the
    toolset's own (so `MCPToolset.get_tools` builds the tools exactly as from a live listing, owned by the toolset)."""

    def __init__(self, toolset: Any, tools: list[Any]) -> None:
        self._toolset = toolset
        self._tools = tools

    def __getattr__(self, name: str) -> Any:
        return getattr(self._toolset, name)

    async def list_tools(self) -> list[Any]:
        return self._tools


async def tools_from_listing(toolset: Any, entry: ServerListing, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
    """The tools `toolset` (an `MCPToolset`) would list if its server answered `entry`'s listing: Pydantic AI's own
    `MCPToolset.get_tools` run over the cached MCP `Tool` objects.

    Raises:
        ValueError: an entry whose tools the MCP SDK rejects (pydantic's `ValidationError`).
    """
    from mcp.types import Tool

    tools = [Tool.model_validate(tool) for tool in entry.tools]
    listed: dict[str, ToolsetTool[Any]] = await type(toolset).get_tools(_ListedFrom(toolset, tools), ctx)
    return listed


async def first_listing_with_ttl(toolset: Any) -> tuple[list[Any], int | None]:
    """`first_listing` with the server's `ttlMs` hint of the listing's first page (None without one)."""
    client = toolset.client
    list_page = getattr(client, 'list_tools_mcp', None)
    if list_page is None:  # pragma: no cover - a client without the page call: no hint
        return await first_listing(toolset), None
    try:
        with anyio.fail_after(LISTING_TIMEOUT):
            page = await list_page()
            tools: list[Any] = list(page.tools)
            ttl = getattr(page, 'ttl_ms', None)
            cursor = getattr(page, 'next_cursor', None)
            pages = 1
            while cursor and pages < 250:
                page = await list_page(cursor=cursor)
                tools.extend(page.tools)
                cursor = getattr(page, 'next_cursor', None)
                pages += 1
    except TimeoutError as exc:
        raise TimeoutError(f'no answer to tools/list within {LISTING_TIMEOUT:g} s') from exc
    return tools, ttl if isinstance(ttl, int) and ttl > 0 else None


async def first_listing(toolset: Any) -> list[Any]:
    """The tools an entered `MCPToolset` lists, asked of its FastMCP client (`toolset.client.list_tools()`) within
    `LISTING_TIMEOUT` seconds.

    The client is asked, not `MCPToolset.list_tools()` (which would cache the answer): cancelling the latter at the
    timeout leaves the toolset counted as entered, so its server would never stop. The cost is one more `tools/list`
    request at each start (the toolset lists again, for the run, and caches that).

    Raises:
        TimeoutError: no answer within `LISTING_TIMEOUT`.
        Exception: what the listing raises (`MCPError` when the server exits, pydantic's `ValidationError` for a
            listing the MCP SDK rejects).
    """
    try:
        with anyio.fail_after(LISTING_TIMEOUT):
            tools: list[Any] = await toolset.client.list_tools()
    except TimeoutError as exc:
        raise TimeoutError(f'no answer to tools/list within {LISTING_TIMEOUT:g} s') from exc
    return tools


def mcp_groups(
    path: str | os.PathLike[str],
    descriptions: Mapping[str, str] | None = None,
    server_log: str | os.PathLike[str] | None = None,
    *,
    lazy: bool | Collection[str] = False,
    listing_cache: object = 'default',
    max_age: float = DEFAULT_MAX_AGE,
) -> dict[str, ToolProxyGroup[Any]]:
    """Group id -> `ToolProxyGroup` for each server of the `mcpServers` file at `path`, in the file's order.

    Args:
        path: The JSON file (`~` expanded), read by `pydantic_ai.mcp.load_mcp_toolsets` (paths inside it, such as a stdio
            server's command and `cwd`, are as that function reads them: relative to the process's working
            directory).
        descriptions: Server name (as written in the file) -> group description; servers not in it get
            `default_description`.
        server_log: A folder for the servers' stderr, one `<group id>.log` file each (appended to; made when
            absent; `~` expanded), or None: a private temporary folder of this process (see the module docstring).
        lazy: True for every server, or the names of the servers (as written in the file) to start only when a call
            needs them while the listing cache holds a fresh entry (`MCPServerToolset`).
        listing_cache: Where listings are kept (`mcp_listing_cache.open_listing_store`): `'default'` (a file beside
            the embedding cache), a path, a `ListingStore`, or `'off'`/None. Every live start stores its listing;
            a cached entry also gives a server without a `descriptions` entry its description (`described`).
        max_age: Seconds a cached listing stays fresh when its server announced no `ttlMs` above zero.

    Raises:
        OSError: a missing or unreadable file (from `load_mcp_toolsets`).
        ValueError: what else `load_mcp_toolsets` raises (invalid JSON, an entry that is not an MCP server, an
            undefined `${VAR}`), with the file named.
        ValueError: a server name that cannot be a group id, two server names with one group id (naming both),
            or a `descriptions` key that names no server of the file.
        TypeError: `descriptions` is not a mapping of str to str, `lazy` is neither a bool nor a collection of
            str, or `listing_cache` is of another type.
        ValueError: `lazy` names a server the file does not have, or `max_age` is not a positive number.
    """
    from pydantic_ai.mcp import load_mcp_toolsets  # the [mcp] extra: imported only when a file is used

    if descriptions is not None and (
        not isinstance(descriptions, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in descriptions.items())
    ):
        raise TypeError(f'descriptions must be a mapping of server name to str, got {descriptions!r}')
    try:
        toolsets = load_mcp_toolsets(Path(os.path.expanduser(os.fspath(path))))
    except OSError:
        raise
    except ValueError as exc:  # pydantic's ValidationError too: say which file
        raise ValueError(f'cannot load the mcpServers file {os.fspath(path)!r}: {exc}') from exc
    servers: dict[str, AbstractToolset[Any]] = {}
    for toolset in toolsets:
        # load_mcp_toolsets wraps each server's MCPToolset in a PrefixedToolset named after the server.
        if isinstance(toolset, PrefixedToolset):
            servers[toolset.prefix] = toolset.wrapped
        else:  # pragma: no cover - a future Pydantic AI without the prefix: the toolset's id is the server name
            servers[str(toolset.id)] = toolset
    if isinstance(lazy, bool):
        lazy_servers = set(servers) if lazy else set()
    elif isinstance(lazy, Collection) and not isinstance(lazy, str) and all(isinstance(n, str) for n in lazy):
        lazy_servers = set(lazy)
        if missing := sorted(lazy_servers - set(servers)):
            raise ValueError(
                f'lazy names {", ".join(map(repr, missing))}, which is not a server of {os.fspath(path)!r} '
                f'(its servers: {", ".join(map(repr, servers)) or "none"})'
            )
    else:
        raise TypeError(f'lazy must be a bool or a collection of server names, got {lazy!r}')
    if isinstance(max_age, bool) or not isinstance(max_age, (int, float)) or not 0 < max_age < float('inf'):
        raise ValueError(f'max_age must be a positive number of seconds, got {max_age!r}')
    store = open_listing_store(listing_cache)
    unknown = [name for name in descriptions or {} if name not in servers]
    if unknown:
        raise ValueError(
            f'descriptions name {", ".join(map(repr, unknown))}, which is not a server of {os.fspath(path)!r} '
            f'(its servers: {", ".join(map(repr, servers)) or "none"})'
        )
    groups: dict[str, ToolProxyGroup[Any]] = {}
    named: dict[str, str] = {}
    for server, toolset in servers.items():
        gid = group_id(server)
        if gid in named:
            raise ValueError(
                f'MCP servers {named[gid]!r} and {server!r} both become ToolProxy group {gid!r}; '
                'rename one of them in the mcpServers file'
            )
        named[gid] = server
        stderr_path = prepare_transport(toolset, server, server_log)
        source = MCPServerToolset(
            toolset,
            server=server,
            stderr_path=stderr_path,
            private_log=server_log is None,
            lazy=server in lazy_servers,
            listing_store=store,
            cache_key=listing_key(server, getattr(getattr(toolset, 'client', None), 'transport', None)),
            max_age=float(max_age),
        )
        given = (descriptions or {}).get(server)
        if given is not None:
            groups[gid] = ToolProxyGroup(source=source, description=given)
            continue
        try:
            groups[gid] = ToolProxyGroup(source=source, description=described(server, source.cached_entry()))
        except ValueError:  # what the server said is no valid description: the default one
            groups[gid] = ToolProxyGroup(source=source, description=default_description(server))
    return groups
