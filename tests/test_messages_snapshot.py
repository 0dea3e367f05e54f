"""Every model-facing retry and failure text, pinned word for word by inline snapshots.

One real `Agent` run per bad model output (a scripted `FunctionModel` makes the one call, then answers), over two
groups of real function tools. The snapshot holds exactly what the model received back. When a message changes on
purpose, `pytest tests/test_messages_snapshot.py --inline-snapshot=fix` rewrites the snapshot in this file; review
the diff like any other model-facing change (docs/reliability.md lists the bounds every message keeps).
"""

from __future__ import annotations

from typing import Any

import pytest
from inline_snapshot import snapshot
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, RetryPromptPart, ToolReturnPart
from pydantic_ai.toolsets import FunctionToolset
from support import CALL, SEARCH, Script

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

pytestmark = pytest.mark.anyio


def _tools() -> ToolProxyCapability[Any]:
    files: FunctionToolset[Any] = FunctionToolset()

    @files.tool_plain
    def read_file(path: str, max_bytes: int = 65536) -> str:
        """Read a text file."""
        return f'contents of {path}'

    @files.tool_plain
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f'deleted {path}'

    ops: FunctionToolset[Any] = FunctionToolset()

    @ops.tool_plain
    def restart_service(name: str) -> str:
        """Restart a service by name."""
        return f'restarted {name}'

    return ToolProxyCapability(
        groups={
            'files': ToolProxyGroup(source=files, description='Local files'),
            'ops': ToolProxyGroup(source=ops, description='Service operations'),
        }
    )


BAD_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    'search: query not a string': (SEARCH, {'query': 42}),
    'search: negative offset': (SEARCH, {'query': 'file', 'offset': -1}),
    'search: limit 0': (SEARCH, {'query': 'file', 'limit': 0}),
    'search: unknown argument': (SEARCH, {'query': 'file', 'colour': 'blue'}),
    'search: query over 8 KiB': (SEARCH, {'query': 'x ' * 5000}),
    'search: unknown group': (SEARCH, {'query': 'file', 'group': 'nope'}),
    'call: unknown group': (CALL, {'group': 'nope', 'tool': 'read_file', 'arguments': {}}),
    'call: unknown tool': (CALL, {'group': 'files', 'tool': 'reed_file', 'arguments': {}}),
    'call: canonical name as tool': (CALL, {'group': 'files', 'tool': 'files__read_file', 'arguments': {}}),
    'call: tool of another group': (CALL, {'group': 'ops', 'tool': 'read_file', 'arguments': {'path': 'a'}}),
    'call: arguments not JSON': (CALL, {'group': 'files', 'tool': 'read_file', 'arguments': '{"path": '}),
    'call: arguments a list': (CALL, {'group': 'files', 'tool': 'read_file', 'arguments': [1, 2]}),
    'call: arguments nested too deep': (
        CALL,
        {'group': 'files', 'tool': 'read_file', 'arguments': '{"path": ' * 150 + '1' + '}' * 150},
    ),
    'call: missing required argument': (CALL, {'group': 'files', 'tool': 'read_file', 'arguments': {}}),
    'call: wrong argument type': (
        CALL,
        {'group': 'files', 'tool': 'read_file', 'arguments': {'path': 'a', 'max_bytes': 'lots'}},
    ),
    'call: envelope without group': (CALL, {'tool': 'read_file', 'arguments': {}}),
    'call: envelope extra field': (CALL, {'group': 'files', 'tool': 'read_file', 'arguments': {}, 'why': 'x'}),
    'direct: member by canonical name': ('files__read_file', {'path': 'a'}),
    'direct: member by local name': ('read_file', {'path': 'a'}),
    'direct: unknown name': ('reed_fiel', {}),
}


async def _first_reply(name: str, args: dict[str, Any]) -> str:
    script = Script([[(name, args)]])
    await Agent(script.model, capabilities=[_tools()]).run('go')
    replies = [
        p
        for m in script.seen[-1]  # what the model received (the run's history keeps Pydantic AI's own texts)
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart | RetryPromptPart)
    ]
    assert len(replies) == 1
    reply = replies[0]
    return reply.model_response() if isinstance(reply, RetryPromptPart) else reply.model_response_str()


async def test_every_model_facing_message_word_for_word() -> None:
    said = {case: await _first_reply(name, args) for case, (name, args) in BAD_CALLS.items()}
    assert said == snapshot(
        {
            'search: query not a string': '{"error":"Invalid `search_proxy_tools` arguments: query: Input should be a valid string (got 42). Expected arguments: {\\"query\\": \\"<keywords>\\", \\"group\\": \\"<group>\\" or null, \\"limit\\": <int> or null, \\"offset\\": <int>}."}',
            'search: negative offset': '{"error":"`offset` must be 0 or a `next_offset` from an earlier search; got -1."}',
            'search: limit 0': '{"error":"`limit` must be between 1 and 10; got 0. Omit it for pages of 5, and page with `offset`."}',
            'search: unknown argument': '{"error":"Invalid `search_proxy_tools` arguments: colour: Extra inputs are not permitted. Expected arguments: {\\"query\\": \\"<keywords>\\", \\"group\\": \\"<group>\\" or null, \\"limit\\": <int> or null, \\"offset\\": <int>}."}',
            'search: query over 8 KiB': '{"error":"`query` is 10000 bytes; at most 8192 bytes are searched. Search with a few keywords naming the action and the object (5-20 words), e.g. \\"customer name\\"."}',
            'search: unknown group': '{"error":"Unknown group \'nope\'. Current groups: files, ops. Pick one of them, or omit `group` to search all groups."}',
            'call: unknown group': '{"error":"Unknown group \'nope\'. Current groups: files, ops. Expected envelope: {\\"group\\": \\"<group>\\", \\"tool\\": \\"<local tool name>\\", \\"arguments\\": {...}}."}',
            'call: unknown tool': "{\"error\":\"Group 'files' has no tool 'reed_file' in this step. Close names: read_file, delete_file. Use `search_proxy_tools` with group='files' to find the current tools, then call again.\"}",
            'call: canonical name as tool': "{\"error\":\"Group 'files' has no tool 'files__read_file' in this step. Close names: read_file, delete_file. Use `search_proxy_tools` with group='files' to find the current tools, then call again.\"}",
            'call: tool of another group': "{\"error\":\"Group 'ops' has no tool 'read_file' in this step. Use `search_proxy_tools` with group='ops' to find the current tools, then call again.\"}",
            'call: arguments not JSON': '{"error":"`arguments` must be a JSON object; the string given is not valid JSON (Expecting value: line 1 column 10 (char 9)). Expected envelope: {\\"group\\": \\"<group>\\", \\"tool\\": \\"<local tool name>\\", \\"arguments\\": {...}}."}',
            'call: arguments a list': '{"error":"`arguments` must be an object matching the tool\'s parameters_json_schema, got list. Expected envelope: {\\"group\\": \\"<group>\\", \\"tool\\": \\"<local tool name>\\", \\"arguments\\": {...}}."}',
            'call: arguments nested too deep': '{"error":"`arguments` nest more than 100 levels deep; send a plain object matching the tool\'s parameters_json_schema. Expected envelope: {\\"group\\": \\"<group>\\", \\"tool\\": \\"<local tool name>\\", \\"arguments\\": {...}}."}',
            'call: missing required argument': "{\"error\":\"`arguments` do not match the parameters of 'read_file' in group 'files': arguments.path: Field required. Fix `arguments` to match its parameters_json_schema (`search_proxy_tools` with group='files' returns it) and call again.\"}",
            'call: wrong argument type': "{\"error\":\"`arguments` do not match the parameters of 'read_file' in group 'files': arguments.max_bytes: Input should be a valid integer, unable to parse string as an integer (got 'lots'). Fix `arguments` to match its parameters_json_schema (`search_proxy_tools` with group='files' returns it) and call again.\"}",
            'call: envelope without group': '{"error":"Invalid `call_proxy_tool` envelope: group: Field required. Expected envelope: {\\"group\\": \\"<group>\\", \\"tool\\": \\"<local tool name>\\", \\"arguments\\": {...}}. Use `search_proxy_tools` to find the current groups, tools and their parameter schemas."}',
            'call: envelope extra field': '{"error":"Invalid `call_proxy_tool` envelope: why: Extra inputs are not permitted. Expected envelope: {\\"group\\": \\"<group>\\", \\"tool\\": \\"<local tool name>\\", \\"arguments\\": {...}}. Use `search_proxy_tools` to find the current groups, tools and their parameter schemas."}',
            'direct: member by canonical name': '{"error":"\'files__read_file\' cannot be called directly. Call `call_proxy_tool` with {\\"group\\": \\"files\\", \\"tool\\": \\"read_file\\", \\"arguments\\": {...}} instead."}',
            'direct: member by local name': '{"error":"Unknown tool name: \'read_file\'. It is not a tool you can call directly: it is a grouped tool. Call `call_proxy_tool` with {\\"group\\": \\"files\\", \\"tool\\": \\"read_file\\", \\"arguments\\": {...}}. Find grouped tools with `search_proxy_tools` (groups: files, ops), then call them through `call_proxy_tool`."}',
            'direct: unknown name': '{"error":"Unknown tool name: \'reed_fiel\'. It is not a tool you can call directly. Find grouped tools with `search_proxy_tools` (groups: files, ops), then call them through `call_proxy_tool`."}',
        }
    )


def _failing_tools() -> ToolProxyCapability[Any]:
    import asyncio

    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
    from pydantic_ai.tools import Tool

    def charge(amount: int) -> str:
        """Charge a card."""
        raise RuntimeError('card processor exploded')

    async def transfer(amount: int) -> str:
        """Move money; hangs."""
        await asyncio.sleep(3600)
        return 'moved'

    def delete_account(account_id: int) -> str:
        """Delete an account (needs approval)."""
        return 'deleted'

    def submit_report(name: str) -> str:
        """Submit a report job; its result arrives outside the run."""
        raise CallDeferred(metadata={'job': 'private'})

    def approve_refund(amount: int) -> str:
        """Refund, asking for approval half-way through."""
        raise ApprovalRequired()

    source = FunctionToolset(
        [
            charge,
            Tool(transfer, timeout=0.1),
            Tool(delete_account, requires_approval=True),
            submit_report,
            approve_refund,
        ]
    )
    return ToolProxyCapability(groups={'jobs': ToolProxyGroup(source=source, description='Jobs')})


FAILED_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    'target raises': ('charge', {'amount': 5}),
    'target times out': ('transfer', {'amount': 5}),
    'approval declared, unresolved': ('delete_account', {'account_id': 3}),
    'CallDeferred from the body': ('submit_report', {'name': 'q3'}),
    'ApprovalRequired from the body': ('approve_refund', {'amount': 5}),
}


async def test_every_call_failure_message_word_for_word() -> None:
    said: dict[str, str] = {}
    for case, (tool, arguments) in FAILED_CALLS.items():
        script = Script([[(CALL, {'group': 'jobs', 'tool': tool, 'arguments': arguments})]])
        await Agent(script.model, capabilities=[_failing_tools()]).run('go')
        (reply,) = [
            p for m in script.seen[-1] if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
        ]
        said[case] = f'{reply.outcome}: {reply.model_response_str(wrap_if_error=False)}'
    # Beside an output tool call the same text is a retry (it keeps the output from ending the run), as is the status
    # Pydantic AI gives the output it held back.
    from pydantic import BaseModel

    class Answer(BaseModel):
        ok: bool

    envelope = (CALL, {'group': 'jobs', 'tool': 'charge', 'arguments': {'amount': 5}})
    script = Script([[envelope, ('final_result', {'ok': True})], [('final_result', {'ok': False})]])
    await Agent(script.model, output_type=Answer, capabilities=[_failing_tools()]).run('go')
    for reply in [
        p for m in script.seen[1] if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]:
        said[f'target raises, beside {reply.tool_name}'] = (
            f'{reply.outcome}: {reply.model_response_str(wrap_if_error=False)}'
        )
    assert said == snapshot(
        {
            'target raises': "failed: Tool 'charge' in group 'jobs' failed unexpectedly (RuntimeError: card processor exploded). Its outcome is uncertain: it may have had effects. Check the current state before retrying, especially before repeating a change.",
            'target times out': "failed: Tool 'transfer' in group 'jobs' did not complete (TimeoutError: Timed out after 0.1 seconds.). Its outcome is uncertain: it may have had effects. Check the current state before retrying, especially before repeating a change.",
            'approval declared, unresolved': "failed: Tool 'delete_account' in group 'jobs' needs host interaction (approval) before it runs, which cannot be resolved inside this call, so it did not run. Ask the host to expose it directly.",
            'CallDeferred from the body': "failed: Tool 'submit_report' in group 'jobs' started and then asked for host interaction (an external result), which cannot be resolved inside this call. Its work may have started (e.g. a job it submitted), and its result cannot arrive through this call. Check the current state before calling it again; ask the host to expose it directly to get its result.",
            'ApprovalRequired from the body': "failed: Tool 'approve_refund' in group 'jobs' started and then asked for host interaction (approval), which cannot be resolved inside this call. Its work may have started (e.g. a job it submitted), and its result cannot arrive through this call. Check the current state before calling it again; ask the host to expose it directly to get its result.",
            'target raises, beside call_proxy_tool': "retried: Tool 'charge' in group 'jobs' failed unexpectedly (RuntimeError: card processor exploded). Its outcome is uncertain: it may have had effects. Check the current state before retrying, especially before repeating a change.",
            'target raises, beside final_result': 'success: Output not used as the final result - addressing tool retries from this round first.',
        }
    )
