"""Control descriptions, group enums, generated guidance and source instructions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.tools import ToolDefinition
from support import CALL, SEARCH, Script, last_return, page_of
from tools_fixtures import billing_toolset, crm_toolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup


def proxy(config: ToolProxyConfig | None = None) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(
        groups={
            'crm': ToolProxyGroup(source=crm_toolset(), description='Customer records and account operations'),
            'billing': ToolProxyGroup(source=billing_toolset(), description='Invoices and refunds'),
        },
        config=config,
    )


async def test_controls_carry_group_summaries_and_enum() -> None:
    script = Script(['ok'])
    await Agent(script.model, capabilities=[proxy()]).run('x')
    search, call = script.tool_def(SEARCH), script.tool_def(CALL)
    for d in (search, call):
        assert '- crm: Customer records and account operations' in d.description
        assert '- billing: Invoices and refunds' in d.description
        assert 'customer_name' not in d.description  # summaries only, never member schemas
    assert search.parameters_json_schema['properties']['group']['anyOf'][0]['enum'] == ['crm', 'billing']
    assert call.parameters_json_schema['properties']['group']['enum'] == ['crm', 'billing']
    assert call.parameters_json_schema['required'] == ['group', 'tool', 'arguments']


async def test_guidance_names_configured_controls_and_source_instructions_are_withheld() -> None:
    script = Script(['ok'])
    config = ToolProxyConfig(search_name='find_operations', call_name='invoke_operation')
    await Agent(script.model, capabilities=[proxy(config)]).run('x')
    instructions = script.infos[0].instructions or ''
    assert '`find_operations`' in instructions and '`invoke_operation`' in instructions
    for point in (
        'discover the exact tool schema',
        'arguments` object',
        'Reuse a schema',
        'next_offset',
        'inspect the current state',
    ):
        assert point in instructions
    assert 'Use numeric customer IDs' not in instructions
    assert sorted(script.offered(0)) == ['find_operations', 'invoke_operation']


@dataclass
class Deps:
    toolset_instructions: bool


async def test_instructions_off_by_config_or_deps() -> None:
    for config, deps in ((ToolProxyConfig(include_instructions=False), None), (None, Deps(toolset_instructions=False))):
        script = Script([[(SEARCH, {'query': 'customer name'})], 'ok'])
        agent = Agent(script.model, capabilities=[proxy(config)], deps_type=object)
        result = await agent.run('x', deps=deps)
        assert 'discover the exact tool schema' not in (script.infos[0].instructions or '')
        assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['instructions'] == []


async def test_no_surviving_member_means_no_controls_and_no_guidance() -> None:
    async def drop_members(ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [t for t in tool_defs if '__' not in t.name]

    def ping() -> str:
        """Ungrouped."""
        return 'pong'

    script = Script(['ok'])
    await Agent(script.model, tools=[ping], capabilities=[proxy(), PrepareTools(drop_members)]).run('x')
    assert script.offered(0) == ['ping']
    assert 'discover the exact tool schema' not in (script.infos[0].instructions or '')


async def test_enum_and_summaries_follow_the_surviving_groups() -> None:
    async def drop_billing(ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [t for t in tool_defs if not t.name.startswith('billing__')]

    script = Script(['ok'])
    await Agent(script.model, capabilities=[proxy(), PrepareTools(drop_billing)]).run('x')
    call = script.tool_def(CALL)
    assert call.parameters_json_schema['properties']['group']['enum'] == ['crm']
    assert 'billing' not in call.description
