"""Opening the sources for one command: load, group, and start MCP servers once for all probes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic_ai.toolsets import AbstractToolset

from .._private import gather
from ..mcp_servers.toolset import MCPServerToolset
from ._config import load_config
from ._embedder import EmbedderSpec, cache_setting, resolve_embedder
from ._progress import Progress
from ._render import plural
from ._sources import SourceError, SourceSpec, Surface, build_surface

__all__ = ('open_surface',)


def _mcp_toolsets(surface: Surface) -> list[tuple[str, Any]]:
    """`(origin, MCPToolset)` of every source but the servers of `mcpServers` files (`_mcp_servers`)."""
    module = sys.modules.get('pydantic_ai.mcp')
    if module is None:  # nobody built an MCPToolset, so there is none (and its heavy import is skipped)
        return []
    MCPToolset = module.MCPToolset
    found: list[tuple[str, Any]] = []
    for origin, source in surface.all_sources():
        if isinstance(source, AbstractToolset) and not isinstance(source, MCPServerToolset):

            def collect(ts: AbstractToolset[Any], origin: str = origin) -> None:
                if isinstance(ts, MCPToolset):
                    found.append((origin, ts))

            source.apply(collect)
    return found


async def _start_servers(surface: Surface, stack: AsyncExitStack, progress: Progress, *, refresh: bool) -> None:
    """Start the servers of `mcpServers` files, all at once (a lazy one with a fresh cached listing is not started;
    `refresh` starts every one and stores its listing); one that does not start is left out of the surface, as a
    run leaves its group out (`mcp_servers.toolset.MCPServerToolset`), and recorded in `surface.unavailable`."""
    found: list[tuple[MCPServerToolset[Any], str, str | None, Any]] = []
    for name, defined in surface.groups.items():
        if isinstance(defined.source, MCPServerToolset):
            found.append((defined.source, ', '.join(surface.group_origins[name]), name, None))
    for item in surface.direct:
        if isinstance(item[1], MCPServerToolset):
            found.append((item[1], item[0], None, item))
    if not found:
        return
    with progress.step(f'starting {plural(len(found), "MCP server")}') as step:
        started = await gather(*(server.start(warn=False, refresh=refresh) for server, *_ in found))
        for ok, (server, origin, group, item) in zip(started, found):
            if ok:
                stack.push_async_exit(server.__aexit__)
                if server.cache_state in ('missing', 'stale'):
                    why = 'no cached listing' if server.cache_state == 'missing' else 'its cached listing is stale'
                    surface.listing_notes.append(
                        f'MCP server {server.server!r} ({origin}): {why}; started to list its tools (stored for the '
                        'next --lazy command; toolproxy refresh re-lists every server)'
                    )
                how = 'its cached listing' if server.from_cache else 'listed now'
                if refresh:
                    stored = await anyio.to_thread.run_sync(server.wait_stored, REFRESH_STORE_TIMEOUT)
                    surface.stored += stored
                    how += ', stored' if stored else ', not stored (' + _why_not_stored(server) + ')'
                surface.server_notes.append(
                    f'MCP server {server.server!r} ({origin}): {plural(server.listed, "tool")}, {how}'
                )
                continue
            where = f'group {group!r}' if group is not None else 'its tools'
            said = server.start_failure.replace(
                f'MCP server {server.server!r}', f'MCP server {server.server!r} ({origin})', 1
            )
            surface.unavailable.append((group, f'{said}; {where} left out, as a run would leave it out'))
            surface.server_notes.append(
                f'MCP server {server.server!r} ({origin}): did not start ({type(server.start_error).__name__}), '
                'not stored (its cached listing, if any, is left as it was; the warning says why)'
            )
            if group is not None:
                del surface.groups[group]
                del surface.group_origins[group]
            else:
                surface.direct.remove(item)
        cached = sum(server.from_cache for (server, *_), ok in zip(found, started) if ok)
        step.done(
            f'{plural(len(found) - cached, "MCP server")} started, {cached} served from the listing cache'
            if cached
            else f'{plural(sum(started), "MCP server")} started'
        )


REFRESH_STORE_TIMEOUT = 10.0
"""Seconds `toolproxy refresh` waits for each listing's write to the listing cache."""


def _why_not_stored(server: MCPServerToolset[Any]) -> str:
    if server.listing_store is None:
        return 'no listing cache: --listing-cache off'
    if server.shared.store_failed:
        return 'the listing cache failed: see the warning'
    return f'the listing cache did not answer within {REFRESH_STORE_TIMEOUT:g} s'


@asynccontextmanager
async def open_surface(
    specs: list[SourceSpec],
    config_file: Path | None,
    overrides: dict[str, Any],
    progress: Progress,
    server_log: Path | None = None,
    *,
    lazy: bool = False,
    listing_cache: str | None = None,
    start_timeout: float | None = None,
    refresh: bool = False,
) -> AsyncIterator[Surface]:
    """Load the config file's sources, then `specs`, into one `Surface`, with its MCP servers running.

    `server_log`: the folder the stdio MCP servers' stderr goes to (`--server-log`; None: kept off the output).
    `lazy` (`--lazy`): every `mcpServers` server with a fresh cached listing is served from `listing_cache`
    (`--listing-cache`, a path or `off`; None: the default file) without starting; `refresh` (`toolproxy refresh`)
    starts every server and stores what it lists. `start_timeout` (`--start-timeout`): each stdio server's start
    timeout in seconds (None: the default, 30).
    `overrides`: `ToolProxyConfig` fields from the command line (None = not given; they win over the config
    file's `[discovery]`); an `embedder` text is resolved here (`_embedder.resolve_embedder`).

    Each MCP toolset is entered once here (and its tool list fetched, with a progress step per server), so
    the probe runs reuse one connection per server; all are closed when the block ends. A server of an
    `mcpServers` file (`--mcp-config`) that does not start is left out with its group and recorded in
    `Surface.unavailable` (the commands warn, `check` reports an error); any other MCP server that does not start
    fails the command.

    Raises:
        SourceError: no sources, a source that cannot be loaded, an embedder that cannot be resolved, or an MCP
            server that cannot start.
    """
    all_specs: list[SourceSpec] = []
    overrides = dict(overrides)
    if isinstance(overrides.get('embedder'), str):
        overrides['embedder'] = EmbedderSpec(overrides['embedder'], Path.cwd(), '--embedder')
    if isinstance(overrides.get('embedding_cache'), str):
        overrides['embedding_cache'] = cache_setting(overrides['embedding_cache'], Path.cwd())
    if config_file is not None:
        file_specs, discovery = load_config(config_file)
        all_specs.extend(file_specs)
        overrides = {**discovery, **{k: v for k, v in overrides.items() if v is not None}}
    all_specs.extend(specs)
    for spec in all_specs:
        spec.server_log = server_log
        spec.lazy = spec.lazy or lazy
        if listing_cache is not None:
            spec.listing_cache = listing_cache
        if start_timeout is not None:
            spec.start_timeout = start_timeout
    if not all_specs:
        raise SourceError('no sources: name them with -s/--source, --mcp-stdio, --mcp-http or --config (see --help)')
    if isinstance(overrides.get('embedder'), EmbedderSpec):
        overrides['embedder'] = await resolve_embedder(overrides['embedder'])
    with progress.step('loading sources') as step:
        surface = await build_surface(all_specs, overrides)
        step.done(f'{len(surface.groups)} groups, {len(surface.direct)} direct sources')
    async with AsyncExitStack() as stack:
        await _start_servers(surface, stack, progress, refresh=refresh)
        for origin, toolset in _mcp_toolsets(surface):
            # The status first: a long origin (a full command line) is what gets cut on a narrow terminal.
            with progress.step(f'starting MCP server {origin}') as step:
                try:
                    await stack.enter_async_context(toolset)
                    step.done(f'{len(await toolset.list_tools())} tools from MCP server {origin}')
                except Exception as exc:
                    raise SourceError(f'{origin}: the MCP server did not start: {type(exc).__name__}: {exc}') from exc
        yield surface
