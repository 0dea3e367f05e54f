"""Shared state of one `ToolProxyCapability`: configuration, the directory cache and the search index cache.

One runtime is created per `ToolProxyCapability(...)` and shared by every copy Pydantic AI makes of the
capability (`for_agent`/`for_run` rebinds), so concurrent runs of one agent share one index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.tools import RunContext

from . import _core
from .config import ToolProxyConfig
from .grouping.directory import Directory, DirectoryCache
from .hybrid.store_io import open_store
from .hybrid.vectors import ToolVectors
from .search.index_cache import SearchIndexCache

__all__ = ('ProxyRuntime',)


@dataclass(eq=False)
class ProxyRuntime:
    """Configuration and caches of one proxy surface; also the identity token its members carry (it is the
    `grouping.members.SurfaceOwner` of every `GroupMemberToolset` and `GroupSourceCapability` of the surface).

    Attributes:
        config: The surface's `ToolProxyConfig`.
        descriptions: Group name -> description, as validated by `ToolProxyCapability` (or `ToolProxyPlan`);
            replaced by `redescribe`.
        group_order: The configured group names, in order (the order of the group enum and summaries).
        directories: Per-step grouped directories (`DirectoryCache`).
        search_index: The shared search indexes (`SearchIndexCache`: one per member set in use, bounded).
        vectors: Tool and query vectors for hybrid search (`ToolVectors`, following every index of `search_index`),
            None without `config.embedder`.
    """

    config: ToolProxyConfig
    descriptions: Mapping[str, str]
    group_order: list[str]
    directories: DirectoryCache = field(init=False)
    search_index: SearchIndexCache = field(init=False)
    vectors: ToolVectors | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.directories = DirectoryCache(owner=self, group_order=self.group_order)
        self.search_index = SearchIndexCache(self.descriptions)
        if self.config.embedder is not None:
            config = self.config
            self.vectors = ToolVectors(config, self.descriptions, self.search_index.lock, lambda: open_store(config))
            self.search_index.vectors = self.vectors

    def redescribe(self, group: str, description: str) -> None:
        """Give `group` the description `description` from now on (an `mcpServers` group whose server described
        itself at its first live start, `mcp_servers.toolset.MCPServerToolset.bind_description`): the controls, the
        guidance and the search indexes (rebuilt at their next sync) use it. An invalid description, or a group
        this surface does not have, changes nothing."""
        if self.descriptions.get(group, description) == description:
            return
        try:
            _core.validate_group_description(group, description)
        except ValueError:
            return
        with self.search_index.lock:
            described = dict(self.descriptions)
            described[group] = description
            self.descriptions = described
            self.search_index.redescribe(group, description)
            if self.vectors is not None:
                self.vectors.redescribe(group, description)

    def group_description(self, group: str) -> str:
        """The configured description of `group` ('' for a group this surface does not have)."""
        return self.descriptions.get(group, '')

    def directory(self, ctx: RunContext[Any]) -> Directory:
        """The current step's grouped directory (computed once per step)."""
        return self.directories.get(ctx)

    def instructions_enabled(self, ctx: RunContext[Any]) -> bool:
        """Guidance and source instructions are on unless the config or the run's deps turn them off."""
        if not self.config.include_instructions:
            return False
        try:
            setting = getattr(ctx.deps, 'toolset_instructions', True)
        except Exception:  # deps whose `__getattr__` raises something else than AttributeError (an attribute dict)
            return True
        return setting is not False
