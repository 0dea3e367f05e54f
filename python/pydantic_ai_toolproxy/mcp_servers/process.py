"""A stdio MCP server's process and its first listing, for the `mcpServers` groups (`mcp_servers.config`).

- The process: Pydantic AI builds each stdio server's FastMCP `StdioTransport` with `keep_alive` on, which keeps the
  process running after the run that started it, bound to the event loop that started it. `prepare_transport`
  turns it off (a server runs while a run holds it) and sends its stderr to a file of its own (`server_log_path`),
  so a server that fails to start is reported with the last lines it wrote (`stderr_tail`).
- The listing: starting includes a first `tools/list` (`first_listing`, bounded by `LISTING_TIMEOUT`), and a
  cached listing becomes tool definitions through Pydantic AI's own `MCPToolset` (`tools_from_listing`).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..grouping.names import group_id
from ..mcp_listing_cache import ServerListing
from .noise import quiet_stdout

logger = logging.getLogger('pydantic_ai_toolproxy')


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


def start_offset(path: Path | None, private: bool, running: bool) -> int:
    """Where a start's stderr begins in the server's stderr file `path`, in bytes (0 without a file). A private file
    (`private`: in the process's private folder) is emptied first when no process writes to it (`running` False),
    so it holds one process's stderr at most; an unwritable file is left as it is."""
    if path is None:
        return 0
    if private and not running:
        with contextlib.suppress(OSError):
            path.write_bytes(b'')
    return _log_size(path)


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


def stdio_factory(toolset: Any, start_timeout: float, server: str = '') -> Callable[[], Any] | None:
    """A function building a fresh `MCPToolset` for the stdio server `toolset` (as `load_mcp_toolsets` builds it: the
    same command line, environment, folder and id), with its own transport (`keep_alive` off, stderr to the same
    file, its stdout noise kept there: `mcp_servers.noise.quiet_stdout` for `server`) and `start_timeout` as its
    `initialize` bound: each event loop gets its own (`mcp_servers.pool.ServerPool`). None for a server that is no stdio
    process."""
    transport = getattr(getattr(toolset, 'client', None), 'transport', None)
    if transport is None or not all(hasattr(transport, a) for a in ('keep_alive', 'log_file', 'command', 'args')):
        return None
    from pydantic_ai.mcp import MCPToolset

    kind = type(transport)
    spec = {
        'command': transport.command,
        'args': list(transport.args),
        'env': getattr(transport, 'env', None),
        'cwd': getattr(transport, 'cwd', None),
    }
    log_file = transport.log_file
    ident = toolset.id

    def make() -> Any:
        made = MCPToolset(kind(**spec, keep_alive=False, log_file=log_file), id=ident, init_timeout=start_timeout)
        quiet_stdout(made, server or str(ident), log_file if isinstance(log_file, Path) else None)
        return made

    return make


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

    The cached tools are validated once per entry (`ServerListing.mcp_tools`, done when the entry is read) and
    turned into tools once per entry and toolset (and the run's retry budget, the one thing of `ctx` they hold):
    each step gets the same `ToolsetTool` objects in a new dict, so a step costs no conversion, and the members
    built from them last step are found unchanged by identity (`grouping.member_listing.ListingKey`), not by comparing
    their schemas.

    Raises:
        ValueError: an entry whose tools the MCP SDK rejects (pydantic's `ValidationError`).
    """
    key = (
        ctx.max_retries,
        getattr(toolset, 'max_retries', None),
        getattr(toolset, 'include_return_schema', None),
        getattr(toolset, 'prefer_tasks', None),
    )
    made: tuple[Any, tuple[Any, ...], dict[str, ToolsetTool[Any]]] | None = entry.__dict__.get('_toolset_tools')
    if made is None or made[0] is not toolset or made[1] != key:
        tools = entry.mcp_tools()
        listed: dict[str, ToolsetTool[Any]] = await type(toolset).get_tools(_ListedFrom(toolset, tools), ctx)
        made = (toolset, key, listed)
        object.__setattr__(entry, '_toolset_tools', made)  # the entry is frozen: a cache beside its fields
    return dict(made[2])


async def first_listing_with_ttl(toolset: Any, timeout: float | None = LISTING_TIMEOUT) -> tuple[list[Any], int | None]:
    """`first_listing` with the server's `ttlMs` hint of the listing's first page (None without one); `timeout`
    seconds bound the whole listing (None: the caller bounds it).

    The listing also fills the toolset's own tools cache (`seed_tools_cache`), so the run's first
    `MCPToolset.get_tools` does not ask the server again: one `tools/list` per start."""
    client = toolset.client
    list_page = getattr(client, 'list_tools_mcp', None)
    generation = getattr(toolset, '_tools_cache_generation', None)
    if list_page is None:  # pragma: no cover - a client without the page call: no hint
        listed = await first_listing(toolset)
        seed_tools_cache(toolset, listed, generation)
        return listed, None
    try:
        with anyio.fail_after(timeout):
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
        if timeout is None:
            raise
        raise TimeoutError(f'no answer to tools/list within {timeout:g} s') from exc
    seed_tools_cache(toolset, tools, generation)
    return tools, ttl if isinstance(ttl, int) and ttl > 0 else None


def seed_tools_cache(toolset: Any, tools: list[Any], generation: object) -> None:
    """Give an entered `MCPToolset` the listing its start just fetched (`tools`, MCP `Tool` objects) as its own
    tools cache, as `MCPToolset.list_tools` would have stored it: only when it caches tools (`cache_tools`), holds
    none yet, and no `tools/list_changed` arrived since the listing began (`generation`: its
    `_tools_cache_generation` then; Pydantic AI releases without that counter compare None to None). A later
    change notification clears it as usual. A toolset without that cache is left alone (it lists again)."""
    if not getattr(toolset, 'cache_tools', False) or getattr(toolset, '_cached_tools', False) is not None:
        return
    if getattr(toolset, '_tools_cache_generation', None) != generation:
        return  # the server said its tools changed while they were being listed: let the toolset ask again
    toolset._cached_tools = list(tools)


async def first_listing(toolset: Any) -> list[Any]:
    """The tools an entered `MCPToolset` lists, asked of its FastMCP client (`toolset.client.list_tools()`) within
    `LISTING_TIMEOUT` seconds.

    The client is asked, not `MCPToolset.list_tools()`: cancelling the latter at the timeout leaves the toolset
    counted as entered, so its server would never stop. `first_listing_with_ttl` then hands the answer to the
    toolset's cache (`seed_tools_cache`), so the run does not list again.

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


def server_pid(toolset: Any) -> int | None:
    """The process id of an entered stdio `MCPToolset`'s server, or None when it cannot be found (no stdio
    transport, or client libraries shaped otherwise than read here).

    FastMCP's stdio transport runs the MCP SDK's `stdio_client` in a connection task of its own; the process that
    `stdio_client` spawned (in a session of its own, so its process group id is its pid) is a local of that
    context manager. Read only, never called: used to stop the server of an event loop that no longer runs
    (`mcp_servers.pool`), where nothing can await its own teardown.
    """
    transport = getattr(getattr(toolset, 'client', None), 'transport', None)
    task = getattr(transport, '_connect_task', None)
    try:
        frame = task.get_coro().cr_frame  # type: ignore[union-attr]
        stack = frame.f_locals.get('stack') if frame is not None else None
        for _, callback in getattr(stack, '_exit_callbacks', ()):
            generator = getattr(getattr(callback, '__self__', None), 'gen', None)
            local = getattr(generator, 'ag_frame', None)
            process = local.f_locals.get('process') if local is not None else None
            pid = getattr(process, 'pid', None)
            if isinstance(pid, int) and pid > 0:
                return pid
    except Exception:  # another FastMCP or MCP SDK: no pid, the server stops with its loop or at exit
        logger.debug('no pid found for an MCP server', exc_info=True)
    return None
