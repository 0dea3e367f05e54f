"""Host-owned history is never edited: the proxy rewrites what a request sends, in copies.

Pydantic AI's retry for an unknown tool name lists every registered tool; the proxy sends the model a short one
instead (`controls/unknown.py`). It does so in the request's own list: the `ModelRequest` objects of the run's history, of
a `message_history` the host passed and of an earlier `result.all_messages()` keep Pydantic AI's text, so a stored
transcript stays byte-identical and an agent without the proxy continues it as it was written. Real runs with a
scripted `FunctionModel`; what the model received is read from the messages it was given.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ToolReturnPart
from pydantic_ai.toolsets import FunctionToolset
from support import CALL, Script

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy._messages import MAX_MESSAGE_CHARS

pytestmark = pytest.mark.anyio

PROXY_WORDS = 'It is not a tool you can call directly'


def proxy(n: int = 300) -> ToolProxyCapability[Any]:
    source: FunctionToolset[Any] = FunctionToolset()
    for i in range(n):

        def tool(x: int = 0, _i: int = i) -> str:
            return f'{_i}:{x}'

        source.add_function(tool, name=f'read_record_{i}', description=f'Read record number {i} of the archive.')
    return ToolProxyCapability(groups={'archive': ToolProxyGroup(source=source, description='The record archive')})


def retries_in(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.outcome == 'retried'
    ]


def stored(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


async def test_a_stored_transcript_is_byte_identical_after_a_run_continues_it() -> None:
    capability = proxy()
    first = await Agent(Script([[('read_record_7', {'x': 1})]]).model, capabilities=[capability]).run('go')
    history = first.all_messages()
    before = stored(history)
    (original,) = retries_in(history)
    assert 'Available tools' in str(original.content)  # Pydantic AI's own text, kept in the run's history

    script = Script([[('read_record_8', {})], 'answered'])
    second = await Agent(script.model, capabilities=[capability]).run('continue', message_history=history)

    assert stored(history) == before  # the host's objects, and an earlier all_messages(), are unchanged
    assert stored(first.all_messages()) == before
    # ...while the model received the short retries, for the old one and for the new one, in every request.
    for request in script.seen:
        sent = retries_in(request)
        assert sent and all(len(p.model_response_str(wrap_if_error=False)) <= MAX_MESSAGE_CHARS for p in sent)
        assert all(PROXY_WORDS in p.model_response_str(wrap_if_error=False) for p in sent)
        assert any(
            '`call_proxy_tool` with {"group": "archive", "tool": "read_record_7"' in str(p.content) for p in sent
        )
    assert str(retries_in(second.all_messages())[0].content) == str(original.content)


async def test_an_agent_without_the_proxy_continues_the_transcript_as_it_was_written() -> None:
    first = await Agent(Script([[('read_record_7', {})]]).model, capabilities=[proxy()]).run('go')
    history = first.all_messages()
    script = Script(['plain answer'])
    await Agent(script.model).run('continue', message_history=history)
    (sent,) = retries_in(script.seen[0])
    assert PROXY_WORDS not in str(sent.content) and CALL not in str(sent.content).split('Available tools')[0]
    assert str(sent.content) == str(retries_in(history)[0].content)


async def test_the_rewrite_is_the_same_bytes_in_every_later_request() -> None:
    """A retry is rewritten once per part: later requests resend the same text (a provider's prompt cache holds)."""
    script = Script([[('read_record_7', {})], [(CALL, {'group': 'archive', 'tool': 'read_record_7', 'arguments': {}})]])
    result = await Agent(script.model, capabilities=[proxy()]).run('go')
    texts = [[str(p.content) for p in retries_in(request)] for request in script.seen[1:]]
    assert len(texts) == 2 and texts[0] == texts[1] and PROXY_WORDS in texts[0][0]
    assert 'Available tools' in str(retries_in(result.all_messages())[0].content)


async def test_the_runs_own_requests_keep_their_instructions_and_new_messages() -> None:
    """Swapping a request for a copy in what is sent keeps Pydantic AI's bookkeeping: the request in history records
    the instructions sent, and `new_messages()` is still the run's own messages."""
    capability = proxy(5)
    first = await Agent(Script([[('read_record_1', {})]]).model, capabilities=[capability]).run('go')
    script = Script([[('read_record_2', {})]])
    second = await Agent(script.model, capabilities=[capability], instructions='Be brief.').run(
        'again', message_history=first.all_messages()
    )
    new = second.new_messages()
    assert new[0] is not first.all_messages()[0] and len(second.all_messages()) == len(first.all_messages()) + len(new)
    requests = [m for m in new if isinstance(m, ModelRequest)]
    assert requests and all(r.instructions and 'Be brief.' in r.instructions for r in requests)
