"""Interleaved tenants: one shared capability whose source lists per-deps member sets (one catalogue per tenant).

Concurrent runs of different tenants interleave their searches; each keeps its own index (`SearchIndexCache`), so
no search re-indexes another tenant's tools, and every run only ever sees its own tenant's tools.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets._dynamic import DynamicToolset
from support import CALL, SEARCH, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy._index_cache import SearchIndexCache

TOOLS = 40


@dataclass
class Tenant:
    name: str


def catalogue(tenant: str) -> FunctionToolset[Tenant]:
    """`TOOLS` tools only `tenant` has (`{tenant}_op_{i}`), plus `whoami`, a name every tenant has."""

    async def op(**kwargs: Any) -> str:
        return tenant

    async def whoami() -> str:
        return f'I serve {tenant}'

    return FunctionToolset(
        [
            *(
                Tool.from_schema(
                    op,
                    name=f'{tenant}_op_{i}',
                    description=f'Operate record {i} of the {tenant} account',
                    json_schema={'type': 'object', 'properties': {'record': {'type': 'string'}}},
                )
                for i in range(TOOLS)
            ),
            Tool(whoami, description=f'Which account these tools belong to ({tenant}).'),
        ]
    )


def tenant_proxy(tenants: list[str]) -> ToolProxyCapability[Tenant]:
    catalogues = {t: catalogue(t) for t in tenants}
    source = DynamicToolset[Tenant](toolset_func=lambda ctx: catalogues[ctx.deps.name], per_run_step=True)
    return ToolProxyCapability(groups={'account': ToolProxyGroup(source=source, description='The account tools')})


def searching_model(searches: int) -> FunctionModel:
    """Per run: `searches` steps with one search each (yielding to other runs first), then a call of `whoami`."""

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(0)  # let the other tenants' runs interleave with this one at every step
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < searches:
            query = 'operate record account' if step % 2 else ''
            return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': query, 'limit': 10})])
        if step == searches:
            return ModelResponse(parts=[ToolCallPart(CALL, {'group': 'account', 'tool': 'whoami', 'arguments': {}})])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(model)


def assert_own_tools_only(tenant: str, messages: list[ModelMessage], searches: int) -> None:
    parts = returns(messages)
    pages = [page_of(p) for p in parts if p.tool_name == SEARCH]
    assert len(pages) == searches
    for page in pages:
        assert page['total'] in (TOOLS, TOOLS + 1)  # every own tool (and whoami) matches; no other tenant's
        assert page['tools'] and all(t['tool'].startswith(f'{tenant}_') or t['tool'] == 'whoami' for t in page['tools'])
    [call] = [p for p in parts if p.tool_name == CALL]
    assert call.model_response_str() == f'I serve {tenant}'


async def test_interleaved_tenants_each_see_their_own_tools_and_keep_their_own_index() -> None:
    tenants = ['acme', 'globex', 'initech']
    proxy = tenant_proxy(tenants)
    agent = Agent(searching_model(6), deps_type=Tenant, capabilities=[proxy])
    runs = [t for t in tenants for _ in range(2)]  # two concurrent runs per tenant
    results = await asyncio.gather(*(agent.run('go', deps=Tenant(t)) for t in runs))
    for tenant, result in zip(runs, results):
        assert_own_tools_only(tenant, result.all_messages(), 6)
    cache = proxy._runtime.search_index
    # 36 interleaved searches: one build per tenant, none per search.
    assert proxy.index_builds == len(tenants), proxy.index_builds
    assert len(cache.slots) == len(tenants)

    again = await asyncio.gather(*(agent.run('again', deps=Tenant(t)) for t in reversed(runs)))
    for tenant, result in zip(reversed(runs), again):
        assert_own_tools_only(tenant, result.all_messages(), 6)
    assert proxy.index_builds == len(tenants)  # later runs of the same tenants reuse their indexes


async def test_more_tenants_than_indexes_stay_correct_and_bounded() -> None:
    tenants = [f't{i}' for i in range(5)]
    proxy = tenant_proxy(tenants)
    runtime = proxy._runtime
    runtime.search_index = SearchIndexCache(runtime.descriptions, max_indexes=2)
    agent = Agent(searching_model(3), deps_type=Tenant, capabilities=[proxy])
    results = await asyncio.gather(*(agent.run('go', deps=Tenant(t)) for t in tenants))
    for tenant, result in zip(tenants, results):
        assert_own_tools_only(tenant, result.all_messages(), 3)
    assert len(runtime.search_index.slots) == 2  # the bound holds; the least recently searched index is reused


async def test_the_record_bound_drops_least_recently_searched_indexes() -> None:
    tenants = ['a', 'b', 'c']
    proxy = tenant_proxy(tenants)
    runtime = proxy._runtime
    runtime.search_index = cache = SearchIndexCache(runtime.descriptions, max_tools=2 * (TOOLS + 1))
    agent = Agent(searching_model(1), deps_type=Tenant, capabilities=[proxy])
    for tenant in tenants:
        assert_own_tools_only(tenant, (await agent.run('go', deps=Tenant(tenant))).all_messages(), 1)
        assert sum(len(slot) for slot in cache.slots) <= 2 * (TOOLS + 1)
    assert len(cache.slots) == 2 and cache.current.holds('account__c_op_0')


def test_tenants_in_threads_never_cross() -> None:
    tenants = ['north', 'south', 'east', 'west']
    proxy = tenant_proxy(tenants)
    agent = Agent(searching_model(4), deps_type=Tenant, capabilities=[proxy])
    failures: list[BaseException] = []

    def run(tenant: str) -> None:
        try:
            for _ in range(3):
                result = asyncio.run(agent.run('go', deps=Tenant(tenant)))  # one event loop per thread, closed after
                assert_own_tools_only(tenant, result.all_messages(), 4)
        except BaseException as error:  # reported below, in the test's thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(t,)) for t in tenants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]
    assert proxy.index_builds == len(tenants)


async def test_a_catalogue_that_changes_between_runs_keeps_one_index_updated_incrementally() -> None:
    tools = [f'tool_{i}' for i in range(TOOLS)]

    def listing(ctx: RunContext[None]) -> FunctionToolset[None]:
        async def op(**kwargs: Any) -> str:
            return 'ok'

        return FunctionToolset(
            [Tool.from_schema(op, name=n, description=f'Tool {n}', json_schema={'type': 'object'}) for n in tools]
        )

    proxy = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=DynamicToolset[None](toolset_func=listing), description='G')}
    )
    agent = Agent(searching_model(1), capabilities=[proxy])
    for i in range(6):
        tools.append(f'added_{i}')  # the catalogue grows between runs: not another tenant
        await agent.run('go')
    cache = proxy._runtime.search_index
    assert len(cache.slots) == 1 and len(cache.current) == TOOLS + 6
