"""`ToolProxyCapability`: group tool collections behind two control tools (search and call); every grouped tool stays
registered in the `ToolManager` under its canonical name `{group}__{tool}` and is hidden from the model."""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from pydantic_ai.capabilities import AbstractCapability, CombinedCapability, WrapperCapability
from pydantic_ai.capabilities.abstract import RawToolArgs
from pydantic_ai.exceptions import ModelRetry, UserError
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, AgentToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import ValidationError

from . import _core
from ._messages import retry, shown
from ._private import AgentInstructions, DynamicToolset
from ._runtime import ProxyRuntime
from .config import ToolProxyConfig
from .controls.call import envelope_retry, search_arguments_retry
from .controls.instructions import guidance
from .controls.request import offer_tools
from .controls.surface import ProxySurfaceToolset
from .controls.toolset import ControlToolset
from .explain import SearchExplanation, explain_tools
from .group import ToolProxyGroup
from .grouping.directory import Directory
from .grouping.members import GroupMemberToolset, GroupSourceCapability, dispatching
from .hybrid.vectors import ToolVectors
from .mcp_listing_cache import DEFAULT_MAX_AGE, ListingStore
from .mcp_servers.pool import DEFAULT_IDLE_TIMEOUT, DEFAULT_START_TIMEOUT

__all__ = ('ToolProxyCapability',)


@dataclass
class ProxyGuidance(AbstractCapability[AgentDepsT]):
    """The proxy's own instructions (how to search and call), the last child of the capabilities it wraps.

    A child, not an override of `ToolProxyCapability.get_instructions`: the grouped capabilities' instructions
    then reach the model exactly as Pydantic AI sends them without the proxy, those of a capability lowered below
    operator authority (`with_authority`, Pydantic AI 2.78 and newer) included, which Pydantic AI states as framed
    data and never in the instruction prefix.
    """

    runtime: ProxyRuntime

    def get_instructions(self) -> AgentInstructions[AgentDepsT] | None:
        return self._guidance

    def _guidance(self, ctx: RunContext[AgentDepsT]) -> str | None:
        runtime = self.runtime
        if not runtime.instructions_enabled(ctx) or not runtime.directory(ctx):
            return None
        return guidance(runtime.config)


@dataclass(init=False)
class ToolProxyCapability(WrapperCapability[AgentDepsT]):
    """Present grouped tool sources through two controls: search and call.

    Use it when an agent has more tools than fit in every model request: hundreds to tens of thousands of
    function or MCP tools. The model sees the ungrouped tools as before, plus `search_proxy_tools` (ranked,
    byte-budgeted discovery of complete schemas) and `call_proxy_tool` (one `{group, tool, arguments}`
    envelope). Every grouped tool stays registered in the `ToolManager` under its canonical name
    `{group}__{tool}` and runs through Pydantic AI's own validation, hooks, retries, approvals and usage
    accounting; only its presentation changes.

    ```python
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

    proxy = ToolProxyCapability(
        groups={'crm': ToolProxyGroup(source=FunctionToolset([customer_name]), description='Customer records')}
    )
    agent = Agent('openai:gpt-5', capabilities=[proxy])
    ```

    Args:
        groups: Group name -> `ToolProxyGroup`. Consumed at construction: changing the mapping later does not
            reconfigure an existing agent. Names match `^[A-Za-z][A-Za-z0-9_-]{0,31}$` and hold no `__`;
            descriptions are non-blank and at most 512 characters. An empty mapping exposes no controls.
        config: Control names and discovery limits; `ToolProxyConfig()` when omitted.

    Raises:
        ValueError: an invalid group name or description, naming the group, or a source capability with
            `defer_loading=True`.
        TypeError: `groups` is not a mapping of str to `ToolProxyGroup`, or one source instance is used by two groups.
        pydantic_ai.exceptions.UserError: at run preparation, for a member that cannot be proxied (deferred
            loading, provider-native, external or output tool), or a name collision (two members with one
            local name in a group, a canonical name equal to another tool's name, a control name equal to an
            existing tool); the message names both sides.
    """

    groups: Mapping[str, ToolProxyGroup[AgentDepsT]]
    config: ToolProxyConfig
    _runtime: ProxyRuntime

    def __init__(
        self, groups: Mapping[str, ToolProxyGroup[AgentDepsT]], *, config: ToolProxyConfig | None = None
    ) -> None:
        if not isinstance(groups, Mapping):
            raise TypeError(
                f'ToolProxyCapability(groups=...) must be a mapping of group name to ToolProxyGroup, got {groups!r}'
            )
        if config is None:
            config = ToolProxyConfig()
        elif not isinstance(config, ToolProxyConfig):
            raise TypeError(f'ToolProxyCapability(config=...) must be a ToolProxyConfig, got {config!r}')
        frozen = _checked_groups(groups)
        runtime = ProxyRuntime(
            config=config,
            descriptions={name: g.description for name, g in frozen.items()},
            group_order=list(frozen),
        )
        _bind_server_descriptions(frozen, runtime)
        # Capability sources keep their native binding and hooks through `GroupSourceCapability`; toolset sources
        # are wrapped directly, which spares every member one capability-ownership layer per step.
        self._setup(
            frozen,
            runtime,
            capability_sources=[
                GroupSourceCapability(wrapped=g.source, group=name, owner=runtime)
                for name, g in frozen.items()
                if isinstance(g.source, AbstractCapability)
            ],
            member_toolsets=[
                GroupMemberToolset(wrapped=g.source, group=name, owner=runtime)
                for name, g in frozen.items()
                if not isinstance(g.source, AbstractCapability)
            ],
        )

    def _setup(
        self,
        groups: dict[str, ToolProxyGroup[AgentDepsT]],
        runtime: ProxyRuntime,
        *,
        capability_sources: list[AbstractCapability[AgentDepsT]],
        member_toolsets: list[GroupMemberToolset[AgentDepsT]],
    ) -> None:
        self._member_toolsets = member_toolsets
        self.groups = MappingProxyType(groups)
        self.config = runtime.config
        self._runtime = runtime
        self._controls = ControlToolset(runtime)
        children: list[AbstractCapability[AgentDepsT]] = list(capability_sources)
        if groups:
            children.append(ProxyGuidance(runtime))
        WrapperCapability.__init__(self, wrapped=CombinedCapability(children))

    async def stop_mcp_servers(self) -> int:
        """Stop the stdio MCP servers of this capability's `mcpServers` groups (`from_mcp_config`) that run on the
        running event loop, and wait until their processes ended; a later run starts them again. For a host's
        shutdown (a web app's lifespan) or a test: servers otherwise stop when idle, when their event loop ends, or
        at exit. Returns how many were running.
        """
        from .mcp_servers.toolset import MCPServerToolset

        stopped = 0
        for group in self.groups.values():
            source = group.source
            if isinstance(source, MCPServerToolset) and source.pool is not None:
                current = source.pool.current()
                if current is not None and current.state in ('starting', 'up'):
                    stopped += 1
                await source.pool.aclose()
        return stopped

    @classmethod
    def from_mcp_config(
        cls,
        path: str | os.PathLike[str],
        *,
        descriptions: Mapping[str, str] | None = None,
        config: ToolProxyConfig | None = None,
        server_log: str | os.PathLike[str] | None = None,
        lazy: bool | Collection[str] = False,
        listing_cache: str | os.PathLike[str] | ListingStore | None = 'default',
        listing_max_age: float = DEFAULT_MAX_AGE,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> ToolProxyCapability[Any]:
        """One group per server of an `mcpServers` JSON file (Claude Desktop, Claude Code, Cursor), read by Pydantic
        AI's `pydantic_ai.mcp.load_mcp_toolsets` (with its `${VAR}` and `${VAR:-default}` expansion).

        ```python
        import json, sys, tempfile
        from pydantic_ai_toolproxy import ToolProxyCapability

        servers = {'notes server': {'command': sys.executable, 'args': ['examples/mcp_server.py']}}
        with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as file:
            json.dump({'mcpServers': servers}, file)
        proxy = ToolProxyCapability.from_mcp_config(file.name, descriptions={'notes server': 'Notes and weather'})
        assert list(proxy.groups) == ['notes_server']  # nothing is started until a run enters the servers
        ```

        Each group lists its tools under the server's own names (not Pydantic AI's per-server prefix). The group id
        is the server name made valid by `grouping.names.group_ids` (e.g. `my server.v2` -> `my_server_v2`, a name too long
        or taken cut and given a 6-hex-digit hash of itself); the
        description is `descriptions[server]` or `Tools of the MCP server "<server>"`. A server that does not start
        is caught when a run enters it (where Pydantic AI would fail the run): that run goes on without its group,
        and a warning naming the server, with the last lines of its stderr, is logged on the `pydantic_ai_toolproxy`
        logger. A listed tool that cannot be a proxy member (a name such as `""`) is left out with one warning.

        A stdio server is started by the first run (or `async with agent:`) that needs it and kept for the later
        runs on the same event loop, as Pydantic AI keeps it: the second run starts nothing. It stops when no run
        has used it for `idle_timeout` seconds (None: never while its loop lives; also when its loop no longer runs,
        stopped then by PID from a watcher thread), when its event loop ends (`asyncio.run` returns, or the loop is
        closed by hand), or at interpreter exit (also on a SIGTERM left at Python's default); each event loop has
        its own process. Its stderr goes to `<server_log>/<group id>.log` when `server_log` names a
        folder, else to a private temporary file of this process.

        Servers start concurrently at run entry, a few at a time (`mcp_servers.pool.start_slots`), each within
        `start_timeout` seconds counted from its own slot (an entry's `startup_timeout_sec` or `startup_timeout_ms`
        key wins). A server whose listing is in `listing_cache` and fresh is started in the background instead: the
        run's first model request is built from the cached listing, and a call waits for the start (a start that
        fails then answers calls with a `ToolFailed`; the group stays). A server that did not start costs only the
        run that found it: later runs leave its group out at
        once, and it is retried in the background after 30 s (doubling up to 10 minutes). With `lazy=True`
        (or a collection of server names), a server whose listing is in `listing_cache` and fresh is not started at
        run entry: search ranks its cached tools, and the first `call_proxy_tool` of one of its tools starts it
        inside the run (with Pydantic AI's own MCP client, stopped when the run ends). A server without a fresh
        entry is started to list its tools, as without `lazy`. Every start stores what the server listed
        (`listing_cache`: `'default'`, a file beside the embedding cache, `$TOOLPROXY_LISTING_CACHE` or `off`; a
        path; a `mcp_listing_cache.ListingStore`; or None), and a cached entry fresh for the server's `ttlMs` (when
        above zero) else `listing_max_age` seconds. A server the file gives no description gets one from what it
        says about itself (its `instructions`, else its `serverInfo` title, as plain text of at most 512
        characters: `mcp_servers.describe.described`), read from its cached listing, else from its first live start
        before the run's first model request, so the first run's model request equals every later one's.

        Raises:
            OSError: a missing or unreadable file.
            ValueError: what `load_mcp_toolsets` raises (invalid JSON or shape, an undefined `${VAR}`), a
                `descriptions` key that is no server of the file, or an invalid description (naming the group),
                `lazy` naming a server the file does not have, a `listing_max_age`, `start_timeout`, `idle_timeout`
                (unless None) or entry start timeout that is not a positive number.
            TypeError: `lazy` or `listing_cache` of another type.
        """
        from .mcp_servers.config import mcp_groups

        groups = mcp_groups(
            path,
            descriptions,
            server_log,
            lazy=lazy,
            listing_cache=listing_cache,
            max_age=listing_max_age,
            start_timeout=start_timeout,
            idle_timeout=idle_timeout,
        )
        return cls(groups=groups, config=config)

    @classmethod
    def _placed(
        cls, groups: Mapping[str, ToolProxyGroup[AgentDepsT]], *, config: ToolProxyConfig
    ) -> ToolProxyCapability[AgentDepsT]:
        """Package-internal: the surface of groups whose sources are installed elsewhere in the same agent, in place
        (`harness.plan_apply` builds one per applied `ToolProxyPlan`). It holds the controls, the guidance and the
        group list, and installs no source: each source joins the surface as `group_source(source, group)`.

        `groups` maps each group name to a `ToolProxyGroup` describing it, already validated (a `ToolProxyPlan`
        validates names and descriptions); its `source` is informational (what the group is formed from) and is
        neither wrapped nor installed. The runtime is built directly from the names and descriptions.
        """
        surface = cls.__new__(cls)
        frozen = dict(groups)
        runtime = ProxyRuntime(
            config=config,
            descriptions={name: g.description for name, g in frozen.items()},
            group_order=list(frozen),
        )
        surface._setup(frozen, runtime, capability_sources=[], member_toolsets=[])
        return surface

    def group_source(self, source: AbstractCapability[AgentDepsT], group: str) -> GroupSourceCapability[AgentDepsT]:
        """Package-internal: `source` wrapped so that its toolset lands as members of `group` of this surface, with
        its hooks, binding and capability-level instructions its own (`GroupSourceCapability`). Install the result
        where `source` was; the harness's plan application does, for selected capabilities and plugin contributions.

        Raises:
            ValueError: `group` is not one of this surface's groups.
        """
        if group not in self.groups:
            raise ValueError(f'ToolProxy group {group!r} is not a group of this surface ({list(self.groups)!r}).')
        return GroupSourceCapability(wrapped=source, group=group, owner=self._runtime)

    def directory_of(self, tools: Mapping[str, ToolsetTool[Any]]) -> Directory:
        """Package-internal: this surface's grouped directory of one step whose prepared tools are `tools` (name ->
        `ToolsetTool`, e.g. a copy of `ctx.tool_manager.tools`): the view the controls search and dispatch through.
        The CLI reads the members of a probe run with it."""
        return Directory.from_tools(tools, self._runtime, self._runtime.group_order)

    def __repr__(self) -> str:
        return f'ToolProxyCapability(groups={list(self.groups)!r}, config={self.config!r})'

    @property
    def tool_vectors(self) -> ToolVectors | None:
        """Package-internal: the surface's tool and query vectors (hybrid search), None without an embedder; the CLI's
        `toolproxy embed` fills them through `cli._embed.embed_surface`."""
        return self._runtime.vectors

    @property
    def index_builds(self) -> int:
        """How many times the shared search index changed (incremental syncs), for tests and benchmarks."""
        return self._runtime.search_index.builds

    def explain(
        self, query: str, tools: Sequence[tuple[str, str]], *, group: str | None = None
    ) -> list[SearchExplanation]:
        """Why each of `tools` (`(group, tool)` pairs) has the score it is ranked by for `query`.

        Explains the search index as the last search of this proxy left it (a search syncs the index to its step's
        tools), so search first, e.g. with `toolproxy search --explain`, which runs one through a real agent step.
        `group`: the group the explained search was restricted to, if any. It restricts nothing here (a tool of
        another group is explained as if selected), but the score follows that search's rule: when the query's
        other words find nothing in the group, its function words and numbers find by themselves.

        ```python
        from pydantic_ai import Agent
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

        def customer_name(customer_id: int) -> str:
            '''Look up the display name for a customer ID.'''
            return 'Ada'

        proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(
            source=FunctionToolset([customer_name]), description='Customer records')})

        def model(messages, info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': 'customer records name'})])
            return ModelResponse(parts=[TextPart('done')])

        Agent(FunctionModel(model), capabilities=[proxy]).run_sync('go')
        [why] = proxy.explain('customer records name', [('crm', 'customer_name')])
        assert {m.field for m in why.matches} >= {'tool name', 'group description'}
        ```

        With an embedder, the hybrid fields (`keyword_share`, `cosine`, `semantic`, `semantic_share`, `weight`,
        `fused`) are
        filled when a recent search embedded this very `query` (its vector is taken from the query cache; explain
        never calls the embedder), and None otherwise.

        Returns:
            One `SearchExplanation` per pair, in order; a pair the index does not hold (no search yet, or not a
            member of the searched step) explains as a score of 0 with no matches.
        """
        return explain_tools(self._runtime, query, tools, group)

    # --- contributions ---

    def get_toolset(self) -> AgentToolset[AgentDepsT] | None:
        if not self.groups:
            return super().get_toolset()
        from_capabilities = super().get_toolset()
        toolsets: list[AbstractToolset[AgentDepsT]] = [*self._member_toolsets, self._controls]
        if from_capabilities is not None:
            if not isinstance(from_capabilities, AbstractToolset):
                from_capabilities = DynamicToolset[AgentDepsT](toolset_func=from_capabilities)
            toolsets.append(from_capabilities)
        return ProxySurfaceToolset(toolsets)

    # --- hooks ---

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractCapability[AgentDepsT]:
        """Bind the sources to the run (`WrapperCapability.for_run`); refuse a realtime session.

        A realtime session (`agent.realtime(model).session()`) fixes the tools it advertises at connect and never
        calls `before_model_request`, where the proxy hides its members and adds the group enum: the model would be
        offered every member directly and each call of one refused. Capabilities are bound (`for_run`) before the
        session connects, so the refusal comes first: nothing is connected or advertised.

        Raises:
            UserError: in a realtime session (`ctx.realtime`), when the proxy has groups; naming realtime.
        """
        if self.groups and getattr(ctx, 'realtime', False) is True:
            raise UserError(
                'ToolProxyCapability does not support realtime sessions (agent.realtime(model).session()): a '
                'session never calls before_model_request, where the proxy hides its grouped tools and adds the '
                'group list, so the model would be offered every grouped tool directly. Run the proxy in agent runs '
                '(run, run_stream, iter), and give a realtime session its tools directly, from an agent without '
                'ToolProxyCapability.'
            )
        return await super().for_run(ctx)

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        request_context = await super().before_model_request(ctx, request_context)
        if not self.groups:
            return request_context
        return await offer_tools(ctx, request_context, self._runtime, self._controls)

    async def before_tool_validate(
        self, ctx: RunContext[AgentDepsT], *, call: ToolCallPart, tool_def: ToolDefinition, args: RawToolArgs
    ) -> RawToolArgs:
        if self.groups:
            member = self._runtime.directory(ctx).member(call.tool_name)
            if member is not None and dispatching(call.tool_name) is None and _called_by_model(ctx, call):
                name = self._runtime.config.call_name
                raise retry(
                    f'{shown(call.tool_name)} cannot be called directly. Call `{name}` with '
                    f'{{"group": "{member.group}", "tool": "{member.local_name}", "arguments": {{...}}}} instead.'
                )
        return await super().before_tool_validate(ctx, call=call, tool_def=tool_def, args=args)

    async def on_tool_validate_error(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawToolArgs,
        error: ValidationError | ModelRetry,
    ) -> Any:
        """Arguments that fail a control's own validation (wrong types, missing or extra keys, invalid JSON) get a
        short retry saying what to send instead, never Pydantic AI's error list with the model's input in full."""
        config = self._runtime.config
        manager = ctx.tool_manager
        if (
            self.groups
            and call.tool_name in (config.search_name, config.call_name)
            and manager is not None
            and manager.tools
        ):
            tool = manager.tools.get(call.tool_name)
            if tool is not None and tool.toolset is self._controls:
                if call.tool_name == config.call_name:
                    raise envelope_retry(error, config.search_name, config.call_name) from None
                raise search_arguments_retry(error, config.search_name) from None
        return await super().on_tool_validate_error(ctx, call=call, tool_def=tool_def, args=args, error=error)


def _checked_groups(groups: Mapping[str, ToolProxyGroup[Any]]) -> dict[str, ToolProxyGroup[Any]]:
    """A copy of `groups` once each name, description and source is checked (`ToolProxyCapability`'s Raises)."""
    frozen: dict[str, ToolProxyGroup[Any]] = {}
    seen_sources: dict[int, str] = {}
    for name, group in groups.items():
        if not isinstance(name, str):
            raise TypeError(f'ToolProxy group names must be str, got {name!r}')
        _core.validate_group_name(name)
        if not isinstance(group, ToolProxyGroup):
            raise TypeError(f'ToolProxy group {name!r} must be a ToolProxyGroup, got {type(group).__name__}')
        _core.validate_group_description(name, group.description)
        if getattr(group.source, 'defer_loading', False) is True:
            raise ValueError(
                f'The source of ToolProxy group {name!r} ({type(group.source).__name__}) has defer_loading=True; proxy '
                'discovery and native deferred loading are distinct interfaces. Remove defer_loading=True from the '
                'source to group it, or install it directly (ungrouped) to keep deferred loading.'
            )
        if (other := seen_sources.get(id(group.source))) is not None:
            raise TypeError(
                f'ToolProxy groups {other!r} and {name!r} use the same source instance; a source belongs to one '
                'group. Combine the groups, or construct the source twice with distinct tools.'
            )
        seen_sources[id(group.source)] = name
        frozen[name] = group
    return frozen


def _called_by_model(ctx: RunContext[Any], call: ToolCallPart) -> bool:
    """Whether `call` is one of the model's own calls in the latest response (not a nested dispatch).

    Nested dispatches of a member (this proxy's call control, or a13n-harness CodeAct resolving a call
    envelope to its target) carry call ids the model never produced.
    """
    for message in reversed(ctx.messages):
        if isinstance(message, ModelResponse):
            return any(
                isinstance(part, ToolCallPart)
                and part.tool_call_id == call.tool_call_id
                and part.tool_name == call.tool_name
                for part in message.parts
            )
    return False


def _bind_server_descriptions(groups: dict[str, ToolProxyGroup[Any]], runtime: ProxyRuntime) -> None:
    """Let each `mcpServers` group (`mcp_servers.toolset.MCPServerToolset` source without a host description) give the
    surface the description its server says at its first live start, before the run's first model request, so a
    first run (no cached listing) describes it as every later one (`ProxyRuntime.redescribe`; `groups`, the
    surface's `groups` mapping, gets the described group too)."""
    module = sys.modules.get('pydantic_ai_toolproxy.mcp_servers.toolset')
    if module is None:  # no MCP server group was built in this process
        return
    surface = weakref.ref(runtime)
    for name, group in groups.items():
        if isinstance(group.source, module.MCPServerToolset):

            def tell(description: str, name: str = name) -> bool:
                held = surface()
                if held is None:
                    return False
                held.redescribe(name, description)
                if held.descriptions.get(name) == description and name in groups:
                    groups[name] = replace(groups[name], description=description)
                return True

            group.source.bind_description(tell)
