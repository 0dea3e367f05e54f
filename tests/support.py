"""Helpers the tests share: the control names, a scripted `FunctionModel` that plays tool calls turn by turn and
records what it saw, and readers of the tool returns a model received.

Tests import these with `from support import ...` (the tests folder is on `sys.path` through pytest's rootdir
conftest); `conftest.py` holds only fixtures and the test-tier options.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pydantic_ai_toolproxy import ToolProxyConfig

SEARCH: str = ToolProxyConfig().search_name
"""The discovery control's default name (`search_proxy_tools`)."""
CALL: str = ToolProxyConfig().call_name
"""The call control's default name (`call_proxy_tool`)."""

Call = tuple[str, dict[str, Any]]
Turn = Sequence[Call] | str | Callable[[list[ModelMessage], AgentInfo], 'Sequence[Call] | str']


@dataclass
class Script:
    """Plays `turns` in order: a list of `(tool_name, args)` calls, a final text, or a callable returning either.

    Records each request's `AgentInfo` in `infos` so tests can assert what the model was offered, and the messages
    it was sent in `seen` (the request's own list, as the model received it). After the last turn it answers 'done'.
    """

    turns: list[Turn]
    infos: list[AgentInfo] = field(default_factory=list)
    seen: list[list[ModelMessage]] = field(default_factory=list)
    _n: int = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        self.seen.append(list(messages))
        turn: Any = self.turns[self._n] if self._n < len(self.turns) else 'done'
        self._n += 1
        if callable(turn):
            turn = turn(messages, info)
        if isinstance(turn, str):
            return ModelResponse(parts=[TextPart(turn)])
        return ModelResponse(
            parts=[ToolCallPart(name, args, tool_call_id=f'call_{self._n}_{i}') for i, (name, args) in enumerate(turn)]
        )

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self)

    def offered(self, step: int = 0) -> list[str]:
        """Names of the function tools offered in request `step`."""
        return [t.name for t in self.infos[step].function_tools]

    def tool_def(self, name: str, step: int = 0) -> Any:
        return next(t for t in self.infos[step].function_tools if t.name == name)


def returns(messages: Sequence[ModelMessage]) -> list[ToolReturnPart]:
    """Every tool return part in a message history, in order."""
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def returns_by_id(messages: Sequence[ModelMessage]) -> dict[str, ToolReturnPart]:
    """Every tool return part in a message history, by its tool call id."""
    return {p.tool_call_id: p for p in returns(messages)}


def last_return(messages: Sequence[ModelMessage], name: str | None = None) -> ToolReturnPart:
    parts = [p for p in returns(messages) if name is None or p.tool_name == name]
    assert parts, f'no tool return for {name!r}'
    return parts[-1]


def page_of(part: ToolReturnPart) -> dict[str, Any]:
    """The search page exactly as the model received it."""
    return json.loads(part.model_response_str())


ROOT = Path(__file__).resolve().parent.parent
"""The repository's root: the CLI's working directory in `toolproxy(...)`."""


def toolproxy(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run `python -m pydantic_ai_toolproxy ARGS` with stdout/stderr piped and terminal-forcing variables cleared
    (`env` adds to or overrides the environment)."""
    base = {k: v for k, v in os.environ.items() if k not in ('FORCE_COLOR', 'TTY_COMPATIBLE', 'NO_COLOR', 'COLUMNS')}
    return subprocess.run(
        [sys.executable, '-m', 'pydantic_ai_toolproxy', *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, **(env or {})},
        timeout=300,
    )


def json_of(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a CLI command printed on stdout (its stderr as the failure message when it printed nothing)."""
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)
