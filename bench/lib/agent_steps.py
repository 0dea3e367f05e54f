"""Agent-level measurements for `bench.perf`: real `Agent` runs driven by a `FunctionModel`, timed per step.

- `step_times`: CPU time of one agent step for several agents over the same tools (interleaved runs);
- `own_work_per_step`: the time spent in ToolProxy's own per-step code (member wrapping, merging, directory,
  hiding members from the request, instructions, the direct-call guard), measured exclusively inside real runs;
- `search_call_times`: whole `search_proxy_tools` calls, the first of each step (caches cold after the step's
  preparation) and further ones in the same step;
- `request_bytes`: tool-definition bytes the model receives per request.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy.capability import ProxyGuidance
from pydantic_ai_toolproxy.cli._probe import definition_bytes
from pydantic_ai_toolproxy.controls.surface import ProxySurfaceToolset
from pydantic_ai_toolproxy.grouping.members import GroupMemberToolset

SEARCH = 'search_proxy_tools'
WARM_UP = 'warm up'
"""A prompt the stepping model answers at once (a one-request run)."""


class ToolSpec(Protocol):
    name: str
    group: str
    description: str
    parameters: dict[str, Any]


async def _echo(**kwargs: Any) -> str:
    return 'ok'


def toolsets(fns: Sequence[ToolSpec]) -> dict[str, FunctionToolset[Any]]:
    """One `FunctionToolset` per group, holding that group's tools (each returns 'ok')."""
    by_group: dict[str, list[Tool[Any]]] = {}
    for f in fns:
        by_group.setdefault(f.group, []).append(
            Tool.from_schema(_echo, name=f.name, description=f.description, json_schema=f.parameters)
        )
    return {g: FunctionToolset(ts) for g, ts in by_group.items()}


def proxy_for(sets: dict[str, FunctionToolset[Any]]) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(
        groups={g: ToolProxyGroup(source=ts, description=f'{g} tools') for g, ts in sets.items()},
        config=ToolProxyConfig(max_results=10),
    )


def tool_bytes(defs: Sequence[ToolDefinition]) -> int:
    """UTF-8 bytes of the tool definitions as compact JSON objects `{name, description, parameters}`."""
    return sum(definition_bytes(d) for d in defs)


def noop() -> str:
    """An ungrouped tool that does nothing (drives agent steps)."""
    return 'ok'


def stepping_model(steps: int, record: list[int] | None = None, search_first: bool = False) -> FunctionModel:
    """Calls `noop` `steps` times, one call per request, then answers; records each request's tool bytes.

    With `search_first`, the first of those calls is a `search_proxy_tools` call instead (so the run's later
    steps keep the proxy's index in sync, as in a run that searches).
    """

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if record is not None:
            record.append(tool_bytes(info.function_tools))
        done = sum(1 for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart))
        prompt = messages[0].parts[-1] if messages and isinstance(messages[0], ModelRequest) else None
        if done >= steps or getattr(prompt, 'content', None) == WARM_UP:
            return ModelResponse(parts=[TextPart('done')])
        if search_first and done == 0:
            return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': 'calculate the area of a circle'})])
        return ModelResponse(parts=[ToolCallPart('noop', {})])

    return FunctionModel(fn)


async def request_bytes(sets: dict[str, FunctionToolset[Any]]) -> tuple[int, int]:
    """Tool-definition bytes of one model request: (through the proxy, every tool offered directly)."""
    recorded: list[int] = []
    await Agent(stepping_model(0, recorded), tools=[noop], capabilities=[proxy_for(sets)]).run('x')
    await Agent(stepping_model(0, recorded), tools=[noop], toolsets=list(sets.values())).run('x')
    return recorded[0], recorded[1]


async def step_times(agents: Sequence[Agent[None, str]], steps: int, repeat: int) -> list[float]:
    """Median CPU time of one agent step (a model request plus one trivial tool call) per agent, in ms.

    Process CPU time rather than wall time: on a shared machine it measures the work done, not the waiting.
    The agents run interleaved, so drift affects them alike.
    """
    samples: list[list[float]] = [[] for _ in agents]
    for agent in agents:
        await agent.run(WARM_UP)  # one request: builds the proxy's index
    for _ in range(repeat):
        for i, agent in enumerate(agents):
            gc.collect()
            t = time.process_time()
            await agent.run('go')
            samples[i].append((time.process_time() - t) * 1000 / (steps + 1))
    return [statistics.median(s) for s in samples]


@contextmanager
def _timing_own_work(total: list[float]) -> Iterator[None]:
    """Adds to `total[0]` the CPU seconds spent in ToolProxy's own per-step code while the block runs.

    Times the synchronous parts only, so the figure is exclusive: the wrapping of a source's listing
    (`GroupMemberToolset.members_of`, after the source's own `get_tools` returned), the surface's merge
    (`ProxySurfaceToolset.merge`), and the capability's hooks (`before_model_request`: directory, index sync and
    hiding; the guidance instruction; `before_tool_validate`: the direct-call guard), none of which awaits
    anything that suspends. The search control's own execution is not part of it (see `search_call_times`).
    """
    patched: list[tuple[type, str, Any]] = []

    def timed_sync(cls: type, name: str) -> None:
        original = cls.__dict__[name]

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                total[0] += time.process_time() - t

        patched.append((cls, name, original))
        setattr(cls, name, wrapper)

    def timed_async(cls: type, name: str) -> None:
        original = cls.__dict__[name]

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.process_time()
            try:
                return await original(*args, **kwargs)
            finally:
                total[0] += time.process_time() - t

        patched.append((cls, name, original))
        setattr(cls, name, wrapper)

    timed_sync(GroupMemberToolset, 'members_of')
    timed_sync(ProxySurfaceToolset, 'merge')
    timed_sync(ProxyGuidance, '_guidance')  # the guidance instruction: a child capability since 0bc0bb0
    timed_async(ToolProxyCapability, 'before_model_request')
    timed_async(ToolProxyCapability, 'before_tool_validate')
    try:
        yield
    finally:
        for cls, name, original in reversed(patched):
            setattr(cls, name, original)


async def own_work_per_step(sets: dict[str, FunctionToolset[Any]], steps: int, repeat: int) -> float:
    """Median ms per step of ToolProxy's own per-step work in a real agent run (the step shape of `step_times`,
    except that each run's first call is a search, so its later steps also keep the index in sync)."""
    agent = Agent(stepping_model(steps, search_first=True), tools=[noop], capabilities=[proxy_for(sets)])
    await agent.run(WARM_UP)
    samples: list[float] = []
    for _ in range(repeat):
        total = [0.0]
        gc.collect()
        with _timing_own_work(total):
            await agent.run('go')
        samples.append(total[0] * 1000 / (steps + 1))
    return statistics.median(samples)


@dataclass
class SearchCallTimes:
    first_in_step: list[float]
    """ms of each step's first `search_proxy_tools` call (the run's first one also syncs the shared index)."""
    later_in_step: list[float]
    """ms of the further calls of one step (the index is already synced)."""
    builds: int
    """How many times the index changed over all runs (the first build; 1 when no tool changed)."""


async def search_call_times(
    sets: dict[str, FunctionToolset[Any]], per_step: Sequence[str], batch: Sequence[str]
) -> SearchCallTimes:
    """Times whole `search_proxy_tools` calls (Python in, finished page of 5 out) inside real agent steps.

    One run makes one search per step for each query of `per_step`, then one step with all of `batch` (run
    sequentially). A warm-up run builds the index first.
    """
    samples: list[tuple[int, float]] = []

    @dataclass
    class Timer(AbstractCapability[Any]):
        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            if call.tool_name != SEARCH:
                return await handler(args)
            t = time.perf_counter_ns()
            result = await handler(args)
            samples.append((ctx.run_step, (time.perf_counter_ns() - t) / 1e6))
            return result

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = messages[0].parts[-1] if messages and isinstance(messages[0], ModelRequest) else None
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if getattr(prompt, 'content', None) == WARM_UP:
            return ModelResponse(
                parts=[ToolCallPart(SEARCH, {'query': per_step[0]})] if step == 0 else [TextPart('done')]
            )
        if step < len(per_step):
            return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': per_step[step]})])
        if step == len(per_step):
            return ModelResponse(
                parts=[ToolCallPart(SEARCH, {'query': q}, tool_call_id=f'c{i}') for i, q in enumerate(batch)]
            )
        return ModelResponse(parts=[TextPart('done')])

    proxy = proxy_for(sets)
    agent = Agent(FunctionModel(fn), capabilities=[proxy, Timer()])
    with ToolManager.parallel_execution_mode('sequential'):
        await agent.run(WARM_UP)
        samples.clear()
        await agent.run('measured')
    by_step: dict[int, list[float]] = {}
    for step, ms in samples:
        by_step.setdefault(step, []).append(ms)
    first = [by_step[step][0] for step in sorted(by_step)]
    later = [ms for step in sorted(by_step) for ms in by_step[step][1:]]
    return SearchCallTimes(first_in_step=first, later_in_step=later, builds=proxy.index_builds)


def capability_agents(sets: dict[str, FunctionToolset[Any]], steps: int) -> list[Agent[None, str]]:
    """The same tools three ways: `toolsets=` (direct), one `Toolset` capability per group, and one ToolProxy."""
    from pydantic_ai.capabilities import Toolset as ToolsetCapability

    return [
        Agent(stepping_model(steps), tools=[noop], toolsets=list(sets.values())),
        Agent(stepping_model(steps), tools=[noop], capabilities=[ToolsetCapability(ts) for ts in sets.values()]),
        Agent(stepping_model(steps), tools=[noop], capabilities=[proxy_for(sets)]),
    ]
