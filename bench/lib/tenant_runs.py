"""Interleaved tenants: one shared `ToolProxyCapability` whose source lists per-deps member sets (one catalogue per
tenant), searched by concurrent runs whose steps interleave, against the same runs one after another.

Each tenant has `per_tenant` tools of its own (BFCL schemas, names unique across tenants); each run searches once per
step, `searches` searches over all tenants. Both orders start from a fresh proxy, so both pay one index build per
tenant; what differs is whether interleaving makes searches re-index. `bench.perf` prints the table;
`python -m bench.tenants` runs it alone (3,000 tools a tenant, 4 tenants, 24 searches).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy._private import DynamicToolset

SEARCH = 'search_proxy_tools'


@dataclass
class Tenant:
    name: str


@dataclass
class TenantTimes:
    sequential_s: float
    """Median wall seconds of all runs one after another."""
    interleaved_s: float
    """Median wall seconds of the same runs, concurrent (their steps interleave)."""
    sequential_builds: int
    interleaved_builds: int
    """Index changes (builds and incremental syncs) over one repetition."""
    searches: int


def tenant_proxy(catalogues: dict[str, FunctionToolset[Any]]) -> ToolProxyCapability[Tenant]:
    source = DynamicToolset[Tenant](toolset_func=lambda ctx: catalogues[ctx.deps.name], per_run_step=True)
    return ToolProxyCapability(groups={'catalogue': ToolProxyGroup(source=source, description='Tenant tools')})


def searching_model(queries: Sequence[str], searches: int) -> FunctionModel:
    """`searches` steps of one search each (the queries in turn), yielding to the other runs before each step."""

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(0)
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < searches:
            return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': queries[step % len(queries)]})])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(model)


async def interleaved_tenants(
    catalogues: dict[str, FunctionToolset[Any]], queries: Sequence[str], searches: int, repeat: int = 3
) -> TenantTimes:
    """Times `searches` searches spread over one run per tenant, sequential and interleaved (fresh proxies)."""
    per_run = searches // len(catalogues)
    samples: dict[bool, list[float]] = {False: [], True: []}
    builds: dict[bool, int] = {}
    for _ in range(repeat):
        for interleave in (False, True):
            proxy = tenant_proxy(catalogues)
            agent = Agent(searching_model(queries, per_run), deps_type=Tenant, capabilities=[proxy])
            started = time.perf_counter()
            if interleave:
                await asyncio.gather(*(agent.run('go', deps=Tenant(t)) for t in catalogues))
            else:
                for t in catalogues:
                    await agent.run('go', deps=Tenant(t))
            samples[interleave].append(time.perf_counter() - started)
            builds[interleave] = proxy.index_builds
    return TenantTimes(
        statistics.median(samples[False]),
        statistics.median(samples[True]),
        builds[False],
        builds[True],
        per_run * len(catalogues),
    )


def tenant_catalogues(fns: Sequence[Any], tenants: int, per_tenant: int) -> dict[str, FunctionToolset[Any]]:
    """`tenants` catalogues of `per_tenant` consecutive tools of `fns` each (`agent_steps.ToolSpec`s)."""
    from bench.lib.agent_steps import toolsets

    out: dict[str, FunctionToolset[Any]] = {}
    for i in range(tenants):
        chunk = fns[i * per_tenant : (i + 1) * per_tenant]
        [tools] = toolsets([_Renamed(f, 'catalogue') for f in chunk]).values()
        out[f'tenant{i}'] = tools
    return out


@dataclass(frozen=True)
class _Renamed:
    """A tool spec moved into one group."""

    spec: Any
    group: str

    @property
    def name(self) -> str:
        return str(self.spec.name)

    @property
    def description(self) -> str:
        return str(self.spec.description)

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.spec.parameters)


def row(per_tenant: int, tenants: int, times: TenantTimes) -> list[str]:
    return [
        f'{per_tenant:,}',
        str(tenants),
        str(times.searches),
        f'{times.sequential_s * 1000:,.0f} ms',
        f'{times.interleaved_s * 1000:,.0f} ms',
        f'{times.interleaved_s / times.sequential_s:.2f}x',
        f'{times.sequential_builds} / {times.interleaved_builds}',
    ]


HEADERS = [
    'tools a tenant',
    'tenants',
    'searches',
    'sequential runs',
    'interleaved runs',
    'interleaved / sequential',
    'index changes (sequential / interleaved)',
]
