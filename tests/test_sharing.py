"""One ToolProxyCapability shared by concurrent runs shares one search index."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset
from support import Script, last_return, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

SEARCH = 'search_proxy_tools'


def widgets(n: int) -> FunctionToolset[Any]:
    async def op(**kwargs: Any) -> str:
        return 'ok'

    return FunctionToolset(
        [
            Tool.from_schema(
                op, name=f'widget_op_{i}', description=f'Operate widget number {i}', json_schema={'type': 'object'}
            )
            for i in range(n)
        ]
    )


async def test_concurrent_runs_share_one_index_build() -> None:
    proxy = ToolProxyCapability(groups={'w': ToolProxyGroup(source=widgets(500), description='Widgets')})

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': 'widget number 7'})])
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(model), capabilities=[proxy])
    results = await asyncio.gather(*(agent.run(f'run {i}') for i in range(100)))
    pages = {last_return(r.all_messages(), SEARCH).model_response_str() for r in results}
    assert len(pages) == 1  # every run got the byte-identical page
    assert page_of(last_return(results[0].all_messages(), SEARCH))['tools'][0]['tool'] == 'widget_op_7'
    assert proxy.index_builds == 1


async def test_unchanged_steps_do_not_rebuild_and_one_change_updates_incrementally() -> None:
    source = widgets(50)
    proxy = ToolProxyCapability(groups={'w': ToolProxyGroup(source=source, description='Widgets')})
    script = Script([[(SEARCH, {'query': 'widget'})], [(SEARCH, {'query': 'widget'})], 'done'])
    agent = Agent(script.model, capabilities=[proxy])
    await agent.run('x')
    assert proxy.index_builds == 1

    async def extra(**kwargs: Any) -> str:
        return 'new'

    source.add_tool(
        Tool.from_schema(
            extra, name='widget_calibrate', description='Calibrate a widget', json_schema={'type': 'object'}
        )
    )
    script.turns = [[(SEARCH, {'query': 'calibrate'})], [(SEARCH, {'query': ''})], 'done']
    script._n = 0
    result = await agent.run('x')
    assert proxy.index_builds == 2  # one incremental update for the added tool, none for the unchanged second step
    found, browse = (page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH)
    assert found['tools'][0]['tool'] == 'widget_calibrate'
    assert browse['total'] == 51


async def test_a_finished_run_leaves_no_step_directory_behind() -> None:
    """Each step's directory references all of that step's member tools; it goes when the step's ToolManager does,
    not at some later step, so a run that ends keeps none of them alive."""
    import gc

    from pydantic_ai_toolproxy.grouping.directory import Directory

    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=widgets(50), description='Widgets')})
    script = Script([[(SEARCH, {'query': 'widget 7'})], [(SEARCH, {'query': 'widget 9'})], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    assert page_of(last_return(result.all_messages(), SEARCH))['tools']
    del result
    gc.collect()
    assert proxy._runtime.directories._entries == {}
    assert not any(isinstance(o, Directory) for o in gc.get_objects())


async def test_the_index_follows_the_steps_of_the_run_that_searched_and_no_other() -> None:
    """No search, no index. After a search, that run's later steps keep the index in sync while they are prepared
    (a changed tool is upserted before any search needs it); another run's steps leave it alone until it searches."""
    from dataclasses import replace

    from pydantic_ai.capabilities import PrepareTools
    from pydantic_ai.tools import RunContext, ToolDefinition

    def edit(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        # From step 2 on, one member's description says what step (and run) this is.
        if ctx.run_step < 2:
            return defs
        return [
            replace(d, description=f'{ctx.prompt} step {ctx.run_step}') if d.name == 'w__widget_op_3' else d
            for d in defs
        ]

    def noop() -> str:
        """Does nothing."""
        return 'ok'

    proxy = ToolProxyCapability(groups={'w': ToolProxyGroup(source=widgets(20), description='Widgets')})
    script = Script([[('noop', {})]] * 3 + ['done'])
    agent = Agent(script.model, tools=[noop], capabilities=[proxy, PrepareTools(edit)])
    await agent.run('quiet')
    assert proxy.index_builds == 0  # nothing searched: nothing built

    script.turns, script._n = [[(SEARCH, {'query': 'widget'})], [('noop', {})], [('noop', {})], 'done'], 0
    await agent.run('searching')
    # Built by the search in step 1; steps 2, 3 and 4 each changed widget_op_3 and synced it while being prepared.
    assert proxy.index_builds == 4, proxy.index_builds

    script.turns, script._n = [[('noop', {})], [('noop', {})], 'done'], 0
    await agent.run('other')
    assert proxy.index_builds == 4  # another run's steps do not sync the index

    script.turns, script._n = [[(SEARCH, {'query': 'widget number 3'})], 'done'], 0
    result = await agent.run('other')
    # Its search in step 1 synced the index back to the unedited description (5), and its step 2 then kept it up (6).
    assert proxy.index_builds == 6, proxy.index_builds
    assert page_of(last_return(result.all_messages(), SEARCH))['tools'][0]['description'] == 'Operate widget number 3'
