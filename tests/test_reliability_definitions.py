"""Hostile or broken tool definitions from a source: no crash, no stack overflow, bounded memory.

What happens, by kind (also in the README, "Reliability"):

* Any schema value (non-object, `$ref` cycles, Python-level cycles, 10,000-deep nesting, NaN/Infinity defaults,
  huge fan-out) is **indexed on what can be read**: the Rust walk reads only dicts, lists, tuples and strings,
  iteratively, at most 32 levels deep and 2,000 nodes, so the tool is found by its name and description.
  The tool stays callable; its own validator decides.
* Search shows the schema as it is when it can be sent as JSON (NaN/Infinity become `null`, as Pydantic AI
  sends them). An entry that cannot be sent at all (a circular or ~250+-deep schema) or that is larger than
  `max_search_bytes` (a 1 MB description) fails only the search page it would start, naming the tool and
  the `offset` that skips it; pages before it end just before it.
* A tool name that is not a non-empty, valid-Unicode `str` is a **preparation error** (`UserError` naming the
  group and the name).
* MCP listings are parsed and validated by the MCP SDK first: duplicate keys keep the last value, `NaN`
  literals are accepted; a listing the SDK rejects (e.g. a number as a tool name) fails the source's
  preparation with the SDK's error, and one nested beyond the SDK's JSON limit is dropped by the SDK and fails
  after `MCPToolset(read_timeout=...)`.
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import UserError
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema
from support import CALL, SEARCH, page_of

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup
from pydantic_ai_toolproxy._private import DynamicToolset

HOSTILE_SERVER = Path(__file__).resolve().parent / 'hostile_mcp_server.py'


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {'type': 'string', 'description': 'innermost'}
    for _ in range(depth):
        schema = {'type': 'object', 'properties': {'p': schema}}
    return schema


def cyclic() -> dict[str, Any]:
    schema: dict[str, Any] = {'type': 'object', 'properties': {}}
    schema['properties']['itself'] = schema
    return schema


REF_CYCLE = {
    'type': 'object',
    '$defs': {'Node': {'type': 'object', 'properties': {'child': {'$ref': '#/$defs/Node'}}}},
    'properties': {'root': {'$ref': '#/$defs/Node'}},
}
NAN_DEFAULTS = {
    'type': 'object',
    'properties': {'x': {'type': 'number', 'default': float('nan')}, 'y': {'type': 'number', 'default': float('inf')}},
}
WIDE = {
    'type': 'object',
    'properties': {f'p{i}': {'type': 'string', 'description': f'field {i}'} for i in range(100_000)},
}

# name -> (schema factory, description, what search does with the entry: 'shown', 'unsendable' or 'oversize')
HOSTILE: dict[str, tuple[Any, str, str]] = {
    'list_schema': (lambda: [1, 2, 3], 'list schema', 'shown'),
    'string_schema': (lambda: 'not a schema', 'string schema', 'shown'),
    'none_schema': (lambda: None, 'none schema', 'shown'),
    'string_typed': (lambda: {'type': 'string'}, 'string typed', 'shown'),
    'set_schema': (lambda: {'type': 'object', 'enum': {1, 2}}, 'set schema', 'shown'),
    'ref_cycle': (lambda: REF_CYCLE, 'ref cycle', 'shown'),
    'nan_defaults': (lambda: NAN_DEFAULTS, 'nan defaults', 'shown'),
    'python_cycle': (cyclic, 'python cycle', 'unsendable'),
    'deep_10000': (lambda: nested(10_000), 'deep nesting', 'unsendable'),
    'object_keys': (lambda: {'type': 'object', 'properties': {object(): 1}}, 'object keys', 'unsendable'),
    'megabyte_description': (lambda: {'type': 'object'}, '' + 'lorem ipsum ' * 87_382, 'oversize'),
    'wide_100000': (lambda: WIDE, 'wide schema', 'oversize'),
}


async def _accept_anything(**kwargs: Any) -> str:
    return 'ran'


def hostile_toolset(name: str) -> FunctionToolset[Any]:
    """One hostile tool plus a well-formed neighbour, `zz_neighbour`, which browses after it."""
    factory, description, _ = HOSTILE[name]
    hostile = Tool.from_schema(_accept_anything, name=name, description=description, json_schema=factory())

    async def zz_neighbour(text: str = '') -> str:
        """A well-formed tool next to a hostile one."""
        return 'neighbour ran'

    return FunctionToolset([hostile, Tool(zz_neighbour)])


def returns_of(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    return {
        p.tool_call_id: p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }


def scripted(turns: list[list[ToolCallPart]]) -> FunctionModel:
    queue = iter(turns)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(queue, [TextPart('done')]))

    return FunctionModel(model)


@pytest.mark.parametrize('name', list(HOSTILE))
async def test_hostile_schema_is_indexed_on_what_can_be_read(name: str) -> None:
    factory, description, kind = HOSTILE[name]
    model = scripted(
        [
            [
                ToolCallPart(SEARCH, {'query': name}, tool_call_id='by_name'),
                ToolCallPart(SEARCH, {'query': '', 'group': 'g', 'limit': 2}, tool_call_id='page1'),
                ToolCallPart(SEARCH, {'query': '', 'group': 'g', 'limit': 2, 'offset': 1}, tool_call_id='skip'),
            ],
            [
                ToolCallPart(CALL, {'group': 'g', 'tool': name, 'arguments': {}}, tool_call_id='call'),
                ToolCallPart(CALL, {'group': 'g', 'tool': 'zz_neighbour', 'arguments': {}}, tool_call_id='neighbour'),
            ],
        ]
    )
    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=hostile_toolset(name), description='Hostile')})
    tracemalloc.start()
    try:
        result = await Agent(model, capabilities=[proxy]).run('x')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.output == 'done'
    parts = returns_of(result.all_messages())
    by_name = parts['by_name']
    if kind == 'shown':
        page = page_of(by_name)
        entry = page['tools'][0]
        assert entry['tool'] == name and entry['description'] == description
        # The schema is shown exactly as Pydantic AI serializes it for the model (NaN/Infinity become null).
        from pydantic_ai.messages import tool_return_ta

        assert entry['parameters_json_schema'] == json.loads(tool_return_ta.dump_json(factory()))
        assert page_of(parts['page1'])['total'] == 2
    else:
        assert by_name.outcome == 'failed'
        text = by_name.model_response_str()
        assert repr(name) in text and 'offset=1' in text
        assert ('cannot be sent as JSON' if kind == 'unsendable' else 'cannot fit') in text
        # A page that would reach it ends just before it; the neighbour is still found by skipping it.
        first = parts['page1']
        assert first.outcome == 'failed' and repr(name) in first.model_response_str()
    skipped = page_of(parts['skip'])
    assert [t['tool'] for t in skipped['tools']] == ['zz_neighbour'] and skipped['total'] == 2
    # Still callable (its own validator decides), and the neighbour too.
    assert parts['call'].content == 'ran' and parts['neighbour'].content == 'neighbour ran'
    assert peak < 64 * 1024 * 1024, f'{peak / 2**20:.1f} MiB traced during the run'


async def test_schemas_rebuilt_every_step_with_cycles_and_depth_do_not_recurse() -> None:
    """A dynamic source that builds fresh circular and 10,000-deep schemas each step: every step compares them
    with the previous step's (to decide what to re-index) without a RecursionError."""

    def tools_for_step(ctx: RunContext[Any]) -> FunctionToolset[Any]:
        return FunctionToolset(
            [
                Tool.from_schema(
                    _accept_anything, name='circle', description='circular step tool', json_schema=cyclic()
                ),
                Tool.from_schema(
                    _accept_anything, name='abyss', description='deep step tool', json_schema=nested(10_000)
                ),
                Tool.from_schema(
                    _accept_anything, name='level', description='plain step tool', json_schema={'type': 'object'}
                ),
            ]
        )

    source = DynamicToolset(toolset_func=tools_for_step, per_run_step=True)
    # The same toolset object listing freshly built circular and deep schemas on every call.
    rebuilding = RawToolset(['loop', 'pit'], schemas={'loop': cyclic, 'pit': lambda: nested(10_000)})
    proxy = ToolProxyCapability(
        groups={
            'g': ToolProxyGroup(source=source, description='Dynamic'),
            'raw': ToolProxyGroup(source=rebuilding, description='Rebuilt every call'),
        }
    )
    turns = [[ToolCallPart(SEARCH, {'query': 'plain step tool'}, tool_call_id=f's{i}')] for i in range(4)]
    turns.append(
        [
            ToolCallPart(CALL, {'group': 'g', 'tool': 'circle', 'arguments': {}}, tool_call_id='c'),
            ToolCallPart(CALL, {'group': 'raw', 'tool': 'loop', 'arguments': {}}, tool_call_id='loop'),
        ]
    )
    result = await Agent(scripted(turns), capabilities=[proxy]).run('x')
    parts = returns_of(result.all_messages())
    for i in range(4):
        assert page_of(parts[f's{i}'])['tools'][0]['tool'] == 'level'
    assert parts['c'].content == 'ran' and parts['loop'].content == 'ran loop'


class RawToolset(AbstractToolset[Any]):
    """A source that lists whatever names it is given (as a broken third-party toolset could), with schemas
    built afresh by `schemas[name]()` on every listing."""

    def __init__(self, names: list[Any], schemas: dict[str, Any] | None = None) -> None:
        self.names = names
        self.schemas = schemas or {}

    @property
    def id(self) -> str | None:
        return 'raw'

    async def get_tools(self, ctx: RunContext[Any]) -> dict[Any, ToolsetTool[Any]]:
        validator = SchemaValidator(core_schema.dict_schema())
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    parameters_json_schema=self.schemas[name]() if name in self.schemas else {'type': 'object'},
                    description='raw',
                ),
                max_retries=1,
                args_validator=validator,
            )
            for name in self.names
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        return f'ran {name}'


@pytest.mark.parametrize(
    'bad', [12345, None, '', 'lone\ud800surrogate', b'bytes'], ids=['int', 'None', 'empty', 'surrogate', 'bytes']
)
async def test_unusable_tool_names_fail_preparation_naming_group_and_name(bad: Any) -> None:
    proxy = ToolProxyCapability(groups={'raw': ToolProxyGroup(source=RawToolset(['fine', bad]), description='Raw')})
    with pytest.raises(UserError) as info:
        await Agent(scripted([]), capabilities=[proxy]).run('x')
    message = str(info.value)
    assert "ToolProxy group 'raw'" in message and repr(bad)[:40] in message and 'non-empty strings' in message


async def test_odd_but_usable_names_are_members() -> None:
    names = ['a b/c', 'x' * 10_000, 'ünï.cödé', '__leading']
    turns = [
        [ToolCallPart(SEARCH, {'query': '', 'limit': 4}, tool_call_id='browse')],
        [
            ToolCallPart(CALL, {'group': 'raw', 'tool': n, 'arguments': {}}, tool_call_id=f'c{i}')
            for i, n in enumerate(names)
        ],
    ]
    proxy = ToolProxyCapability(groups={'raw': ToolProxyGroup(source=RawToolset(names), description='Raw')})
    result = await Agent(scripted(turns), capabilities=[proxy]).run('x')
    parts = returns_of(result.all_messages())
    assert sorted(t['tool'] for t in page_of(parts['browse'])['tools']) == sorted(names)
    assert [parts[f'c{i}'].content for i in range(len(names))] == [f'ran {n}' for n in names]


def hostile_mcp(*flags: str, read_timeout: float | None = None) -> MCPToolset[Any]:
    kwargs: dict[str, Any] = {} if read_timeout is None else {'read_timeout': read_timeout}
    return MCPToolset(
        StdioTransport(command=sys.executable, args=[str(HOSTILE_SERVER), *flags]), id='hostile', **kwargs
    )


async def test_hostile_mcp_listing_duplicate_keys_nan_ref_cycle_and_huge_description() -> None:
    queries = {
        'dup': 'dup_keys',
        'nan': 'nan_default',
        'ref': 'ref_cycle',
        'huge': 'huge_description',
        'odd': 'odd_schema',
    }
    turns = [
        [ToolCallPart(SEARCH, {'query': q, 'limit': 1}, tool_call_id=k) for k, q in queries.items()],
        [ToolCallPart(SEARCH, {'query': '', 'limit': 10}, tool_call_id='browse')],
        [
            ToolCallPart(CALL, {'group': 'h', 'tool': t, 'arguments': {}}, tool_call_id=f'call_{t}')
            for t in queries.values()
        ],
    ]
    proxy = ToolProxyCapability(groups={'h': ToolProxyGroup(source=hostile_mcp(), description='Hostile MCP server')})
    result = await Agent(scripted(turns), capabilities=[proxy]).run('x')
    parts = returns_of(result.all_messages())
    dup = page_of(parts['dup'])['tools'][0]
    assert dup['description'] == 'Duplicate keys, second'  # the last duplicate key wins, as the JSON parser reads it
    assert dup['parameters_json_schema']['properties'] == {'a': {'type': 'integer'}}
    nan = page_of(parts['nan'])['tools'][0]['parameters_json_schema']['properties']
    assert [nan[k]['default'] for k in 'xyz'] == [None, None, None]
    ref = page_of(parts['ref'])['tools'][0]['parameters_json_schema']
    assert ref['$defs']['Node']['properties']['child'] == {'$ref': '#/$defs/Node'}
    huge = parts['huge']
    assert (
        huge.outcome == 'failed'
        and 'huge_description' in huge.model_response_str()
        and 'offset=1' in huge.model_response_str()
    )
    # Browsing in name order reaches the huge entry second: the first page ends just before it.
    browse = page_of(parts['browse'])
    assert [t['tool'] for t in browse['tools']] == ['dup_keys'] and browse['next_offset'] == 1
    for tool in queries.values():
        assert parts[f'call_{tool}'].content == f'ran {tool}'


async def test_mcp_listing_the_sdk_rejects_fails_preparation_with_its_error() -> None:
    proxy = ToolProxyCapability(groups={'h': ToolProxyGroup(source=hostile_mcp('--bad-name'), description='Hostile')})
    with pytest.raises(Exception) as info:
        await Agent(scripted([]), capabilities=[proxy]).run('x')
    assert 'name' in str(info.value) and 'string' in str(info.value).lower()


async def test_mcp_listing_nested_beyond_the_sdk_json_limit_fails_after_read_timeout() -> None:
    proxy = ToolProxyCapability(
        groups={'h': ToolProxyGroup(source=hostile_mcp('--deep', '10000', read_timeout=2), description='Hostile')}
    )
    with pytest.raises(Exception) as info:
        await Agent(scripted([]), capabilities=[proxy]).run('x')
    assert 'timed out' in str(info.value)
