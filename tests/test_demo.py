"""examples/demo.py: the scripted model calls the tool a reader of the page would, and `--model` reaches a real API.

The real-model path runs the demo as a subprocess against an OpenAI-compatible Chat Completions server on
loopback (`OPENAI_BASE_URL`), which answers like a minimal model: search with the user's words, call the
first tool found, then answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'examples'))
from demo import CALL, SEARCH, Request, ScriptedModel  # noqa: E402

INFO = AgentInfo(
    function_tools=[],
    allow_text_output=True,
    output_tools=[],
    model_settings=None,
    model_request_parameters=None,
    instructions=None,
)  # type: ignore[call-arg]


def _after_search(model: ScriptedModel, prompt: str, page: list[tuple[str, str]]) -> ModelResponse:
    content = {'tools': [{'group': g, 'tool': t} for g, t in page], 'total': len(page), 'next_offset': None}
    messages = [
        ModelRequest(parts=[UserPromptPart(prompt)]),
        ModelResponse(parts=[ToolCallPart(SEARCH, {'query': prompt})]),
        ModelRequest(parts=[ToolReturnPart(SEARCH, content, tool_call_id='c1')]),
    ]
    return model(messages, INFO)


def test_scripted_model_calls_the_expected_tool_when_the_page_has_it() -> None:
    req = Request('find flights', 'travel', 'book_flight', {'to': 'Oslo'})
    model = ScriptedModel({req.prompt: req})
    response = _after_search(model, req.prompt, [('travel', 'search_hotels'), ('misc', 'x'), ('travel', 'book_flight')])
    call = response.parts[0]
    assert isinstance(call, ToolCallPart) and call.tool_name == CALL
    assert call.args == {'group': 'travel', 'tool': 'book_flight', 'arguments': {'to': 'Oslo'}}
    assert model.ranks[req.prompt] == 3 and model.called[req.prompt] == ('travel', 'book_flight')


def test_scripted_model_calls_the_top_match_and_records_that_it_was_not_found() -> None:
    req = Request('find flights', 'travel', 'book_flight', {})
    model = ScriptedModel({req.prompt: req})
    response = _after_search(model, req.prompt, [('travel', 'search_hotels'), ('misc', 'x')])
    call = response.parts[0]
    assert isinstance(call, ToolCallPart) and call.args['tool'] == 'search_hotels'  # type: ignore[index]
    assert model.ranks[req.prompt] is None and model.called[req.prompt] == ('travel', 'search_hotels')


class _ChatCompletions(BaseHTTPRequestHandler):
    """`POST /v1/chat/completions`: search with the prompt, call the first tool found, then answer `done`."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        type(self).seen.append(body)
        messages, names = body['messages'], [t['function']['name'] for t in body.get('tools', [])]
        last = messages[-1]
        message: dict[str, Any] = {'role': 'assistant', 'content': 'done'}
        call: dict[str, Any] | None = None
        if last['role'] == 'user' and SEARCH in names:
            call = {'name': SEARCH, 'arguments': json.dumps({'query': last['content'], 'limit': 3})}
        elif last['role'] == 'tool' and len([m for m in messages if m['role'] == 'tool']) == 1:
            page = json.loads(last['content'])
            if page.get('tools'):
                first = page['tools'][0]
                call = {
                    'name': CALL,
                    'arguments': json.dumps({'group': first['group'], 'tool': first['tool'], 'arguments': {}}),
                }
        if call is not None:
            message = {
                'role': 'assistant',
                'content': None,
                'tool_calls': [{'id': f'call_{len(messages)}', 'type': 'function', 'function': call}],
            }
        reply = json.dumps(
            {
                'id': 'chatcmpl-loopback',
                'object': 'chat.completion',
                'created': 0,
                'model': body['model'],
                'choices': [{'index': 0, 'message': message, 'finish_reason': 'tool_calls' if call else 'stop'}],
                'usage': {'prompt_tokens': 1, 'completion_tokens': 1, 'total_tokens': 2},
            }
        ).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@pytest.fixture
def chat_server() -> Iterator[str]:
    _ChatCompletions.seen = []
    server = ThreadingHTTPServer(('127.0.0.1', 0), _ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f'http://127.0.0.1:{server.server_address[1]}/v1'
    finally:
        server.shutdown()
        server.server_close()


def _demo(*args: str, env: dict[str, str], prelude: str = '') -> subprocess.CompletedProcess[str]:
    code = f'{prelude}import runpy, sys; sys.argv = ["demo.py", *{list(args)!r}]; runpy.run_path("examples/demo.py", run_name="__main__")'
    base = {k: v for k, v in os.environ.items() if not k.startswith('OPENAI_')}
    return subprocess.run(
        [sys.executable, '-c', code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=300
    )


def test_demo_with_a_real_model_api_on_loopback(chat_server: str) -> None:
    proc = _demo(
        '--model',
        'openai-chat:loopback-model',
        '--requests',
        '1',
        env={'OPENAI_BASE_URL': chat_server, 'OPENAI_API_KEY': 'sk-loopback'},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count(': real model\n') == 3  # 1 BFCL request + the two notes requests; the clock is ungrouped
    offered = {t['function']['name'] for body in _ChatCompletions.seen for t in body.get('tools', [])}
    assert {SEARCH, CALL, 'current_utc_time'} <= offered and len(offered) == 3  # no member schema in any request
    called = [
        m
        for body in _ChatCompletions.seen
        for m in body['messages']
        if m['role'] == 'assistant' and m.get('tool_calls')
    ]
    assert any(c['tool_calls'][0]['function']['name'] == CALL for c in called)
    assert 'tool-definition bytes per model request' in proc.stdout


def test_demo_names_the_package_a_missing_provider_needs() -> None:
    # The provider's SDK is made unimportable in the child, whatever this environment has installed.
    proc = _demo(
        '--model', 'anthropic:claude-sonnet-4-5', env={}, prelude='import sys; sys.modules["anthropic"] = None; '
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith('demo: --model anthropic:claude-sonnet-4-5 needs the anthropic provider package: ')
    assert 'pip install "pydantic-ai-slim[anthropic]"' in lines[0]
