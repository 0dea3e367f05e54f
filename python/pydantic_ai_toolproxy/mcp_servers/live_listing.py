"""What a live start of an `mcpServers` server listed, kept (for `mcp_servers.toolset.MCPServerToolset`): the
listing cache entry built from it (the tools as JSON, the server's `serverInfo` and instructions, the listing's
TTL), kept in memory at once and written to the store by a worker thread (`listing_io.write_entry`) unless it is
unchanged and fresh, and the group description set from it (`describe.described`) when the host gave none, told
to the listeners bound to it (`bind_description`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..mcp_listing_cache import ServerListing
from .describe import described
from .listing_io import CachedSource, write_entry

__all__ = ('LiveSource', 'bind_description', 'remember', 'store_failed')

logger = logging.getLogger('pydantic_ai_toolproxy')


class LiveSource(CachedSource, Protocol):
    """What `remember` reads and sets of a server's source (`toolset.MCPServerToolset` is one)."""

    describe: bool
    """Whether the group's description comes from what the server says (`shared.description`)."""
    max_age: float
    """Seconds a listing stays fresh (an unchanged live listing within it is not written again)."""


def remember(source: LiveSource, tools: list[Any], ttl_ms: int | None, toolset: object) -> None:
    """Keep what a live start listed (`tools`: the MCP SDK's `Tool`s; `ttl_ms`: the listing's TTL in milliseconds,
    None without one; `toolset`: the `MCPToolset` it started) in `source.shared` at once, and in the store by a
    worker thread (the caller never waits for the store: `MCPServerToolset.wait_stored`). A listing that cannot be
    dumped as JSON is not cached; that and a store failure are logged once per server (`store_failed`)."""
    info = getattr(toolset, '_server_info', None)
    try:
        entry = ServerListing(
            tools=tuple(tool.model_dump(mode='json', by_alias=True, exclude_none=True) for tool in tools),
            server_name=_text_attr(info, 'name'),
            server_version=_text_attr(info, 'version'),
            server_title=_text_attr(info, 'title'),
            instructions=_text_attr(toolset, 'instructions'),
            fetched_at=time.time(),
            ttl_ms=ttl_ms,
        ).with_mcp_tools(tools)
    except Exception as exc:  # a listing that cannot be dumped as JSON: not cached
        store_failed(source, exc)
        return
    shared = source.shared
    shared.loaded = True
    _described_by(source, entry)
    if shared.entry is not None and shared.entry.tools == entry.tools and shared.entry.fresh(source.max_age):
        if shared.write is None and shared.written is None and source.listing_store is not None:
            shared.written = not shared.store_failed  # what the store gave at construction: stored already
        return  # unchanged and fresh: no write
    shared.entry = entry
    if source.listing_store is not None:
        write_entry(source.listing_store, source.cache_key, entry, shared, lambda exc: store_failed(source, exc))


def bind_description(source: LiveSource, listener: Callable[[str], bool]) -> None:
    """Tell `listener` the group description from what the server said (`shared.description`): at once when it is
    known, else when the server's first live start sets it (the listener answers False to be dropped: its surface
    is gone). Does nothing unless `source.describe`."""
    if not source.describe:
        return
    said = source.shared.description
    if said is not None:
        listener(said)
    else:
        source.shared.listeners.append(listener)


def _described_by(source: LiveSource, entry: ServerListing) -> None:
    """Set `shared.description` from a live listing's `entry` when not set yet, and tell the listeners."""
    shared = source.shared
    if not source.describe or shared.description is not None:
        return
    said = described(source.server, entry)
    if said is None:
        return
    shared.description = said
    shared.listeners[:] = [listener for listener in shared.listeners if listener(said)]


def store_failed(source: CachedSource, exc: BaseException) -> None:
    """Warn, once per server (`shared.store_failed`), that its listing could not be cached (`exc`: what the store
    or the JSON dump raised); the server is then started as without a cache."""
    if not source.shared.store_failed:
        source.shared.store_failed = True
        logger.warning(
            'MCP listing cache %r failed for server %r (%s: %s); servers are started as without a cache',
            source.listing_store,
            source.server,
            type(exc).__name__,
            exc,
        )


def _text_attr(obj: object, name: str) -> str | None:
    value = getattr(obj, name, None) if obj is not None else None
    return value if isinstance(value, str) else None
