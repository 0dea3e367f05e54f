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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self

import anyio
from pydantic_ai.tools import AgentDepsT, RunContext
from pydantic_ai.toolsets import AbstractToolset, PrefixedToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from . import _core
from ._members import bad_member_name, unsupported_member
from .group import ToolProxyGroup

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


def default_description(server: str) -> str:
    """The group description used when the host gives none: `Tools of the MCP server "<name>"` (the name as written
    in the file, cut to 400 characters)."""
    return f'Tools of the MCP server "{server[:400]}"'


@dataclass
class MCPServerToolset(WrapperToolset[AgentDepsT]):
    """One server of an `mcpServers` file: its `MCPToolset`, tolerant of a server that does not start.

    `for_run` gives each run its own copy (sharing the one `MCPToolset`, so one connection serves concurrent runs),
    which remembers whether its own start (the connection and the first tool listing) failed; a failed copy lists
    no tools and no instructions, and its exit leaves the `MCPToolset` alone. A later listing that fails marks the
    copy failed too (its exit still closes what its entry opened).

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
    start_error: Exception | None = field(default=None, init=False, repr=False, compare=False)
    start_failure: str = field(default='', init=False, repr=False, compare=False)
    listed: int = field(default=0, init=False, repr=False, compare=False)
    """How many tools the server listed at its last start (`first_listing`)."""
    """`start_error` as reported: `MCP server 'x' did not start (...)`, with the server's last stderr lines."""
    _entered: int = field(default=0, init=False, repr=False, compare=False)
    """Entries of this copy that started the server and are not exited yet (entries nest, exits come in reverse)."""
    _left_out: set[str] = field(default_factory=set, repr=False, compare=False)
    """Names of listed tools already warned about as unusable (one warning each per server: the runs' copies share
    the set)."""

    @property
    def id(self) -> str | None:
        return self.wrapped.id

    @property
    def label(self) -> str:
        return f'MCP server {self.server!r} ({self.wrapped.label})'

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        return replace(self, wrapped=await self.wrapped.for_run(ctx))

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def start(self, *, warn: bool = True) -> bool:
        """Enter the server (start it unless a run holds it already) and list its tools once (`first_listing`).

        Returns False when that failed: nothing stays entered, `start_error` holds the exception and
        `start_failure` the text (with the server's last stderr lines), logged as a warning when `warn`.
        Cancellation propagates (the entry undone first).
        """
        offset = self._log_offset()
        try:
            await self.wrapped.__aenter__()
        except Exception as exc:  # the server's own failure: this run goes on without its group
            self._failed(exc, 'did not start', 'this run', offset, warn)
            return False
        try:
            self.listed = len(await first_listing(self.wrapped))
        except BaseException as exc:
            # Undo the entry (the server stops unless another run uses it), also when the run is being cancelled.
            with anyio.CancelScope(shield=True):
                await self.wrapped.__aexit__(None, None, None)
            if not isinstance(exc, Exception):
                raise
            self._failed(exc, 'did not start', 'this run', offset, warn)
            return False
        self.start_error = None
        self.start_failure = ''
        self._entered += 1
        return True

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
        if self._entered == 0:  # this entry failed to start the server: nothing to close
            return None
        self._entered -= 1
        return await self.wrapped.__aexit__(*args)

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        if self.start_error is not None:
            return {}
        try:
            tools = await self.wrapped.get_tools(ctx)
        except Exception as exc:  # a listing after a change: the rest of the run goes on without the group
            self._failed(exc, 'failed to list its tools', 'the rest of this run')
            return {}
        return self.usable(tools)

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
            if name not in self._left_out:
                self._left_out.add(name)
                logger.warning(
                    'MCP server %r listed a tool %r that is left out of group %r: %s',
                    self.server,
                    name,
                    group_id(self.server),
                    why,
                )
        return {name: tool for name, tool in tools.items() if name not in bad}

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> Any:
        if self.start_error is not None:
            return None
        return await self.wrapped.get_instructions(ctx)


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
) -> dict[str, ToolProxyGroup[Any]]:
    """Group id -> `ToolProxyGroup` for each server of the `mcpServers` file at `path`, in the file's order.

    Args:
        path: The JSON file, read by `pydantic_ai.mcp.load_mcp_toolsets` (paths inside it, such as a stdio
            server's command and `cwd`, are as that function reads them: relative to the process's working
            directory).
        descriptions: Server name (as written in the file) -> group description; servers not in it get
            `default_description`.
        server_log: A folder for the servers' stderr, one `<group id>.log` file each (appended to; made when
            absent; `~` expanded), or None: a private temporary folder of this process (see the module docstring).

    Raises:
        OSError: a missing or unreadable file (from `load_mcp_toolsets`).
        ValueError: what else `load_mcp_toolsets` raises (invalid JSON, an entry that is not an MCP server, an
            undefined `${VAR}`), with the file named.
        ValueError: a server name that cannot be a group id, two server names with one group id (naming both),
            or a `descriptions` key that names no server of the file.
        TypeError: `descriptions` is not a mapping of str to str.
    """
    from pydantic_ai.mcp import load_mcp_toolsets  # the [mcp] extra: imported only when a file is used

    if descriptions is not None and (
        not isinstance(descriptions, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in descriptions.items())
    ):
        raise TypeError(f'descriptions must be a mapping of server name to str, got {descriptions!r}')
    try:
        toolsets = load_mcp_toolsets(Path(path))
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
        description = (descriptions or {}).get(server, default_description(server))
        stderr_path = prepare_transport(toolset, server, server_log)
        source = MCPServerToolset(toolset, server=server, stderr_path=stderr_path, private_log=server_log is None)
        groups[gid] = ToolProxyGroup(source=source, description=description)
    return groups
