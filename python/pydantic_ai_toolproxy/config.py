"""`ToolProxyConfig`: control names and discovery limits (spec: "Configure names and discovery limits")."""

from __future__ import annotations

from dataclasses import dataclass

from . import _core

__all__ = ('ToolProxyConfig',)


@dataclass(frozen=True)
class ToolProxyConfig:
    """Names of the two control tools and the limits of discovery.

    Use it when the default control names collide with tools of your own, or to change how many
    results and how many bytes one search page may hold. Omit it to get the defaults.

    Attributes:
        search_name: Name of the discovery control (default `search_proxy_tools`). Must be a valid
            provider tool name (`^[A-Za-z0-9_-]{1,64}$`) and differ from `call_name`. The default does not
            collide with Pydantic AI's own `search_tools` (native ToolSearch), so both can coexist.
        call_name: Name of the call control (default `call_proxy_tool`), same rules.
        max_results: Largest `limit` one search may ask for, 1-100. An omitted or null `limit`
            defaults to `min(5, max_results)`.
        max_search_bytes: Budget of one search page in bytes (UTF-8 JSON as sent to the model),
            1,024-32,768. A page holds only complete entries; an entry that cannot fit alone fails the search.
        include_instructions: Whether generated proxy guidance goes into the agent instructions and
            source toolset instructions are returned with discovered tools. A deps object with a
            `toolset_instructions` attribute set to False (as a13n-harness's `AgentSpec(toolset_instructions=False)`
            provides) turns both off for that run as well.

    Raises:
        ValueError: at construction, naming the offending field and value (rules live in the Rust core,
            `_core.validate_config`).
    """

    search_name: str = 'search_proxy_tools'
    call_name: str = 'call_proxy_tool'
    max_results: int = 10
    max_search_bytes: int = 32_768
    include_instructions: bool = True

    def __post_init__(self) -> None:
        for field_name in ('search_name', 'call_name'):
            value = getattr(self, field_name)
            if not isinstance(value, str):
                raise ValueError(f'ToolProxyConfig.{field_name} must be a str, got {value!r}')
        for field_name in ('max_results', 'max_search_bytes'):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f'ToolProxyConfig.{field_name} must be an int, got {value!r}')
        if not isinstance(self.include_instructions, bool):
            raise ValueError(f'ToolProxyConfig.include_instructions must be a bool, got {self.include_instructions!r}')
        _core.validate_config(self.search_name, self.call_name, self.max_results, self.max_search_bytes)

    @property
    def default_limit(self) -> int:
        """The page size used when a search omits `limit`: `min(5, max_results)`."""
        return min(5, self.max_results)
