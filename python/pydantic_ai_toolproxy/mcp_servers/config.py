"""`ToolProxyCapability.from_mcp_config`: every server of an `mcpServers` JSON file as one group.

The file is read by Pydantic AI's own `pydantic_ai.mcp.load_mcp_toolsets` (the format Claude Desktop, Claude Code
and Cursor use, with `${VAR}` and `${VAR:-default}` expansion); nothing here parses it again. That function returns
one `MCPToolset` per server (id = the server name) inside a `PrefixedToolset` named after the server; the prefix
is taken off, because the group already says which server a tool comes from, so each group lists its tools under
the server's own names.

Group ids (`group_ids`): every server name is made a valid, distinct group id by one documented rule (a name too
long or with nothing usable is cut and given a short hash of itself; two names the rule makes equal are told
apart the same way), so no file is refused for its server names.

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

import json
import logging
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pydantic_ai.toolsets import AbstractToolset, PrefixedToolset

from ..group import ToolProxyGroup
from ..grouping.names import group_id, group_ids
from ..mcp_listing_cache import DEFAULT_MAX_AGE, listing_key, open_listing_store
from .describe import MAX_DESCRIPTION_CHARS, default_description, described
from .listing_io import load_entries
from .noise import quiet_stdout
from .pool import DEFAULT_IDLE_TIMEOUT, DEFAULT_START_TIMEOUT, shared_pool
from .process import LISTING_TIMEOUT, first_listing, prepare_transport, server_log_path, stderr_tail, stdio_factory
from .toolset import MCPServerToolset

__all__ = (
    'LISTING_TIMEOUT',
    'MAX_DESCRIPTION_CHARS',
    'MCPServerToolset',
    'default_description',
    'described',
    'first_listing',
    'group_id',
    'mcp_groups',
    'server_log_path',
    'stderr_tail',
)

logger = logging.getLogger('pydantic_ai_toolproxy')


START_TIMEOUT_KEYS = ('startup_timeout_sec', 'startup_timeout_ms')
"""The keys of an `mcpServers` entry that set its start timeout, as other MCP clients spell them (seconds, ms)."""


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float('inf'):
        raise ValueError(f'{name} must be a positive number of seconds, got {value!r}')
    return float(value)


def start_timeouts(path: str | os.PathLike[str], servers: Collection[str], default: float) -> dict[str, float]:
    """Server name -> its start timeout in seconds: the entry's `startup_timeout_sec`, else its
    `startup_timeout_ms` / 1000, else `default`. Pydantic AI's reader ignores these keys; they are read from the
    file's JSON here (a file it already read, so it is valid JSON).

    Raises:
        ValueError: a key that is no positive number (naming the server and the key).
    """
    try:
        data = json.loads(Path(os.path.expanduser(os.fspath(path))).read_bytes())
        entries = data.get('mcpServers') or {}
    except (OSError, ValueError, AttributeError):  # read already by load_mcp_toolsets; a race: the defaults
        entries = {}
    timeouts: dict[str, float] = {}
    for server in servers:
        entry = entries.get(server) if isinstance(entries, dict) else None
        seconds = default
        if isinstance(entry, dict):
            for key, scale in zip(START_TIMEOUT_KEYS, (1.0, 1000.0)):
                if key in entry:
                    seconds = _positive(f'{key} of MCP server {server!r}', entry[key]) / scale
                    break
        timeouts[server] = seconds
    return timeouts


def mcp_groups(
    path: str | os.PathLike[str],
    descriptions: Mapping[str, str] | None = None,
    server_log: str | os.PathLike[str] | None = None,
    *,
    lazy: bool | Collection[str] = False,
    listing_cache: object = 'default',
    max_age: float = DEFAULT_MAX_AGE,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
) -> dict[str, ToolProxyGroup[Any]]:
    """Group id (`group_ids`) -> `ToolProxyGroup` for each server of the `mcpServers` file at `path`, in the file's
    order.

    Args:
        path: The JSON file (`~` expanded), read by `pydantic_ai.mcp.load_mcp_toolsets` (paths inside it, such as a stdio
            server's command and `cwd`, are as that function reads them: relative to the process's working
            directory).
        descriptions: Server name (as written in the file) -> group description; servers not in it get one from
            what the server says about itself (`mcp_servers.describe.described`: its cached listing, else its first live
            start, before the first model request), else `default_description`.
        server_log: A folder for the servers' stderr, one `<group id>.log` file each (appended to; made when
            absent; `~` expanded), or None: a private temporary folder of this process (see the module docstring).
        lazy: True for every server, or the names of the servers (as written in the file) to start only when a call
            needs them while the listing cache holds a fresh entry (`MCPServerToolset`).
        listing_cache: Where listings are kept (`mcp_listing_cache.open_listing_store`): `'default'` (a file beside
            the embedding cache), a path, a `ListingStore`, or `'off'`/None. Every live start stores its listing.
        max_age: Seconds a cached listing stays fresh when its server announced no `ttlMs` above zero.
        start_timeout: Seconds a stdio server may take to start (spawn, `initialize`, first `tools/list`), counted
            from the moment its start may begin (`mcp_servers.pool.start_slots` start at once); an entry's own
            `startup_timeout_sec` (or `startup_timeout_ms`) key wins (`start_timeouts`).
        idle_timeout: Seconds a stdio server no run uses stays up, or None to keep it until its event loop ends or
            the process exits.

    Raises:
        OSError: a missing or unreadable file (from `load_mcp_toolsets`).
        ValueError: what else `load_mcp_toolsets` raises (invalid JSON, an entry that is not an MCP server, an
            undefined `${VAR}`), with the file named.
        ValueError: a `descriptions` key that names no server of the file.
        TypeError: `descriptions` is not a mapping of str to str, `lazy` is neither a bool nor a collection of
            str, or `listing_cache` is of another type.
        ValueError: `lazy` names a server the file does not have, `max_age` or `start_timeout` is not a positive
            number, `idle_timeout` is neither None nor a positive number, or an entry's `startup_timeout_sec` /
            `startup_timeout_ms` is not a positive number (naming the server).
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
    _positive('max_age', max_age)
    _positive('start_timeout', start_timeout)
    if idle_timeout is not None:
        _positive('idle_timeout', idle_timeout)
    timeouts = start_timeouts(path, servers, start_timeout)
    store = open_listing_store(listing_cache)
    unknown = [name for name in descriptions or {} if name not in servers]
    if unknown:
        raise ValueError(
            f'descriptions name {", ".join(map(repr, unknown))}, which is not a server of {os.fspath(path)!r} '
            f'(its servers: {", ".join(map(repr, servers)) or "none"})'
        )
    groups: dict[str, ToolProxyGroup[Any]] = {}
    ids = group_ids(servers)
    sources: dict[str, MCPServerToolset[Any]] = {}
    for server, toolset in servers.items():
        gid = ids[server]
        stderr_path = prepare_transport(toolset, gid, server_log)  # `<gid>.log`: a valid group id is its own id
        quiet_stdout(toolset, server, stderr_path)  # a banner on its stdout: one warning, the lines in its log
        factory = stdio_factory(toolset, timeouts[server], server=server)
        key = listing_key(server, getattr(getattr(toolset, 'client', None), 'transport', None))
        pool = (
            shared_pool(
                (key, str(stderr_path)), server, factory, start_timeout=timeouts[server], idle_timeout=idle_timeout
            )
            if factory is not None
            else None
        )
        source = MCPServerToolset(
            toolset,
            server=server,
            group=gid,
            stderr_path=stderr_path,
            private_log=server_log is None,
            lazy=server in lazy_servers,
            listing_store=store,
            cache_key=key,
            max_age=float(max_age),
            pool=pool,
        )
        sources[gid] = source
    load_entries(list(sources.values()))  # every cached entry in one bounded wait, not one per server
    for gid, source in sources.items():
        given = (descriptions or {}).get(source.server)
        if given is not None:
            groups[gid] = ToolProxyGroup(source=source, description=given)
            continue
        source.describe = True  # from what the server says: its cached entry now, else its first live start
        entry = source.cached_entry()
        said = described(source.server, entry) or default_description(source.server)
        if entry is not None:  # settled: a later live start (a lazy call mid-run) never changes it
            source.shared.description = said
        groups[gid] = ToolProxyGroup(source=source, description=said)
    return groups
