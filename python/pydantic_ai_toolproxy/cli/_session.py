"""Opening the sources for one command: load, group, and start MCP servers once for all probes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic_ai.toolsets import AbstractToolset

from .._mcp_config import MCPServerToolset
from ._config import load_config
from ._embedder import EmbedderSpec, cache_setting, resolve_embedder
from ._progress import Progress
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


async def _start_servers(surface: Surface, stack: AsyncExitStack, progress: Progress) -> None:
    """Start the servers of `mcpServers` files; one that does not start is left out of the surface, as a run leaves
    its group out (`_mcp_config.MCPServerToolset`), and recorded in `surface.unavailable`."""
    for name, group in list(surface.groups.items()):
        origin = ', '.join(surface.group_origins[name])
        if isinstance(group.source, MCPServerToolset) and not await _start(
            group.source, origin, name, stack, progress, surface
        ):
            del surface.groups[name]
            del surface.group_origins[name]
    for item in list(surface.direct):
        origin, source = item
        if isinstance(source, MCPServerToolset) and not await _start(source, origin, None, stack, progress, surface):
            surface.direct.remove(item)


async def _start(
    server: MCPServerToolset[Any],
    origin: str,
    group: str | None,
    stack: AsyncExitStack,
    progress: Progress,
    surface: Surface,
) -> bool:
    with progress.step(f'starting MCP server {server.server!r} ({origin})') as step:
        if await server.start(warn=False):
            stack.push_async_exit(server.__aexit__)
            step.done(f'{server.listed} tools from MCP server {server.server!r} ({origin})')
            return True
        where = f'group {group!r}' if group is not None else 'its tools'
        said = server.start_failure.replace(
            f'MCP server {server.server!r}', f'MCP server {server.server!r} ({origin})', 1
        )
        surface.unavailable.append((group, f'{said}; {where} left out, as a run would leave it out'))
        return False


@asynccontextmanager
async def open_surface(
    specs: list[SourceSpec],
    config_file: Path | None,
    overrides: dict[str, Any],
    progress: Progress,
    server_log: Path | None = None,
) -> AsyncIterator[Surface]:
    """Load the config file's sources, then `specs`, into one `Surface`, with its MCP servers running.

    `server_log`: the folder the stdio MCP servers' stderr goes to (`--server-log`; None: kept off the output).
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
    if not all_specs:
        raise SourceError('no sources: name them with -s/--source, --mcp-stdio, --mcp-http or --config (see --help)')
    if isinstance(overrides.get('embedder'), EmbedderSpec):
        overrides['embedder'] = await resolve_embedder(overrides['embedder'])
    with progress.step('loading sources') as step:
        surface = await build_surface(all_specs, overrides)
        step.done(f'{len(surface.groups)} groups, {len(surface.direct)} direct sources')
    async with AsyncExitStack() as stack:
        await _start_servers(surface, stack, progress)
        for origin, toolset in _mcp_toolsets(surface):
            # The status first: a long origin (a full command line) is what gets cut on a narrow terminal.
            with progress.step(f'starting MCP server {origin}') as step:
                try:
                    await stack.enter_async_context(toolset)
                    step.done(f'{len(await toolset.list_tools())} tools from MCP server {origin}')
                except Exception as exc:
                    raise SourceError(f'{origin}: the MCP server did not start: {type(exc).__name__}: {exc}') from exc
        yield surface
