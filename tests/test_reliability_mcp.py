"""Failing MCP servers behind the proxy: real stdio server processes.

`examples/mcp_server.py` provides the failure modes: `crash_server` (the process exits in the middle of the
call), `never_answer` (no answer ever; the client's `read_timeout` is the tool timeout) and `fail` (returns a
tool error). Each run is bounded by `asyncio.wait_for`, so a hang fails the test instead of stalling CI.

What holds (README, "Reliability"):

* a call interrupted by the transport (process exit, lost connection, timeout) fails with an uncertain-outcome
  message; the run continues;
* after a crash the rest of that run gets the same failure for the dead connection, and the next run starts a
  fresh server process and connection (otherwise `MCPToolset` keeps one server process across runs, so the
  live server processes are exactly the current connection's: none leaks);
* a server that *returns* a tool error is its own answer: with the MCP default (`tool_error_behavior='retry'`)
  it comes back as a retry carrying the server's message (native retry semantics); with
  `tool_error_behavior='error'` it is an uncertain-outcome failure.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.capabilities import MCP
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

SERVER = Path(__file__).resolve().parent.parent / 'examples' / 'mcp_server.py'
CALL = 'call_proxy_tool'
RUN_LIMIT_S = 60  # no run may take longer: a hang fails the test
UNCERTAIN = 'Its outcome is uncertain: it may have had effects. Check the current state before retrying'


def notes_server(**kwargs: Any) -> MCPToolset[Any]:
    return MCPToolset(StdioTransport(command=sys.executable, args=[str(SERVER)]), id='notes', **kwargs)


def calls(*envelopes: tuple[str, dict[str, Any]]) -> FunctionModel:
    """A model that makes one proxied call per response, in order, then answers 'done'."""
    queue = iter(envelopes)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = next(queue, None)
        if step is None:
            return ModelResponse(parts=[TextPart('done')])
        tool, arguments = step
        call = {'group': 'notes', 'tool': tool, 'arguments': arguments}
        return ModelResponse(
            parts=[
                ToolCallPart(CALL, call, tool_call_id=f'{tool}_{sum(isinstance(m, ModelResponse) for m in messages)}')
            ]
        )

    return FunctionModel(model)


async def run(proxy: ToolProxyCapability[Any], *envelopes: tuple[str, dict[str, Any]]) -> list[ToolReturnPart]:
    """One agent run with a bounded wall time; the proxied calls' results in order."""
    result = await asyncio.wait_for(Agent(calls(*envelopes), capabilities=[proxy]).run('x'), RUN_LIMIT_S)
    assert result.output == 'done'  # the run went on to its end
    return [
        p
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_name == CALL
    ]


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def server_children() -> list[int]:
    """Live child processes of this test process running examples/mcp_server.py."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
            with open(f'/proc/{entry}/cmdline', 'rb') as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != 'Z' and b'mcp_server.py' in command:
            found.append(int(entry))
    return found


async def servers_settle_to(expected: set[int]) -> bool:
    """Whether the live server children become exactly `expected` within 5 s (a crashed one takes a moment)."""
    for _ in range(50):
        if set(server_children()) == expected:
            return True
        await asyncio.sleep(0.1)
    return False


@pytest.mark.parametrize(
    'make_source',
    [
        pytest.param(lambda: notes_server(), id='MCPToolset'),
        pytest.param(lambda: MCP(native=False, local=notes_server()), id='MCP-capability'),
    ],
)
async def test_server_exiting_mid_call_fails_uncertain_and_the_next_run_reconnects(make_source: Any) -> None:
    proxy = ToolProxyCapability(groups={'notes': ToolProxyGroup(source=make_source(), description='Notes')})
    pid, crash, after = await run(
        proxy, ('server_pid', {}), ('crash_server', {'title': 'half-done'}), ('list_notes', {})
    )
    assert pid.outcome == 'success'
    first_pid = int(pid.content)
    assert crash.outcome == 'failed'
    text = crash.model_response_str()
    assert "'crash_server' in group 'notes' did not complete" in text and UNCERTAIN in text
    # The rest of the run sees the dead connection the same way; the run itself continues to its end.
    assert after.outcome == 'failed' and UNCERTAIN in after.model_response_str()
    assert not alive(first_pid)

    # The next run starts a fresh server process: a new pid, and the note written before the crash is gone.
    pid, notes, added = await run(
        proxy, ('server_pid', {}), ('list_notes', {}), ('add_note', {'title': 't', 'body': 'b'})
    )
    assert int(pid.content) != first_pid and alive(int(pid.content))
    assert notes.outcome == 'success' and notes.content in ([], None, '')
    assert added.content == {'id': 1, 'title': 't', 'body': 'b'}
    assert await servers_settle_to({int(pid.content)}), server_children()  # only the current connection's server


async def test_server_that_never_answers_times_out_uncertain_and_the_connection_stays_usable() -> None:
    proxy = ToolProxyCapability(
        groups={'notes': ToolProxyGroup(source=notes_server(read_timeout=1.5), description='Notes')}
    )
    started = time.monotonic()
    hang, convert = await run(
        proxy,
        ('never_answer', {}),
        ('convert_temperature', {'value': 100, 'from_unit': 'celsius', 'to_unit': 'kelvin'}),
    )
    elapsed = time.monotonic() - started
    assert hang.outcome == 'failed'
    text = hang.model_response_str()
    assert "'never_answer' in group 'notes' did not complete" in text and 'timed out' in text and UNCERTAIN in text
    assert convert.content == 373.15  # the same connection still answers after the timeout
    assert elapsed < RUN_LIMIT_S
    (again,) = await run(proxy, ('server_pid', {}))
    assert again.outcome == 'success'
    assert await servers_settle_to({int(again.content)}), server_children()


async def test_server_returning_an_error_is_a_retry_by_default_and_uncertain_with_error_behavior() -> None:
    default = ToolProxyCapability(groups={'notes': ToolProxyGroup(source=notes_server(), description='Notes')})
    failed, fine = await run(default, ('fail', {'message': 'database down'}), ('list_notes', {}))
    assert failed.outcome == 'retried' and 'database down' in failed.model_response_str()
    assert fine.outcome == 'success'

    strict = ToolProxyCapability(
        groups={'notes': ToolProxyGroup(source=notes_server(tool_error_behavior='error'), description='Notes')}
    )
    failed, fine = await run(strict, ('fail', {'message': 'database down'}), ('list_notes', {}))
    assert failed.outcome == 'failed'
    text = failed.model_response_str()
    assert "'fail' in group 'notes' failed unexpectedly" in text and 'database down' in text and UNCERTAIN in text
    assert fine.outcome == 'success'


async def test_function_tool_timeout_is_an_uncertain_failure_not_a_retry() -> None:
    """Pydantic AI turns a function tool's timeout into `ModelRetry('Timed out after ...')`; the tool was cut off
    mid-way, so through the proxy it is an uncertain-outcome failure."""

    async def transfer(amount: int) -> str:
        """Move money; hangs."""
        await asyncio.sleep(3600)
        return 'moved'

    slow = FunctionToolset([Tool(transfer, timeout=0.3)])
    proxy = ToolProxyCapability(groups={'notes': ToolProxyGroup(source=slow, description='Payments')})
    (part,) = await run(proxy, ('transfer', {'amount': 5}))
    assert part.outcome == 'failed'
    text = part.model_response_str()
    assert "'transfer' in group 'notes' did not complete (TimeoutError: Timed out after 0.3 seconds.)" in text
    assert UNCERTAIN in text


async def test_repeated_crashes_leak_no_server_processes() -> None:
    proxy = ToolProxyCapability(groups={'notes': ToolProxyGroup(source=notes_server(), description='Notes')})
    pids = set()
    for _ in range(5):
        pid, crash = await run(proxy, ('server_pid', {}), ('crash_server', {}))
        pids.add(int(pid.content))
        assert crash.outcome == 'failed' and UNCERTAIN in crash.model_response_str()
    assert len(pids) == 5  # a fresh process for every run
    assert await servers_settle_to(set()), server_children()  # every crashed server is gone, none left behind
    assert not any(alive(p) for p in pids)
