"""What one model request offers: the step's members hidden, the two controls advertised with the step's groups,
and short retries for unknown tool names (`ToolProxyCapability.before_model_request` calls `offer_tools`).

The request's `function_tools` already hold what the run's toolsets listed for the step (members under their
canonical names, the controls, ungrouped tools); only the members are taken out and the controls replaced by
their advertised copies, so the model sees ungrouped tools as before plus the two controls.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic_ai.exceptions import UserError
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext, ToolDefinition

from .._runtime import ProxyRuntime
from .surface import refuse_rewrapping
from .toolset import ControlToolset, advertised_controls
from .unknown import shorten_unknown_tool_retries

__all__ = ('offer_tools',)


async def offer_tools(
    ctx: RunContext[Any], request_context: ModelRequestContext, runtime: ProxyRuntime, controls: ControlToolset
) -> ModelRequestContext:
    """`request_context` with the step's members left out of its `function_tools` and the controls of `controls`
    advertised for the step's groups (left out too while the step has no group); unknown-name retries of the
    request's messages shortened. Syncs the step's index, and starts embedding its new tools without waiting.

    Raises:
        UserError: a renaming toolset re-owns the proxy's tools (`refuse_rewrapping`), or something defers the
            controls (`ToolSearch(tools='all')` beside the proxy).
    """
    directory = runtime.directory(ctx)
    runtime.search_index.keep_up(directory, ctx.run_id)
    if runtime.vectors is not None:
        await runtime.vectors.wait_for_tools(0)  # start embedding the step's new tools now, without waiting
    params = request_context.model_request_parameters
    config = runtime.config
    manager_tools = ctx.tool_manager.tools if ctx.tool_manager is not None and ctx.tool_manager.tools else {}
    search_def = call_def = None
    kept: list[ToolDefinition] = []
    members = directory.tools  # the dict itself: a membership test per offered tool, in C
    for tool_def in params.function_tools:
        name = tool_def.name
        if name in members:
            continue
        if name in (config.search_name, config.call_name):
            tool = manager_tools.get(name)
            if tool is not None and tool.toolset is controls:
                if name == config.search_name:
                    search_def = tool_def
                else:
                    call_def = tool_def
                continue
        kept.append(tool_def)
    refuse_rewrapping(directory.foreign_toolsets, controls)
    if any(d is not None and d.defer_loading for d in (search_def, call_def)):
        raise UserError(
            f'Something defers the ToolProxy controls ({config.search_name!r}, {config.call_name!r}), e.g. '
            "Pydantic AI's ToolSearch(tools='all') beside ToolProxyCapability: the model would be offered no way "
            'to search or call the grouped tools, and could find the grouped tools themselves by their canonical '
            'names. Select only the tools to defer (ToolSearch(tools=[names]) or a predicate that leaves the '
            "controls and the grouped tools out): the grouped tools are already behind the proxy's own search."
        )
    if directory.groups and search_def is not None and call_def is not None:
        kept.extend(advertised_controls(controls, search_def, call_def, directory.groups))
    request_context.model_request_parameters = replace(params, function_tools=kept)
    shorten_unknown_tool_retries(request_context.messages, runtime, directory, [t.name for t in kept], ctx.run_id)
    return request_context
