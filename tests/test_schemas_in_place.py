"""Current schemas, even edited in place: a `prepare` function that edits its `ToolDefinition`'s schema dict in
place (the same dict object every step) is ranked by what the step returns, and a reused member's cached
`function_signature` follows the edit."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, Script, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup, _core


def ship_tool(colours: list[list[str]]) -> Tool[Any]:
    """`ship_parcel`, whose `prepare` sets the `carrier` enum, in place, to the next item of `colours` per step."""

    def ship_parcel(carrier: str) -> str:
        """Ship a parcel."""
        return f'shipped by {carrier}'

    async def prepare(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        enum = colours[min(ctx.run_step, len(colours)) - 1]
        tool_def.parameters_json_schema['properties']['carrier']['enum'] = enum  # the same dict every step
        return tool_def

    return Tool(ship_parcel, prepare=prepare)


def other_tools() -> list[Tool[Any]]:
    def track_parcel(code: str) -> str:
        """Track a parcel by its code."""
        return code

    return [Tool(track_parcel)]


async def test_a_schema_edited_in_place_is_searched_as_the_step_returns_it() -> None:
    tool = ship_tool([['postnord'], ['bring'], ['bring']])
    schema = tool.function_schema.json_schema
    proxy = ToolProxyCapability(
        groups={'post': ToolProxyGroup(source=FunctionToolset([tool, *other_tools()]), description='Parcels')}
    )
    script = Script(
        [[(SEARCH, {'query': 'postnord'})], [(SEARCH, {'query': 'bring'})], [(SEARCH, {'query': 'postnord'})], 'done']
    )
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    first, second, third = (page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH)
    assert schema['properties']['carrier']['enum'] == ['bring']  # edited in place: the same dict throughout
    assert [t['tool'] for t in first['tools']] == ['ship_parcel']
    # Step 2's page shows the new enum, and the index ranks it: the new value finds the tool, the old one does not.
    assert [t['tool'] for t in second['tools']] == ['ship_parcel']
    assert second['tools'][0]['parameters_json_schema']['properties']['carrier']['enum'] == ['bring']
    assert third['total'] == 0
    assert proxy.index_builds == 2  # the build, then the one changed member; the unchanged step 3 re-indexed nothing


async def test_a_schema_edited_in_place_between_runs_is_reindexed_by_the_next_search() -> None:
    tool = ship_tool([['postnord']])
    proxy = ToolProxyCapability(
        groups={'post': ToolProxyGroup(source=FunctionToolset([tool, *other_tools()]), description='Parcels')}
    )
    script = Script([[(SEARCH, {'query': 'postnord'})], 'done'])
    agent = Agent(script.model, capabilities=[proxy])
    await agent.run('x')
    tool.prepare = None  # the host edits the schema itself, in place, between runs
    tool.function_schema.json_schema['properties']['carrier']['description'] = 'One of dhl or ups'
    script.turns, script._n = [[(SEARCH, {'query': 'dhl'})], 'done'], 0
    result = await agent.run('y')
    [page] = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert [t['tool'] for t in page['tools']] == ['ship_parcel']


async def test_a_reused_members_function_signature_follows_an_in_place_edit() -> None:
    tool = ship_tool([['postnord'], ['bring']])
    source = FunctionToolset([tool, *other_tools()])
    proxy = ToolProxyCapability(groups={'post': ToolProxyGroup(source=source, description='Parcels')})
    [members] = proxy._member_toolsets
    seen: list[tuple[object, str]] = []

    async def look(ctx: RunContext[Any]) -> str:
        """Read the member's signature through the member toolset (what a host reading it would get)."""
        member = (await members.get_tools(ctx))['post__ship_parcel']
        seen.append((member, str(member.tool_def.function_signature.render('...'))))
        return 'ok'

    script = Script([[('look', {})], [('look', {})], 'done'])
    await Agent(script.model, tools=[look], capabilities=[proxy]).run('x')
    (first, first_signature), (second, second_signature) = seen
    assert "'postnord'" in first_signature and "'bring'" not in first_signature
    assert "'bring'" in second_signature and "'postnord'" not in second_signature
    assert second is first  # the member was reused (the source tool is unchanged but for the edited dict)


def test_fingerprints_follow_content_not_identity() -> None:
    schema: dict[str, Any] = {'type': 'object', 'properties': {'a': {'enum': ['x', 1, 1.5, None, True]}}}
    before, zero = _core.schema_fingerprints([schema, {}, []])
    assert zero == 0 and len(before) == 24
    schema['properties']['a']['enum'][0] = 'y'
    after, _ = _core.schema_fingerprints([schema, {}, []])
    assert after[:8] != before[:8] and after[8:] == before[8:]
    variants = [
        {'a': 1},
        {'a': True},
        {'a': 1.0},
        {'a': -0.0},
        {'a': 0.0},
        {'a': [1]},
        {'a': (1,)},
        {'b': 1, 'a': 2},
        {'a': 2, 'b': 1},
        {'a': 10**30},
        {'a': None},
        {'a': 'None'},
    ]
    prints, zero = _core.schema_fingerprints(variants)
    assert zero == 0
    assert len({prints[i : i + 8] for i in range(0, len(prints), 8)}) == len(variants)  # JSON-distinct: all differ


def test_values_that_cannot_be_fingerprinted_are_zero_and_cycles_are_bounded() -> None:
    class Text(str):
        pass

    chain: dict[str, Any] = {}
    chain['self'] = chain
    tree: dict[str, Any] = {}
    tree['left'] = tree['right'] = tree  # 2**32 paths as deep as the index reads: past the node budget
    values = [{'a': Text('x')}, {'a': object()}, [0] * 200_000, tree, chain]
    prints, zero = _core.schema_fingerprints(values)
    found = [int.from_bytes(prints[i : i + 8], 'little') for i in range(0, len(prints), 8)]
    assert found[:4] == [0, 0, 0, 0] and zero == 4
    assert found[4] != 0  # a cycle is read as deep as the index reads, and no further
