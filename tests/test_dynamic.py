"""Stale tools and dynamic sources: a member that disappears is neither found nor callable (issue 2, point 6)."""

from __future__ import annotations

import copy
from typing import Any

from conftest import Script, page_of, returns
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from tools_fixtures import CALLS, crm_toolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

SEARCH, CALL = 'search_proxy_tools', 'call_proxy_tool'


async def test_member_filtered_out_in_a_later_step_is_not_found_or_callable() -> None:
    async def hide_after_first_step(ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        if ctx.run_step > 1:
            return [t for t in tool_defs if t.name != 'crm__customer_name']
        return tool_defs

    script = Script(
        [
            [(SEARCH, {'query': 'customer name'})],
            [(SEARCH, {'query': 'customer name'})],
            [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
            'done',
        ]
    )
    proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=crm_toolset(), description='CRM')})
    agent = Agent(script.model, capabilities=[proxy, PrepareTools(hide_after_first_step)], retries=3)
    result = await agent.run('x')
    parts = returns(result.all_messages())
    first, second = (page_of(p) for p in parts if p.tool_name == SEARCH)
    assert first['tools'][0]['tool'] == 'customer_name'
    assert all(t['tool'] != 'customer_name' for t in second['tools'])
    call = next(p for p in parts if p.tool_name == CALL)
    assert call.outcome == 'retried' and 'no tool' in call.model_response_str(wrap_if_error=False)
    assert CALLS == []


async def test_dynamic_toolset_changes_between_steps_and_index_updates_incrementally() -> None:
    def tools_for_step(ctx: RunContext[Any]) -> FunctionToolset[Any]:
        def alpha_report() -> str:
            """Produce the alpha report."""
            return 'alpha'

        def beta_report() -> str:
            """Produce the beta report."""
            return 'beta'

        return FunctionToolset([alpha_report] if ctx.run_step <= 1 else [beta_report])

    from pydantic_ai.toolsets._dynamic import DynamicToolset

    dynamic = DynamicToolset(toolset_func=tools_for_step, per_run_step=True)
    proxy = ToolProxyCapability(groups={'reports': ToolProxyGroup(source=dynamic, description='Reports')})
    script = Script([[(SEARCH, {'query': 'report'})], [(SEARCH, {'query': 'report'})], [(SEARCH, {'query': 'report'})], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    pages = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert [t['tool'] for t in pages[0]['tools']] == ['alpha_report']
    assert [t['tool'] for t in pages[1]['tools']] == ['beta_report']
    assert [t['tool'] for t in pages[2]['tools']] == ['beta_report']
    builds = proxy.index_builds
    assert builds == 2, builds  # first build, one incremental change; the unchanged third step did not rebuild


async def test_members_follow_each_listing_of_the_source_order_and_content() -> None:
    """An unchanged listing reuses last step's members; a reordered, shrunk or edited listing is re-read exactly."""
    from dataclasses import replace

    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.toolsets import PreparedToolset

    def alpha() -> str:
        """Alpha."""
        return 'a'

    def beta() -> str:
        """Beta."""
        return 'b'

    def gamma() -> str:
        """Gamma."""
        return 'c'

    def noop() -> str:
        """Does nothing."""
        return 'ok'

    def listing(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        by_name = {d.name: d for d in defs}
        if ctx.run_step <= 2:  # the same listing twice
            return [by_name['alpha'], by_name['beta'], by_name['gamma']]
        if ctx.run_step == 3:  # reordered
            return [by_name['gamma'], by_name['alpha'], by_name['beta']]
        if ctx.run_step == 4:  # one edited
            return [by_name['gamma'], by_name['alpha'], replace(by_name['beta'], description='Beta, edited.')]
        return [by_name['alpha']]  # shrunk

    seen: list[list[tuple[str, str | None]]] = []

    class Record(AbstractCapability[Any]):
        async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
            tools = ctx.tool_manager.tools if ctx.tool_manager is not None and ctx.tool_manager.tools else {}
            seen.append([(n, t.tool_def.description) for n, t in tools.items() if n.startswith('g__')])
            return request_context

    source = PreparedToolset(FunctionToolset([alpha, beta, gamma]), listing)
    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=source, description='Letters')})
    script = Script([[('noop', {})]] * 4 + ['done'])
    await Agent(script.model, tools=[noop], capabilities=[proxy, Record()]).run('x')
    assert seen == [
        [('g__alpha', 'Alpha.'), ('g__beta', 'Beta.'), ('g__gamma', 'Gamma.')],
        [('g__alpha', 'Alpha.'), ('g__beta', 'Beta.'), ('g__gamma', 'Gamma.')],
        [('g__gamma', 'Gamma.'), ('g__alpha', 'Alpha.'), ('g__beta', 'Beta.')],
        [('g__gamma', 'Gamma.'), ('g__alpha', 'Alpha.'), ('g__beta', 'Beta, edited.')],
        [('g__alpha', 'Alpha.')],
    ]


async def test_index_follows_descriptions_and_schemas_edited_by_another_capability() -> None:
    """Same names each step, but a `PrepareTools` hook edits a description, then rebuilds an equal schema, then edits
    the schema: search ranks by the current text, and only real changes reach the index."""
    from dataclasses import replace

    def edit(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        out: list[ToolDefinition] = []
        for d in defs:
            if d.name == 'crm__customer_name' and ctx.run_step >= 2:
                d = replace(d, description='Look up the zeppelin registry.')
            if d.name == 'crm__customer_name' and ctx.run_step == 3:  # an equal schema, rebuilt
                d = replace(d, parameters_json_schema=copy.deepcopy(d.parameters_json_schema))
            if d.name == 'crm__customer_name' and ctx.run_step >= 4:
                schema = copy.deepcopy(d.parameters_json_schema)
                schema['properties']['airship_hangar'] = {'type': 'string'}
                d = replace(d, parameters_json_schema=schema)
            out.append(d)
        return out

    query = 'zeppelin airship hangar'
    script = Script([[(SEARCH, {'query': query})]] * 4 + ['done'])
    proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=crm_toolset(), description='CRM')})
    result = await Agent(script.model, capabilities=[proxy, PrepareTools(edit)]).run('x')
    pages = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert [t['tool'] for t in pages[0]['tools']] == []
    for page in pages[1:]:
        assert [t['tool'] for t in page['tools']] == ['customer_name']
    assert pages[1]['tools'][0]['description'] == 'Look up the zeppelin registry.'
    assert 'airship_hangar' not in pages[2]['tools'][0]['parameters_json_schema']['properties']
    assert 'airship_hangar' in pages[3]['tools'][0]['parameters_json_schema']['properties']
    assert proxy.index_builds == 3, proxy.index_builds  # first build, the description, the new schema (not the equal one)
