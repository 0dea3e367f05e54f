"""Group descriptions of `mcpServers` servers from what they say about themselves (issue 35 item 6), with real stdio
servers (tests/banner_mcp_server.py on the `fastmcp` package, examples/mcp_server.py on the `mcp` SDK,
tests/hostile_mcp_server.py): plain text, at most 512 characters, and the same in the first run (no cached
listing) as in every later one, so the model's request is byte-identical across runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from support import CALL, last_return

from pydantic_ai_toolproxy import ToolProxyCapability
from pydantic_ai_toolproxy.mcp_listing_cache import ServerListing
from pydantic_ai_toolproxy.mcp_servers.describe import MAX_DESCRIPTION_CHARS, described, plain_text

ROOT = Path(__file__).resolve().parent.parent
BANNER = str(ROOT / 'tests' / 'banner_mcp_server.py')
NOTES = str(ROOT / 'examples' / 'mcp_server.py')
HOSTILE = str(ROOT / 'tests' / 'hostile_mcp_server.py')

WELCOME = """# Documentation server

**Use** `search_docs` to find *pages*; see [the guide](https://example.com/guide).
Your pages live in /home/alice/docs and ~/notes/today.md (C:\\Users\\alice\\docs on Windows).

- fast
- offline

```bash
run --me
```
"""


def servers() -> dict[str, Any]:
    return {
        'docs': {'command': sys.executable, 'args': [BANNER, '--name', 'docs', '--instructions', WELCOME]},
        'notes server': {'command': sys.executable, 'args': [NOTES, '--no-test-tools']},
        'time': {'command': sys.executable, 'args': [BANNER, '--name', 'mcp-time']},  # a package-like name only
        'hostile': {'command': sys.executable, 'args': [HOSTILE]},  # serverInfo name 'hostile' repeats the file's
    }


class Recorder:
    """A `FunctionModel` that searches once, then answers, recording each request's tools and instructions."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.model = FunctionModel(self.respond)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tools = [[t.name, t.description, t.parameters_json_schema] for t in info.function_tools]
        self.requests.append(json.dumps({'tools': tools, 'instructions': info.instructions}, sort_keys=True))
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': 'echo text'})])
        return ModelResponse(parts=[TextPart('done')])


def test_plain_text_keeps_the_words_and_drops_markdown_and_paths() -> None:
    said = plain_text(WELCOME)
    assert said == (
        'Documentation server Use search_docs to find pages; see the guide. Your pages live in [path] and [path] '
        '([path] on Windows). fast offline run --me'
    )
    assert plain_text('see https://example.com/a/b and /etc/hosts, snake_case_name stays') == (
        'see https://example.com/a/b and [path], snake_case_name stays'
    )
    long = described('x', ServerListing(tools=(), instructions='word ' * 400))
    assert long is not None and len(long) <= MAX_DESCRIPTION_CHARS and long.endswith('...')
    assert described('time', ServerListing(tools=(), server_name='mcp-time')) is None
    assert described('time', ServerListing(tools=(), server_name='Time')) is None
    assert described('aws', ServerListing(tools=(), server_title='AWS Documentation')) == (
        'AWS Documentation (MCP server "aws")'
    )
    assert described('x', ServerListing(tools=(), instructions='\ud800 lone')) == '? lone'


@pytest.mark.parametrize('lazy', [False, True])
async def test_the_first_runs_model_request_equals_every_later_one(tmp_path: Path, lazy: bool) -> None:
    path = tmp_path / 'mcp.json'
    path.write_text(json.dumps({'mcpServers': servers()}), encoding='utf-8')
    cache = tmp_path / 'listings.sqlite3'
    runs: list[Recorder] = []
    descriptions: list[dict[str, str]] = []
    for _ in range(3):  # run 1: no cached listing; runs 2 and 3: a new capability over the warm cache
        proxy = ToolProxyCapability.from_mcp_config(path, listing_cache=cache, lazy=lazy)
        recorder = Recorder()
        await Agent(recorder.model, capabilities=[proxy]).run('find the echo tool')
        runs.append(recorder)
        descriptions.append({name: group.description for name, group in proxy.groups.items()})
        for group in proxy.groups.values():
            group.source.wait_stored(10.0)  # type: ignore[attr-defined]
    assert len(runs[0].requests) == 2
    for later in runs[1:]:
        assert later.requests == runs[0].requests  # byte-identical tools and instructions, every request
    assert descriptions[0] == descriptions[1] == descriptions[2]
    said = descriptions[0]
    assert said['docs'].startswith('Documentation server Use search_docs to find pages; see the guide.')
    assert '/home/alice' not in runs[0].requests[0] and '**' not in said['docs'] and '~/' not in said['docs']
    assert said['notes_server'].startswith('Notes & weather demo server.')
    assert said['time'] == 'Tools of the MCP server "time"'  # `mcp-time` says nothing more
    assert said['hostile'] == 'Tools of the MCP server "hostile"'
    assert all(len(text) <= MAX_DESCRIPTION_CHARS for text in said.values())
    assert 'Documentation server Use search_docs' in runs[0].requests[0]  # in the controls the model reads


async def test_a_description_never_changes_during_a_capabilitys_life(tmp_path: Path) -> None:
    said = tmp_path / 'instructions.txt'
    said.write_text('', encoding='utf-8')  # no instructions: the default description, from the first run on
    servers = {'docs': {'command': sys.executable, 'args': [BANNER, '--instructions-file', str(said)]}}
    path = tmp_path / 'mcp.json'
    path.write_text(json.dumps({'mcpServers': servers}), encoding='utf-8')
    cache = tmp_path / 'listings.sqlite3'
    first = ToolProxyCapability.from_mcp_config(path, listing_cache=cache, lazy=True)
    await Agent(Recorder().model, capabilities=[first]).run('x')
    assert first.groups['docs'].description == 'Tools of the MCP server "docs"'
    first.groups['docs'].source.wait_stored(10.0)  # type: ignore[attr-defined]
    said.write_text('Second words, after an upgrade.', encoding='utf-8')  # the same command line: the same key
    warm = ToolProxyCapability.from_mcp_config(path, listing_cache=cache, lazy=True)
    recorder = Recorder()
    calls = iter(
        [
            ModelResponse(
                parts=[ToolCallPart('call_proxy_tool', {'group': 'docs', 'tool': 'echo', 'arguments': {'text': 'hi'}})]
            ),
            ModelResponse(parts=[TextPart('done')]),
        ]
    )

    def call_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        recorder.respond(messages, info)
        return next(calls)

    result = await Agent(FunctionModel(call_then_answer), capabilities=[warm]).run('x')  # the call starts it
    assert last_return(result.all_messages(), CALL).content == 'hi'  # the live server, saying 'Second words'
    assert len(recorder.requests) == 2 and recorder.requests[0] == recorder.requests[1]
    assert 'Tools of the MCP server \\"docs\\"' in recorder.requests[1] and 'Second words' not in recorder.requests[1]
    assert warm.groups['docs'].description == 'Tools of the MCP server "docs"'
