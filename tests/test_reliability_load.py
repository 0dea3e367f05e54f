"""Load: concurrent runs with run-bound tools, and a long run of steps whose tool set changes.

* 200 concurrent runs share one `Agent` and one `ToolProxyCapability`. The group's source is a capability whose
  `for_run` returns a replacement bound to the run's tenant (as `ContextualMCP` does), listing that tenant's
  own tools. Every run searches and calls; it must find and reach only its own tools, and a second round of
  the same 200 runs must return byte-identical results.
* A soak: steps over a catalog whose member set changes every step (a sliding window over a larger pool), with
  a search every step. After a warm-up, the process's resident memory must stay flat and every cache must stay
  bounded (directory cache entries, index records, synced definitions, live `Directory` objects).

CI runs a modest size; the long run from the README is

    TOOLPROXY_LOAD_RUNS=1000 TOOLPROXY_SOAK_STEPS=10000 TOOLPROXY_SOAK_TOOLS=10000 \\
        python -m pytest -q -s tests/test_reliability_load.py
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_ai.usage import UsageLimits
from pydantic_core import SchemaValidator, core_schema
from support import CALL, SEARCH

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy.grouping.directory import Directory

RUNS = int(os.environ.get('TOOLPROXY_LOAD_RUNS', '200'))
SOAK_STEPS = int(os.environ.get('TOOLPROXY_SOAK_STEPS', '600'))
SOAK_TOOLS = int(os.environ.get('TOOLPROXY_SOAK_TOOLS', '2000'))


# --- 200 concurrent runs with run-bound tools ---------------------------------------------------------------


@dataclass
class Tenant:
    """Run dependencies: which tenant this run serves."""

    name: str


@dataclass
class TenantTools(AbstractCapability[Tenant]):
    """A run-bound source: unbound it lists no tools; `for_run` returns a replacement for the run's tenant.

    The replacement's tools: `lookup_<tenant>` (a name only this tenant has), `whoami` (a name every tenant has,
    answering with the tenant it was bound to) and `ledger` (a per-tenant description). `bound_runs` counts
    the replacements made.
    """

    tenant: str | None = None
    bound_runs: list[str] = field(default_factory=list)

    async def for_run(self, ctx: RunContext[Tenant]) -> TenantTools:
        self.bound_runs.append(ctx.deps.name)
        await asyncio.sleep(0)  # let other runs interleave with binding
        return TenantTools(tenant=ctx.deps.name, bound_runs=self.bound_runs)

    def get_toolset(self) -> FunctionToolset[Tenant] | None:
        if self.tenant is None:
            return None
        tenant = self.tenant

        async def whoami(ctx: RunContext[Tenant]) -> str:
            await asyncio.sleep(0.001)  # a real await inside the call, so runs interleave mid-call
            return f'bound to {tenant}; run for {ctx.deps.name}'

        async def lookup(key: str) -> str:
            return f'{tenant}:{key}'

        async def ledger() -> str:
            return f'ledger of {tenant}'

        return FunctionToolset(
            [
                Tool(whoami, takes_ctx=True, description='Which tenant this tool set belongs to.'),
                Tool(lookup, name=f'lookup_{tenant}', description=f'Look up a record of tenant {tenant}.'),
                Tool(ledger, description=f'The accounting ledger of {tenant}.'),
            ]
        )


def tenant_model() -> FunctionModel:
    """Per run: search for `lookup`, browse everything, call own tools, then try another tenant's tool."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        responses = sum(isinstance(m, ModelResponse) for m in messages)
        prompt = messages[0].parts[0].content  # type: ignore[union-attr]
        own, other = prompt.split()
        if responses == 0:
            return ModelResponse(
                parts=[
                    ToolCallPart(SEARCH, {'query': 'lookup record'}, tool_call_id='find'),
                    ToolCallPart(SEARCH, {'query': '', 'limit': 10}, tool_call_id='browse'),
                ]
            )
        if responses == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(CALL, {'group': 'tenant', 'tool': 'whoami', 'arguments': {}}, tool_call_id='whoami'),
                    ToolCallPart(
                        CALL,
                        {'group': 'tenant', 'tool': f'lookup_{own}', 'arguments': {'key': 'k1'}},
                        tool_call_id='own',
                    ),
                    ToolCallPart(
                        CALL,
                        {'group': 'tenant', 'tool': f'lookup_{other}', 'arguments': {'key': 'k1'}},
                        tool_call_id='other',
                    ),
                    ToolCallPart(CALL, {'group': 'tenant', 'tool': 'ledger', 'arguments': {}}, tool_call_id='ledger'),
                ]
            )
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(model)


def results_of(messages: list[ModelMessage]) -> dict[str, str]:
    """Each tool result as the exact text the model received, by call id."""
    return {
        p.tool_call_id: f'{p.outcome}:{p.model_response_str()}'
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }


@pytest.mark.slow
async def test_200_concurrent_runs_each_reach_only_their_own_run_bound_tools() -> None:
    source = TenantTools()
    proxy = ToolProxyCapability(groups={'tenant': ToolProxyGroup(source=source, description='Tenant records')})
    agent = Agent(tenant_model(), deps_type=Tenant, capabilities=[proxy])
    tenants = [f't{i:04d}' for i in range(RUNS)]

    async def one(i: int) -> dict[str, str]:
        own, other = tenants[i], tenants[(i + 1) % len(tenants)]
        result = await agent.run(f'{own} {other}', deps=Tenant(own))
        assert result.output == 'done'
        return results_of(result.all_messages())

    rounds = []
    for _ in range(2):
        started = time.perf_counter()
        rounds.append(await asyncio.gather(*(one(i) for i in range(RUNS))))
        print(f'\n{RUNS} concurrent runs in {time.perf_counter() - started:.1f} s')
    first, second = rounds
    for i, results in enumerate(first):
        own, other = tenants[i], tenants[(i + 1) % len(tenants)]
        found = json.loads(results['find'].removeprefix('success:'))
        # Its own lookup tool first, and only its own tools (the group description, "Tenant records", makes every
        # member of the group a match for "record").
        assert found['tools'][0]['tool'] == f'lookup_{own}', found
        assert {t['tool'] for t in found['tools']} <= {'whoami', 'ledger', f'lookup_{own}'}, found
        browse = json.loads(results['browse'].removeprefix('success:'))
        assert sorted(t['tool'] for t in browse['tools']) == sorted(['whoami', 'ledger', f'lookup_{own}'])
        assert browse['total'] == 3
        assert all(own in t['description'] for t in browse['tools'] if t['tool'] != 'whoami')
        assert results['whoami'] == f'success:bound to {own}; run for {own}'
        assert results['own'] == f'success:{own}:k1'
        assert results['ledger'] == f'success:ledger of {own}'
        # Another tenant's tool is not in this run's directory: a retry, nothing ran.
        assert results['other'].startswith('retried:') and f'lookup_{other}' in results['other']
        assert f'{other}:k1' not in results['other']
    assert first == second  # deterministic: byte-identical results for the same run in two rounds
    assert sorted(source.bound_runs) == sorted(tenants * 2)  # one run-bound replacement per run


# --- soak: a changing tool set over many steps --------------------------------------------------------------

VALIDATOR = SchemaValidator(core_schema.dict_schema())


class SlidingCatalog(AbstractToolset[Any]):
    """`size` tools out of a pool of `size + shift * 64`, the window moving `shift` tools every step.

    Tool definitions are built once (a source that re-lists known tools), so each step costs the proxy what a
    changing catalog costs, not what building 10,000 Python functions would.
    """

    def __init__(self, size: int, shift: int) -> None:
        self.size, self.shift = size, shift
        pool = size + shift * 64
        self.pool = [
            ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=f'op_{i}',
                    description=f'Operation {i} on widget {i % 97} in zone {i % 13}',
                    parameters_json_schema={
                        'type': 'object',
                        'properties': {'n': {'type': 'integer', 'description': f'count {i}'}},
                    },
                ),
                max_retries=1,
                args_validator=VALIDATOR,
            )
            for i in range(pool)
        ]

    @property
    def id(self) -> str | None:
        return 'sliding'

    def window(self, step: int) -> list[ToolsetTool[Any]]:
        start = (step * self.shift) % len(self.pool)
        picked = self.pool[start : start + self.size]
        return picked + self.pool[: self.size - len(picked)]

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {t.tool_def.name: t for t in self.window(ctx.run_step)}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        return f'{name}:{tool_args.get("n")}'


def rss_bytes() -> int:
    with open('/proc/self/statm') as statm:
        return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


@pytest.mark.slow
async def test_soak_changing_tool_set_memory_stays_flat_and_caches_bounded() -> None:
    steps_per_run = 50
    catalog = SlidingCatalog(SOAK_TOOLS, shift=max(1, SOAK_TOOLS // 100))
    proxy = ToolProxyCapability(groups={'w': ToolProxyGroup(source=catalog, description='Widgets')})
    runtime = proxy._runtime

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages) + 1
        if step > steps_per_run:
            return ModelResponse(parts=[TextPart('done')])
        zone = step % 13
        # Search, and every 5th step also call a tool of this step's window.
        parts = [ToolCallPart(SEARCH, {'query': f'widget zone {zone}', 'limit': 5}, tool_call_id=f's{step}')]
        if step % 5 == 0:
            name = catalog.window(step)[step % SOAK_TOOLS].tool_def.name
            parts.append(
                ToolCallPart(CALL, {'group': 'w', 'tool': name, 'arguments': {'n': step}}, tool_call_id=f'c{step}')
            )
        return ModelResponse(parts=parts)

    agent = Agent(FunctionModel(model), capabilities=[proxy])
    runs = max(2, SOAK_STEPS // steps_per_run)
    checkpoints: list[tuple[int, int]] = []
    started = time.perf_counter()
    for run in range(runs):
        result = await agent.run('soak', usage_limits=UsageLimits(request_limit=None))
        results = results_of(result.all_messages())
        assert all(v.startswith('success:') for v in results.values()), [
            v for v in results.values() if not v.startswith('success:')
        ][:3]
        # Every search ranked exactly the step's window: keys it returned are members of that window.
        for key, value in results.items():
            if key.startswith('s'):
                window = {t.tool_def.name for t in catalog.window(int(key[1:]))}
                page = json.loads(value.removeprefix('success:'))
                assert page['tools'] and all(t['tool'] in window for t in page['tools'])
        del result, results
        if run == runs // 4 or run == runs - 1:
            gc.collect()
            checkpoints.append((run, rss_bytes()))
    elapsed = time.perf_counter() - started
    gc.collect()
    directories = sum(1 for o in gc.get_objects() if isinstance(o, Directory))
    cache = runtime.search_index
    (warm_run, warm), (last_run, last) = checkpoints
    print(
        f'\nsoak: {runs * steps_per_run} steps over {SOAK_TOOLS} tools (window moves {catalog.shift}/step) in '
        f'{elapsed:.1f} s; RSS {warm / 2**20:.1f} MiB after run {warm_run}, {last / 2**20:.1f} MiB after run '
        f'{last_run}; {directories} live Directory objects; {len(runtime.directories._entries)} directory cache '
        f'entries; index {len(cache.index)} records'
    )
    # Bounded caches: the index holds exactly the last step's members, the directory cache at most its size.
    assert len(cache.index) == len(cache.current) == SOAK_TOOLS
    assert len(runtime.directories._entries) <= 4  # finished steps' entries are dropped at once
    assert directories <= 64 + 2
    # Flat memory after warm-up: growth below 32 MiB plus 1 KiB per step run since (a leak of one 10 KB schema
    # per step would exceed it at 10,000 steps; the CI size checks the bound holds on a short run).
    steps_since = (last_run - warm_run) * steps_per_run
    assert last - warm < 32 * 2**20 + 1024 * steps_since, f'RSS grew {(last - warm) / 2**20:.1f} MiB'
