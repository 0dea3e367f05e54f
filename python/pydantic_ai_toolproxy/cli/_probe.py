"""One real agent run that records what the model is given: the CLI's only way of looking at a surface.

Every figure the CLI prints comes from a real `pydantic_ai.Agent` run over the sources (under a real
`ToolProxyCapability` when grouped), driven by a `FunctionModel` that records the first request's
`AgentInfo` (function tools, instructions) and the step's prepared `ToolManager` tools, optionally makes
tool calls (e.g. `search_proxy_tools`), and records their `ToolReturnPart`s: what the model got back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, ValidatedToolArgs, WrapToolExecuteHandler
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._messages import FailureReason, ProxyFailed
from ..capability import ToolProxyCapability
from ..grouping.directory import Member

__all__ = ('ProbeRun', 'Snapshot', 'definition_bytes', 'failure_reason', 'grouped_members', 'probe', 'text_bytes')


def definition_bytes(tool_def: ToolDefinition) -> int:
    """UTF-8 bytes of one tool definition as a function declaration `{"name", "description", "parameters"}`.

    Compact JSON, non-ASCII unescaped: the part of a tool every provider sends in every request (provider
    envelopes add a few bytes of their own per tool).
    """
    declaration = {
        'name': tool_def.name,
        'description': tool_def.description or '',
        'parameters': tool_def.parameters_json_schema,
    }
    # `surrogatepass`: a lone surrogate in a source's text (which no provider could send) still counts, not crashes.
    return len(json.dumps(declaration, separators=(',', ':'), ensure_ascii=False).encode('utf-8', 'surrogatepass'))


def text_bytes(text: str | None) -> int:
    """UTF-8 bytes of an instructions string (0 for None)."""
    return len(text.encode('utf-8', 'surrogatepass')) if text else 0


@dataclass
class Snapshot:
    """The first model request of a probe run.

    Attributes:
        info: What the model was offered: `function_tools` (after the proxy hid its members and added its
            controls) and `instructions`.
        tools: The step's prepared `ToolManager` tools by name (grouped members included, under canonical names).
    """

    info: AgentInfo
    tools: dict[str, ToolsetTool[Any]]

    def offered(self) -> list[str]:
        """Names of the function tools the model was offered."""
        return [t.name for t in self.info.function_tools]


@dataclass
class ProbeRun:
    """The outcome of one probe run.

    Attributes:
        snapshot: The first request, or None when preparation failed before it.
        returns: Tool call id -> the `ToolReturnPart` the model got back for the probe's calls.
        failures: Tool call id -> the `FailureReason` of a probe call a control failed (the data beside the
            failure text in `returns`; `_Recorder` takes it from the control's `ProxyFailed`).
        error: The `UserError` preparation raised (a member that cannot be proxied, a name collision), if any;
            the first one when several sources failed at once.
    """

    snapshot: Snapshot | None = None
    returns: dict[str, ToolReturnPart] = field(default_factory=dict)
    failures: dict[str, FailureReason] = field(default_factory=dict)
    error: UserError | None = None


@dataclass
class _Recorder(AbstractCapability[Any]):
    """Copies `ctx.tool_manager.tools` at each model request into a shared list, and the `FailureReason` of every
    tool call a control failed into `failures` (by call id); changes nothing of the request or the calls."""

    seen: list[dict[str, ToolsetTool[Any]]] = field(default_factory=list)
    failures: dict[str, FailureReason] = field(default_factory=dict)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        try:
            return await handler(args)
        except Exception as error:  # Pydantic AI wraps the control's `ProxyFailed` as `ToolFailedError` (its cause)
            if (reason := failure_reason(error)) is not None:
                self.failures[call.tool_call_id] = reason
            raise

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        manager = ctx.tool_manager
        self.seen.append(dict(manager.tools) if manager is not None and manager.tools is not None else {})
        return request_context


def failure_reason(error: BaseException) -> FailureReason | None:
    """The `FailureReason` of the control's `ProxyFailed` that is `error` or its cause (Pydantic AI raises a
    `ToolFailedError` from it), else None."""
    current: BaseException | None = error
    for _ in range(8):
        if current is None:
            return None
        if isinstance(current, ProxyFailed):
            return current.reason
        current = current.__cause__
    return None


def grouped_members(capability: ToolProxyCapability[Any], snapshot: Snapshot) -> dict[str, list[Member]]:
    """The members of `capability` in the snapshot's prepared tools, per group in configured order.

    Uses the package's own `Directory` (`ToolProxyCapability.directory_of`, the view the controls search and
    dispatch through); a configured group without members maps to an empty list.
    """
    directory = capability.directory_of(snapshot.tools)
    out: dict[str, list[Member]] = {name: [] for name in capability.groups}
    for name in directory.tools:
        member = directory.member(name)
        if member is not None:
            out[member.group].append(member)
    return out


def _leaves(group: BaseExceptionGroup[Any]) -> list[Any]:
    out: list[Any] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


Calls = Callable[[Snapshot], Sequence[tuple[str, dict[str, Any]]]]


async def probe(
    *,
    toolsets: Sequence[AbstractToolset[Any]] = (),
    capabilities: Sequence[AbstractCapability[Any]] = (),
    calls: Calls | None = None,
) -> ProbeRun:
    """Run one agent over `toolsets` and `capabilities` and record its first request.

    `calls(snapshot)` gives the tool calls the scripted model makes in its first response, all at once
    (ids `probe-0`, `probe-1`, ...); the model then ends the run with a text answer.

    Raises:
        Whatever the run raises other than `UserError` (e.g. an MCP server that fails mid-run).
    """
    recorder = _Recorder()
    result = ProbeRun()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if result.snapshot is not None:
            return ModelResponse(parts=[TextPart('done')])
        result.snapshot = Snapshot(info=info, tools=recorder.seen[-1] if recorder.seen else {})
        planned = list(calls(result.snapshot)) if calls is not None else []
        if not planned:
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(
            parts=[ToolCallPart(name, args, tool_call_id=f'probe-{i}') for i, (name, args) in enumerate(planned)]
        )

    agent: Agent[None, str] = Agent(
        FunctionModel(model), toolsets=list(toolsets), capabilities=[*capabilities, recorder]
    )
    try:
        run = await agent.run('toolproxy probe')
    except UserError as exc:
        result.error = exc
        return result
    except BaseExceptionGroup as group:  # several sources failed preparation concurrently
        matched, rest = group.split(UserError)
        if matched is None or rest is not None:
            raise
        result.error = _leaves(matched)[0]
        return result
    result.failures = {k: v for k, v in recorder.failures.items() if k.startswith('probe-')}
    for message in run.all_messages():
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_call_id.startswith('probe-'):
                    result.returns[part.tool_call_id] = part
    return result
