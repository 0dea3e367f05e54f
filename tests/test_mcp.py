"""Grouping a real stdio MCP server (examples/mcp_server.py): as an MCPToolset and as the MCP capability."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.capabilities import MCP
from pydantic_ai.mcp import MCPToolset
from support import CALL, SEARCH, Script, last_return, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup

SERVER = Path(__file__).resolve().parent.parent / 'examples' / 'mcp_server.py'


def transport() -> StdioTransport:
    return StdioTransport(command=sys.executable, args=[str(SERVER), '--no-test-tools'])


@pytest.mark.parametrize(
    'make_source',
    [
        pytest.param(lambda: MCPToolset(transport(), id='notes', include_instructions=True), id='MCPToolset'),
        pytest.param(
            lambda: MCP(native=False, local=MCPToolset(transport(), id='notes', include_instructions=True)),
            id='MCP-capability',
        ),
    ],
)
async def test_grouped_stdio_mcp_server_search_and_call(make_source: Any) -> None:
    script = Script(
        [
            [(SEARCH, {'query': 'temperature convert', 'group': 'notes'})],
            [
                (
                    CALL,
                    {
                        'group': 'notes',
                        'tool': 'convert_temperature',
                        'arguments': {'value': 100, 'from_unit': 'celsius', 'to_unit': 'fahrenheit'},
                    },
                )
            ],
            [(CALL, {'group': 'notes', 'tool': 'add_note', 'arguments': '{"title": "t", "body": "b"}'})],
            'done',
        ]
    )
    proxy = ToolProxyCapability(groups={'notes': ToolProxyGroup(source=make_source(), description='Notes and weather')})
    agent = Agent(script.model, capabilities=[proxy])
    result = await agent.run('x')
    page = page_of(last_return(result.all_messages(), SEARCH))
    first = page['tools'][0]
    assert first['tool'] == 'convert_temperature'
    assert 'value' in first['parameters_json_schema']['properties']
    # The server's instructions are withheld from the prompt and returned with discovered tools.
    assert first['instructions'] and all(i not in (script.infos[0].instructions or '') for i in first['instructions'])
    assert 'notes__convert_temperature' not in script.offered(0)
    outs = [p for p in returns(result.all_messages()) if p.tool_name == CALL]
    assert outs[0].content == 212.0
    assert outs[1].content == {'id': 1, 'title': 't', 'body': 'b'}


async def test_mcp_capability_with_native_true_is_rejected() -> None:
    from pydantic_ai.exceptions import UserError

    proxy = ToolProxyCapability(
        groups={
            'notes': ToolProxyGroup(source=MCP('http://127.0.0.1:9/mcp', native=True, local=False), description='Notes')
        }
    )
    with pytest.raises(UserError, match='native=False, local=True'):
        await Agent(Script(['ok']).model, capabilities=[proxy]).run('x')
