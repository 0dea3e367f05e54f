"""The two control tools and the schemas advertised for them each step.

Spec: "Instructions and dynamic parameters": the prepared controls include a current group enum, and only
current group summaries are placed in the control descriptions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic_ai.tools import RunContext, Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ._call import run_call
from ._instructions import call_description, group_summary, search_description
from ._interop import CONTROLS_POLICY, ControlsPolicy, interop_for
from ._runtime import ProxyRuntime
from ._search import run_search

__all__ = ('ControlToolset', 'advertised_controls')


class ControlToolset(FunctionToolset[Any]):
    """A `FunctionToolset` holding the search and call controls of one proxy surface."""

    def __init__(self, runtime: ProxyRuntime) -> None:
        config = runtime.config

        async def search(
            ctx: RunContext[Any], query: str = '', group: str | None = None, limit: int | None = None, offset: int = 0
        ) -> dict[str, Any]:
            """Find grouped tools by keywords and return their current schemas."""
            return await run_search(ctx, runtime, query, group, limit, offset)

        async def call(ctx: RunContext[Any], group: str, tool: str, arguments: Any = None) -> Any:
            """Call one grouped tool by group, local tool name and an arguments object."""
            return await run_call(ctx, runtime, group, tool, arguments)

        super().__init__(
            [
                Tool(search, name=config.search_name, takes_ctx=True),
                # Sequential: a proxied call never runs concurrently with other calls of the same response.
                Tool(call, name=config.call_name, takes_ctx=True, sequential=True),
            ],
            id=None,
        )
        self.runtime = runtime

    @property
    def label(self) -> str:
        return f'ToolProxy controls ({self.runtime.config.search_name!r}, {self.runtime.config.call_name!r})'

    @property
    def codeact_policy(self) -> ControlsPolicy:
        """a13n-harness CodeAct policy of the controls: both are callable from code (spec: "Use with CodeAct")."""
        return CONTROLS_POLICY

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        # In an a13n-harness run, the call control is marked as a call envelope so CodeAct resolves it to the target.
        return interop_for(ctx).mark_controls(await super().get_tools(ctx), self.runtime.config.call_name)

    @property
    def tool_name_conflict_hint(self) -> str:
        return 'Choose other control names with ToolProxyConfig(search_name=..., call_name=...).'


def _search_schema(runtime: ProxyRuntime, groups: list[str]) -> dict[str, Any]:
    config = runtime.config
    return {
        'type': 'object',
        'properties': {
            'query': {
                'type': 'string',
                'default': '',
                'description': 'Keywords naming the action or object, e.g. "customer name". Empty browses.',
            },
            'group': {
                'anyOf': [{'type': 'string', 'enum': list(groups)}, {'type': 'null'}],
                'default': None,
                'description': 'Restrict the search to one group; omit to search all groups.',
            },
            'limit': {
                'anyOf': [{'type': 'integer', 'minimum': 1, 'maximum': config.max_results}, {'type': 'null'}],
                'default': None,
                'description': f'Results per page (default {config.default_limit}, at most {config.max_results}).',
            },
            'offset': {
                'type': 'integer',
                'minimum': 0,
                'default': 0,
                'description': 'Position to start from: 0, or the `next_offset` of the previous page.',
            },
        },
        'additionalProperties': False,
    }


def _call_schema(groups: list[str]) -> dict[str, Any]:
    return {
        'type': 'object',
        'properties': {
            'group': {'type': 'string', 'enum': list(groups), 'description': 'The group of the tool.'},
            'tool': {'type': 'string', 'description': 'The local tool name, as returned by search.'},
            'arguments': {
                'type': 'object',
                'additionalProperties': True,
                'description': "Arguments matching the tool's parameters_json_schema.",
            },
        },
        'required': ['group', 'tool', 'arguments'],
        'additionalProperties': False,
    }


def advertised_controls(
    runtime: ProxyRuntime, search_def: ToolDefinition, call_def: ToolDefinition, groups: list[str]
) -> tuple[ToolDefinition, ToolDefinition]:
    """The two control definitions as the model should see them this step."""
    summary = group_summary(groups, runtime.descriptions)
    return (
        replace(
            search_def,
            description=search_description(runtime.config, summary),
            parameters_json_schema=_search_schema(runtime, groups),
        ),
        replace(
            call_def,
            description=call_description(runtime.config, summary),
            parameters_json_schema=_call_schema(groups),
        ),
    )
