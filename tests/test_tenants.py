"""Interleaved tenants: one shared capability whose source lists per-deps member sets (one catalogue per tenant).

Concurrent runs of different tenants interleave their searches; each keeps its own index (`SearchIndexCache`), so
no search re-indexes another tenant's tools, and every run only ever sees its own tenant's tools.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from support import CALL, SEARCH, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy._private import DynamicToolset
from pydantic_ai_toolproxy.grouping import member_listing as _member_listing
from pydantic_ai_toolproxy.search.index_cache import SearchIndexCache

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


class PerDepsToolset(AbstractToolset[Tenant]):
    """One toolset object for every run, listing the run's tenant's catalogue (no per-run copy of itself)."""

    def __init__(self, catalogues: dict[str, FunctionToolset[Tenant]]) -> None:
        self.catalogues = catalogues

    @property
    def id(self) -> str | None:
        return 'per-deps'

    async def get_tools(self, ctx: RunContext[Tenant]) -> dict[str, ToolsetTool[Tenant]]:
        return await self.catalogues[ctx.deps.name].get_tools(ctx)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Tenant], tool: ToolsetTool[Tenant]
    ) -> Any:
        return await self.catalogues[ctx.deps.name].call_tool(name, tool_args, ctx, tool)


SOURCES = ['dynamic', 'per-deps']
"""The two shapes of a per-tenant source: a `DynamicToolset` (copied per run) and one shared `PerDepsToolset`."""


def tenant_proxy(tenants: list[str], kind: str = 'dynamic') -> ToolProxyCapability[Tenant]:
    catalogues = {t: catalogue(t) for t in tenants}
    source: AbstractToolset[Tenant] = (
        DynamicToolset[Tenant](toolset_func=lambda ctx: catalogues[ctx.deps.name], per_run_step=True)
        if kind == 'dynamic'
        else PerDepsToolset(catalogues)
    )
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


@pytest.mark.parametrize('kind', SOURCES)
async def test_interleaved_tenants_each_see_their_own_tools_and_keep_their_own_index(kind: str) -> None:
    tenants = ['acme', 'globex', 'initech']
    proxy = tenant_proxy(tenants, kind)
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


@pytest.mark.parametrize('kind', SOURCES)
def test_tenants_in_threads_never_cross(kind: str) -> None:
    tenants = ['north', 'south', 'east', 'west']
    proxy = tenant_proxy(tenants, kind)
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


async def test_member_listings_are_kept_per_tenant_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    tenants = ['acme', 'globex', 'initech']
    proxy = tenant_proxy(tenants, 'per-deps')
    [members] = proxy._member_toolsets
    agent = Agent(searching_model(2), deps_type=Tenant, capabilities=[proxy])
    await asyncio.gather(*(agent.run('go', deps=Tenant(t)) for t in tenants))
    kept = {key: listing[1] for key, listing in members._listings.items()}
    assert len(kept) == len(tenants)  # interleaved listings each find their own tenant's members
    await asyncio.gather(*(agent.run('again', deps=Tenant(t)) for t in tenants))
    assert all(members._listings[key][1] == listing for key, listing in kept.items())  # the same members reused

    # A source that builds a fresh toolset at every step keeps only as many older listings as the bound allows.
    monkeypatch.setattr(_member_listing, '_MAX_OLDER_LISTED', TOOLS + 1)
    fresh = ToolProxyCapability(
        groups={
            'account': ToolProxyGroup(
                source=DynamicToolset[Tenant](toolset_func=lambda ctx: catalogue('x'), per_run_step=True),
                description='Fresh tools',
            )
        }
    )
    await Agent(searching_model(4), deps_type=Tenant, capabilities=[fresh]).run('go', deps=Tenant('x'))
    [fresh_members] = fresh._member_toolsets
    assert len(fresh_members._listings) <= 2


async def test_a_run_keeps_up_only_the_index_it_searched_last() -> None:
    catalogues = {t: catalogue(t) for t in ['a', 'b']}

    def listing(ctx: RunContext[Tenant]) -> FunctionToolset[Tenant]:
        # Run 'switch' lists tenant a's tools in its first step and tenant b's from then on.
        if ctx.deps.name == 'switch':
            return catalogues['a' if ctx.run_step <= 1 else 'b']
        return catalogues[ctx.deps.name]

    source = DynamicToolset[Tenant](toolset_func=listing, per_run_step=True)
    proxy = ToolProxyCapability(groups={'account': ToolProxyGroup(source=source, description='The account tools')})
    cache = proxy._runtime.search_index
    await Agent(searching_model(1), deps_type=Tenant, capabilities=[proxy]).run('go', deps=Tenant('b'))
    # Searches in steps 1 and 2 (tenant a's tools, then b's), then steps that only keep up their index.
    await Agent(searching_model(2), deps_type=Tenant, capabilities=[proxy]).run('go', deps=Tenant('switch'))
    assert proxy.index_builds == 2  # b's index, a's index; step 2 found b's, later steps kept b's up unchanged
    holding_a = [slot for slot in cache.slots if slot.holds('account__a_op_0')]
    assert len(holding_a) == 1 and len(holding_a[0]) == TOOLS + 1  # a's index was not synced to b's tools
