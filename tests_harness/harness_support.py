"""Helpers for the a13n-harness tests: a scripted streaming `FunctionModel` and readers of run results.

The harness streams model responses, so the scripted model implements `stream_function`. The turn to play is
chosen from the number of model responses already in the conversation, so one model serves concurrent runs,
each playing the script from its first turn.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

SEARCH, CALL = 'search_proxy_tools', 'call_proxy_tool'
Call = tuple[str, dict[str, Any]]
Turn = Sequence[Call] | str | Callable[[list[ModelMessage], AgentInfo], 'Sequence[Call] | str']


@dataclass
class StreamScript:
    """Plays `turns` in order (a list of tool calls, a final text, or a callable returning either); then 'done'.

    `infos` records each request's `AgentInfo` (tools offered, instructions), in arrival order.
    """

    turns: list[Turn]
    infos: list[AgentInfo] = field(default_factory=list)

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        self.infos.append(info)
        n = sum(isinstance(m, ModelResponse) for m in messages)
        turn: Any = self.turns[n] if n < len(self.turns) else 'done'
        if callable(turn):
            turn = turn(messages, info)
        if isinstance(turn, str):
            yield turn
            return
        yield {
            i: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f'call_{n}_{i}')
            for i, (name, args) in enumerate(turn)
        }

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(stream_function=self._stream)

    def offered(self, step: int = 0) -> list[str]:
        """Names of the function tools offered in request `step`."""
        return [t.name for t in self.infos[step].function_tools]

    def tool_def(self, name: str, step: int = 0) -> Any:
        return next(t for t in self.infos[step].function_tools if t.name == name)


def returns(messages: Sequence[ModelMessage], name: str | None = None) -> list[ToolReturnPart]:
    """Every tool return part (optionally of one tool) in a message history, in order."""
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and (name is None or p.tool_name == name)
    ]


def page_of(part: ToolReturnPart) -> dict[str, Any]:
    """A search page exactly as the model received it."""
    return json.loads(part.model_response_str())


def text_of(part: Any) -> str:
    """What the model read for a tool return or retry part."""
    return part.model_response_str() if isinstance(part, ToolReturnPart) else part.model_response()
