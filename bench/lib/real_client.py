"""What a user pays per step with a real provider client: Pydantic AI's `OpenAIChatModel` on the
`openai` SDK (and `AnthropicModel` on the `anthropic` SDK) over real HTTP and JSON, against the scripted server of
`bench/lib/loopback_llm.py` (another process, 127.0.0.1 only).

Three agents over the same tools, each with the same tools to call in the same order:

- **direct**: every tool offered to the model (`Agent(toolsets=[...])`); a task is one step calling the tool;
- **Pydantic AI ToolSearch**: the same tools with `defer_loading=True`, `capabilities=[ToolSearch()]` (see
  `tool_search` for Anthropic); a task is a `search_tools` step, then a step calling the (now revealed) tool;
- **ToolProxy**: the tools grouped by `ToolProxyCapability`; a task is a `search_proxy_tools` step (one search
  per task), then a `call_proxy_tool` step.

Every run ends with a text step. A *step* is one model request: from the end of the previous request (running
its tool call, then preparing, serializing and sending this request) to the parsed response. Wall time and
client CPU (this process only; the server runs in its own) are taken per step; *per task* is a run's total
divided by the tools it called, so it includes the proxy's extra search step. Request bytes are the HTTP
bodies the server received. Run from `bench/perf.py` (`bash scripts/bench-perf`, or alone with
`bash scripts/bench-perf --only real-client`).
"""

from __future__ import annotations

import copy
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.toolsets import FunctionToolset

from bench.lib.agent_steps import ToolSpec, proxy_for, toolsets
from bench.lib.loopback_llm import LoopbackServer, script_prompt

DIRECT = 'all tools direct (`toolsets=`)'
TOOL_SEARCH = 'Pydantic AI `ToolSearch` (`defer_loading=True`)'
PROXY = 'ToolProxy'
ROWS = (DIRECT, TOOL_SEARCH, PROXY)


def _value(schema: Any) -> Any:
    kind = schema.get('type') if isinstance(schema, dict) else None
    if isinstance(kind, list):
        kind = next((k for k in kind if k != 'null'), 'string')
    if isinstance(schema, dict) and schema.get('enum'):
        return schema['enum'][0]
    return {'integer': 1, 'number': 1.5, 'boolean': True, 'array': [], 'object': {}}.get(kind, 'x')  # type: ignore[arg-type]


def arguments(tool: ToolSpec) -> dict[str, Any]:
    """Plausible arguments: a value of the right JSON type for each required parameter."""
    props = tool.parameters.get('properties') or {}
    return {name: _value(props.get(name, {})) for name in tool.parameters.get('required') or []}


def targets(fns: Sequence[ToolSpec], count: int) -> list[ToolSpec]:
    """`count` tools spread over the corpus (the same for every row)."""
    step = max(1, len(fns) // (count + 1))
    return [fns[step * (i + 1) % len(fns)] for i in range(count)]


def query(tool: ToolSpec) -> str:
    return f'{tool.name.replace("_", " ")} {tool.description[:60]}'


def scripts(tools: Sequence[ToolSpec]) -> dict[str, list[dict[str, Any]]]:
    """The model's calls for one run of each row (the server answers them in order, then says `done`)."""
    direct: list[dict[str, Any]] = []
    search: list[dict[str, Any]] = []
    proxy: list[dict[str, Any]] = []
    for tool in tools:
        args = arguments(tool)
        direct.append({'tool': tool.name, 'args': args})
        search += [{'tool': 'search_tools', 'args': {'queries': [query(tool)]}}, {'tool': tool.name, 'args': args}]
        proxy += [
            {'tool': 'search_proxy_tools', 'args': {'query': query(tool)}},
            {'tool': 'call_proxy_tool', 'args': {'group': tool.group, 'tool': tool.name, 'arguments': args}},
        ]
    return {DIRECT: direct, TOOL_SEARCH: search, PROXY: proxy}


@dataclass
class RowSamples:
    step_wall: list[float] = field(default_factory=list)
    """ms per step (one model request), every step of every measured run."""
    step_cpu: list[float] = field(default_factory=list)
    task_wall: list[float] = field(default_factory=list)
    """ms per tool called (a run's total / its tools), one sample per run."""
    task_cpu: list[float] = field(default_factory=list)
    request_bytes: list[int] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    """The loopback server's own ms per request (part of the wall time, not of the client CPU)."""
    runs: int = 0
    text_only: bool = False
    """Runs of one text step (no tool called): per-step figures only."""


class TimedModel:
    """Records (cpu, wall) when each `request` of a model instance returns (patched on the instance only)."""

    def __init__(self, model: Any, close: Callable[[], Awaitable[None]]) -> None:
        self.model = model
        self.close = close
        self.marks: list[tuple[float, float]] = []
        original = model.request

        async def request(*args: Any, **kwargs: Any) -> Any:
            response = await original(*args, **kwargs)
            self.marks.append((time.process_time(), time.perf_counter()))
            return response

        model.request = request


PROVIDERS = ('openai', 'anthropic')


def provider_model(provider: str, server: LoopbackServer) -> TimedModel:
    """`OpenAIChatModel` ('gpt-4o', Chat Completions) or `AnthropicModel` ('claude-sonnet-4-5') on the server,
    each on its SDK's client without retries; `await model.close()` closes that client's connections."""
    if provider == 'openai':
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = AsyncOpenAI(base_url=f'{server.url}/v1', api_key='loopback', max_retries=0, timeout=600)
        return TimedModel(OpenAIChatModel('gpt-4o', provider=OpenAIProvider(openai_client=client)), client.close)
    if provider == 'anthropic':
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        client = AsyncAnthropic(base_url=server.url, api_key='loopback', max_retries=0, timeout=600)
        return TimedModel(
            AnthropicModel('claude-sonnet-4-5', provider=AnthropicProvider(anthropic_client=client)), client.close
        )
    raise ValueError(f'unknown provider {provider!r}')


def tool_search(provider: str) -> ToolSearch[None]:
    """Pydantic AI's ToolSearch as configured per provider.

    OpenAI Chat Completions: the default (Pydantic AI keeps deferred tools off the wire there and searches
    locally). Anthropic: `strategy='keywords'`, the client-executed form (deferred definitions go on the wire
    with `defer_loading`, the search runs locally); the default there is Anthropic's server-side search, which a
    scripted server cannot stand in for.
    """
    return ToolSearch() if provider == 'openai' else ToolSearch(strategy='keywords')


def agents(
    fns: Sequence[ToolSpec],
    timed: TimedModel,
    provider: str = 'openai',
    sets: dict[str, FunctionToolset[Any]] | None = None,
) -> dict[str, Agent[None, str]]:
    """The three agents on `timed`'s model; `sets` (one toolset per group, see `agent_steps.toolsets`) is built
    from `fns` unless given. ToolSearch gets copies of the same tools with `defer_loading=True`."""
    sets = toolsets(fns) if sets is None else sets
    deferred: dict[str, FunctionToolset[Any]] = {}
    for group, ts in sets.items():
        tools = [copy.copy(tool) for tool in ts.tools.values()]  # shallow: the schemas are shared
        for tool in tools:
            tool.defer_loading = True
        deferred[group] = FunctionToolset(tools)
    model = timed.model
    return {
        DIRECT: Agent(model, toolsets=list(sets.values())),
        TOOL_SEARCH: Agent(model, toolsets=list(deferred.values()), capabilities=[tool_search(provider)]),
        PROXY: Agent(model, capabilities=[proxy_for(sets)]),
    }


async def run_once(
    agent: Agent[None, str],
    timed: TimedModel,
    server: LoopbackServer,
    script: list[dict[str, Any]],
    tasks: int,
    into: RowSamples | None,
) -> Any:
    """One run of `script`; its steps are added to `into` (None: a warm-up, not recorded)."""
    gc.collect()
    server.reset()
    timed.marks.clear()
    start = (time.process_time(), time.perf_counter())
    result = await agent.run(script_prompt(script))
    end = (time.process_time(), time.perf_counter())
    called = sum(
        1 for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart) and p.content == 'ok'
    )
    if result.output != 'done' or len(timed.marks) != len(script) + 1 or (into is not None and called != tasks):
        raise RuntimeError(
            f'unexpected run: output {result.output!r}, {len(timed.marks)} requests for {len(script)} '
            f'scripted calls, {called} of {tasks} target tools called'
        )
    if into is None:
        return result
    marks = [start, *timed.marks[:-1], end]  # the last step ends with the run
    for (c0, w0), (c1, w1) in pairwise(marks):
        into.step_cpu.append((c1 - c0) * 1000)
        into.step_wall.append((w1 - w0) * 1000)
    if tasks:
        into.task_cpu.append((end[0] - start[0]) * 1000 / tasks)
        into.task_wall.append((end[1] - start[1]) * 1000 / tasks)
    stats = server.stats()
    into.request_bytes += [r['bytes'] for r in stats]
    into.server_ms += [r['server_ms'] for r in stats]
    into.runs += 1
    return result


async def measure(
    fns: Sequence[ToolSpec],
    server: LoopbackServer,
    *,
    runs: int,
    tasks: int = 1,
    provider: str = 'openai',
    runs_by_row: dict[str, int] | None = None,
    warm_up: Sequence[str] = ROWS,
    text_only: Sequence[str] = (),
    sets: dict[str, FunctionToolset[Any]] | None = None,
    progress: Any = None,
) -> dict[str, RowSamples]:
    """Measures the three rows over `fns`, the runs interleaved (drift affects the rows alike).

    `runs_by_row` overrides `runs` per row. The rows in `warm_up` first run once unmeasured: direct one text
    step, the others one search (for ToolProxy, that run builds the search index, which later runs share). The
    rows in `text_only` run a single text step instead of their task (at 100,000 tools, where every direct step
    costs many seconds alike): per-step figures only.
    """
    timed = provider_model(provider, server)
    by_row = agents(fns, timed, provider, sets)
    plans = scripts(targets(fns, tasks))
    counts = {row: (runs_by_row or {}).get(row, runs) for row in ROWS}
    samples = {row: RowSamples(text_only=row in text_only) for row in ROWS}
    try:
        label = f'real client ({provider}), {len(fns):,} tools'
        await _measure_rows(by_row, timed, server, plans, counts, samples, tasks, warm_up, text_only, progress, label)
    finally:
        await timed.close()
    return samples


async def _measure_rows(
    by_row: dict[str, Agent[None, str]],
    timed: TimedModel,
    server: LoopbackServer,
    plans: dict[str, list[dict[str, Any]]],
    counts: dict[str, int],
    samples: dict[str, RowSamples],
    tasks: int,
    warm_up: Sequence[str],
    text_only: Sequence[str],
    progress: Any,
    label: str,
) -> None:
    for row in warm_up:
        script = [] if row == DIRECT else plans[row][:1]
        await run_once(by_row[row], timed, server, script, 0, None)
    for i in range(max(counts.values())):
        for row, agent in by_row.items():
            if i < counts[row]:
                script, n_tasks = ([], 0) if row in text_only else (plans[row], tasks)
                await run_once(agent, timed, server, script, n_tasks, samples[row])
                if progress is not None:
                    progress(f'{label}, {row}: run {i + 1}/{counts[row]}')


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _ms(value: float) -> str:
    return f'{value:,.1f} ms' if value < 100 else f'{value:,.0f} ms'


def _bytes(value: float) -> str:
    return f'{value / 1e6:,.1f} MB' if value >= 1e6 else f'{value / 1e3:,.1f} kB' if value >= 1e3 else f'{value:.0f} B'


DIRECT_STEPS_PER_TASK = 2
"""A direct run of one task: the call step and the text step, which cost alike (same request, same tools)."""


def table_rows(n: int, samples: dict[str, RowSamples]) -> list[list[str]]:
    """Markdown rows: per step (median, p95) wall and CPU, per task CPU, request bytes, ratios to direct.

    When the direct row ran text steps only, its per-task CPU is estimated as two of its steps (marked ≈).
    """
    direct = samples[DIRECT]
    d_step = statistics.median(direct.step_cpu)
    d_task = statistics.median(direct.task_cpu) if direct.task_cpu else DIRECT_STEPS_PER_TASK * d_step
    approx = '≈ ' if not direct.task_cpu else ''
    rows = []
    for row, s in samples.items():
        step_cpu = statistics.median(s.step_cpu)
        if s.task_cpu:
            task_cpu: float | None = statistics.median(s.task_cpu)
            task = f'{_ms(task_cpu)}'
        elif row == DIRECT:
            task_cpu, task = d_task, f'≈ {_ms(d_task)}'
        else:
            task_cpu, task = None, '—'
        rows.append(
            [
                f'{n:,}',
                row,
                f'{s.runs} (text step)' if s.text_only else str(s.runs),
                f'{_ms(statistics.median(s.step_wall))} ({_ms(p95(s.step_wall))})',
                f'{_ms(step_cpu)} ({_ms(p95(s.step_cpu))})',
                f'{step_cpu / d_step:.3f}x',
                task,
                '—' if task_cpu is None else f'{"" if row == DIRECT else approx}{task_cpu / d_task:.3f}x',
                f'{_bytes(statistics.median(s.request_bytes))} ({_bytes(max(s.request_bytes))})',
                _ms(statistics.median(s.server_ms)),
            ]
        )
    return rows


HEADERS = [
    'tools',
    'agent',
    'runs',
    'wall per step',
    'client CPU per step',
    'CPU/step vs direct',
    'client CPU per task',
    'CPU/task vs direct',
    'request body, median (max)',
    'server per request',
]

PROVIDER_LABELS = {
    'openai': "OpenAI: `OpenAIChatModel('gpt-4o')` (Chat Completions), `openai` SDK",
    'anthropic': "Anthropic: `AnthropicModel('claude-sonnet-4-5')` (Messages, streamed), `anthropic` SDK, `ToolSearch(strategy='keywords')`",
}

NOTE = (
    'Each run calls one tool: direct in one step, through a search step then a call step for `ToolSearch` (its '
    '`search_tools`) and ToolProxy (`search_proxy_tools`, then `call_proxy_tool`: one search per task), then a text '
    'step. A step is one model request, from the end of the previous one (running its tool call, preparing, '
    'serializing and sending this request, the loopback server answering, parsing the reply): wall time and CPU time '
    'of this process (the server runs in its own and its time per request is shown), median (p95) over every step '
    "of every run. Per task = a run's total / the tools it called, so it counts the extra search step and the text "
    'step. Ratios are '
    'against the direct row measured in the same run, interleaved. Request body = HTTP bytes the server received per '
    'request. OpenAI Chat Completions keeps deferred tools off the wire (Pydantic AI sends the revealed ones after a '
    'search); on Anthropic the deferred definitions ride every request with `defer_loading`. {plan} Anthropic '
    'rows stop at {anthropic_up_to} tools. The machine is shared (2 cores): wall time includes waiting for other '
    'work; read CPU medians and ratios.'
)
