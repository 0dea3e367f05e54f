"""Stale tools and dynamic sources: a member that disappears is neither found nor callable."""

from __future__ import annotations

import copy
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import CALL, SEARCH, Script, page_of, returns
from tools_fixtures import CALLS, crm_toolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup


async def test_member_filtered_out_in_a_later_step_is_not_found_or_callable() -> None:
    async def hide_after_first_step(ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        if ctx.run_step > 1:
            return [t for t in tool_defs if t.name != 'crm__customer_name']
        return tool_defs

    script = Script(
        [
            [(SEARCH, {'query': 'customer name'})],
            [(SEARCH, {'query': 'customer name'})],
            [(CALL, {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}})],
            'done',
        ]
    )
    proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=crm_toolset(), description='CRM')})
    agent = Agent(script.model, capabilities=[proxy, PrepareTools(hide_after_first_step)], retries=3)
    result = await agent.run('x')
    parts = returns(result.all_messages())
    first, second = (page_of(p) for p in parts if p.tool_name == SEARCH)
    assert first['tools'][0]['tool'] == 'customer_name'
    assert all(t['tool'] != 'customer_name' for t in second['tools'])
    call = next(p for p in parts if p.tool_name == CALL)
    assert call.outcome == 'retried' and 'no tool' in call.model_response_str(wrap_if_error=False)
    assert CALLS == []


async def test_dynamic_toolset_changes_between_steps_and_index_updates_incrementally() -> None:
    def tools_for_step(ctx: RunContext[Any]) -> FunctionToolset[Any]:
        def alpha_report() -> str:
            """Produce the alpha report."""
            return 'alpha'

        def beta_report() -> str:
            """Produce the beta report."""
            return 'beta'

        return FunctionToolset([alpha_report] if ctx.run_step <= 1 else [beta_report])

    from pydantic_ai_toolproxy._private import DynamicToolset

    dynamic = DynamicToolset(toolset_func=tools_for_step, per_run_step=True)
    proxy = ToolProxyCapability(groups={'reports': ToolProxyGroup(source=dynamic, description='Reports')})
    script = Script(
        [[(SEARCH, {'query': 'report'})], [(SEARCH, {'query': 'report'})], [(SEARCH, {'query': 'report'})], 'done']
    )
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    pages = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert [t['tool'] for t in pages[0]['tools']] == ['alpha_report']
    assert [t['tool'] for t in pages[1]['tools']] == ['beta_report']
    assert [t['tool'] for t in pages[2]['tools']] == ['beta_report']
    builds = proxy.index_builds
    assert builds == 2, builds  # first build, one incremental change; the unchanged third step did not rebuild


async def test_members_follow_each_listing_of_the_source_order_and_content() -> None:
    """An unchanged listing reuses last step's members; a reordered, shrunk or edited listing is re-read exactly."""
    from dataclasses import replace

    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.toolsets import PreparedToolset

    def alpha() -> str:
        """Alpha."""
        return 'a'

    def beta() -> str:
        """Beta."""
        return 'b'

    def gamma() -> str:
        """Gamma."""
        return 'c'

    def noop() -> str:
        """Does nothing."""
        return 'ok'

    def listing(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        by_name = {d.name: d for d in defs}
        if ctx.run_step <= 2:  # the same listing twice
            return [by_name['alpha'], by_name['beta'], by_name['gamma']]
        if ctx.run_step == 3:  # reordered
            return [by_name['gamma'], by_name['alpha'], by_name['beta']]
        if ctx.run_step == 4:  # one edited
            return [by_name['gamma'], by_name['alpha'], replace(by_name['beta'], description='Beta, edited.')]
        return [by_name['alpha']]  # shrunk

    seen: list[list[tuple[str, str | None]]] = []

    class Record(AbstractCapability[Any]):
        async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
            tools = ctx.tool_manager.tools if ctx.tool_manager is not None and ctx.tool_manager.tools else {}
            seen.append([(n, t.tool_def.description) for n, t in tools.items() if n.startswith('g__')])
            return request_context

    source = PreparedToolset(FunctionToolset([alpha, beta, gamma]), listing)
    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=source, description='Letters')})
    script = Script([[('noop', {})]] * 4 + ['done'])
    await Agent(script.model, tools=[noop], capabilities=[proxy, Record()]).run('x')
    assert seen == [
        [('g__alpha', 'Alpha.'), ('g__beta', 'Beta.'), ('g__gamma', 'Gamma.')],
        [('g__alpha', 'Alpha.'), ('g__beta', 'Beta.'), ('g__gamma', 'Gamma.')],
        [('g__gamma', 'Gamma.'), ('g__alpha', 'Alpha.'), ('g__beta', 'Beta.')],
        [('g__gamma', 'Gamma.'), ('g__alpha', 'Alpha.'), ('g__beta', 'Beta, edited.')],
        [('g__alpha', 'Alpha.')],
    ]


async def test_index_follows_descriptions_and_schemas_edited_by_another_capability() -> None:
    """Same names each step, but a `PrepareTools` hook edits a description, then rebuilds an equal schema, then edits
    the schema: search ranks by the current text, and only real changes reach the index."""
    from dataclasses import replace

    def edit(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        out: list[ToolDefinition] = []
        for d in defs:
            if d.name == 'crm__customer_name' and ctx.run_step >= 2:
                d = replace(d, description='Look up the zeppelin registry.')
            if d.name == 'crm__customer_name' and ctx.run_step == 3:  # an equal schema, rebuilt
                d = replace(d, parameters_json_schema=copy.deepcopy(d.parameters_json_schema))
            if d.name == 'crm__customer_name' and ctx.run_step >= 4:
                schema = copy.deepcopy(d.parameters_json_schema)
                schema['properties']['airship_hangar'] = {'type': 'string'}
                d = replace(d, parameters_json_schema=schema)
            out.append(d)
        return out

    query = 'zeppelin airship hangar'
    script = Script([[(SEARCH, {'query': query})]] * 4 + ['done'])
    proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=crm_toolset(), description='CRM')})
    result = await Agent(script.model, capabilities=[proxy, PrepareTools(edit)]).run('x')
    pages = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert [t['tool'] for t in pages[0]['tools']] == []
    for page in pages[1:]:
        assert [t['tool'] for t in page['tools']] == ['customer_name']
    assert pages[1]['tools'][0]['description'] == 'Look up the zeppelin registry.'
    assert 'airship_hangar' not in pages[2]['tools'][0]['parameters_json_schema']['properties']
    assert 'airship_hangar' in pages[3]['tools'][0]['parameters_json_schema']['properties']
    assert proxy.index_builds == 3, (
        proxy.index_builds
    )  # first build, the description, the new schema (not the equal one)


async def test_a_change_that_equality_hides_still_reaches_the_model() -> None:
    """`1 == True` and dicts equal in another key order, but the JSON the model gets differs: the member and the
    search page follow the source's new values (found by a reviewer trying to break the per-step caches)."""
    from dataclasses import replace

    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.toolsets import PreparedToolset

    def alpha(x: int = 0, z: int = 0) -> str:
        """Alpha tool."""
        return 'a'

    def listing(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        if ctx.run_step == 1:
            meta, schema = (
                {'admin_only': 1},
                {'type': 'object', 'properties': {'x': {'enum': [0, 1]}, 'z': {'type': 'integer'}}},
            )
        else:
            meta, schema = (
                {'admin_only': True},
                {'type': 'object', 'properties': {'z': {'type': 'integer'}, 'x': {'enum': [False, True]}}},
            )
        return [replace(d, metadata=meta, parameters_json_schema=schema) for d in defs]

    seen: list[Any] = []

    class Record(AbstractCapability[Any]):
        async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
            tools = ctx.tool_manager.tools if ctx.tool_manager is not None and ctx.tool_manager.tools else {}
            seen.append(tools['g__alpha'].tool_def.metadata)
            return request_context

    proxy = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=PreparedToolset(FunctionToolset([alpha]), listing), description='G')}
    )
    script = Script([[(SEARCH, {'query': 'alpha'})], [(SEARCH, {'query': 'alpha'})], 'done'])
    result = await Agent(script.model, capabilities=[proxy, Record()]).run('x')
    assert [type(m['admin_only']) for m in seen] == [int, bool, bool]
    first, second = (p.model_response_str() for p in returns(result.all_messages()) if p.tool_name == SEARCH)
    assert '"x":{"enum":[0,1]},"z"' in first.replace(' ', '')
    assert '"z":{"type":"integer"},"x":{"enum":[false,true]}' in second.replace(' ', '')


async def test_a_canonical_name_that_moves_to_another_group_is_filed_under_the_new_one() -> None:
    """Group `a` + tool `_x` and group `a_` + tool `x` share the canonical name `a___x`; when the tool moves from
    one to the other with the same text, a search filtered by the new group finds it."""
    from pydantic_ai.tools import Tool
    from pydantic_ai.toolsets import PreparedToolset

    async def op(**kwargs: Any) -> str:
        return 'ok'

    def source(name: str, steps: range) -> PreparedToolset[Any]:
        tools = FunctionToolset(
            [Tool.from_schema(op, name=name, description='Frobnicate the widget', json_schema={'type': 'object'})]
        )
        return PreparedToolset(tools, lambda ctx, defs: defs if ctx.run_step in steps else [])

    proxy = ToolProxyCapability(
        groups={
            'a': ToolProxyGroup(source=source('_x', range(1, 2)), description='A'),
            'a_': ToolProxyGroup(source=source('x', range(2, 9)), description='B'),
        }
    )
    script = Script(
        [[(SEARCH, {'query': 'frobnicate', 'group': 'a'})], [(SEARCH, {'query': 'frobnicate', 'group': 'a_'})], 'done']
    )
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    first, second = (page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH)
    assert [(t['group'], t['tool']) for t in first['tools']] == [('a', '_x')]
    assert [(t['group'], t['tool']) for t in second['tools']] == [('a_', 'x')]


async def test_a_finished_run_state_is_not_kept_by_the_index() -> None:
    """A per-tool `prepare` that puts run state into `metadata`: after later runs, only the last listing (the members
    cache) still references any; the index keeps no tool definition."""
    import gc
    import weakref
    from dataclasses import replace

    from pydantic_ai.tools import Tool

    class Session:
        pass

    async def with_session(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        return replace(tool_def, metadata={'session': ctx.deps})

    def lookup(x: int) -> str:
        """Look up a record."""
        return 'r'

    proxy = ToolProxyCapability(
        groups={'g': ToolProxyGroup(source=FunctionToolset([Tool(lookup, prepare=with_session)]), description='G')}
    )
    script = Script([])
    agent = Agent(script.model, capabilities=[proxy], deps_type=Session)
    sessions: list[weakref.ref[Session]] = []

    async def run_once() -> None:
        session = Session()
        sessions.append(weakref.ref(session))
        script.turns, script._n = [[(SEARCH, {'query': 'record'})], 'done'], 0
        await agent.run('x', deps=session)

    for _ in range(4):
        await run_once()
    gc.collect()
    assert [i for i, ref in enumerate(sessions) if ref() is not None] == [3]


async def test_a_listing_key_tells_every_compared_field_apart() -> None:
    """The per-step member cache reuses a member only while the source tool equals last listing's: a fresh listing
    of an unchanged `FunctionToolset` matches, and a change to any field the dataclasses' `__eq__` compare, of the
    `ToolsetTool` or of its `ToolDefinition`, or to the tool's class, does not."""
    from dataclasses import dataclass, fields, replace

    from pydantic_ai.models.test import TestModel
    from pydantic_ai.toolsets.function import FunctionToolsetTool

    from pydantic_ai_toolproxy.grouping.member_listing import ListingKey as _ListingKey

    def alpha(x: int) -> str:
        """Alpha."""
        return 'a'

    contexts: list[RunContext[Any]] = []

    def keep(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        contexts.append(ctx)
        return defs

    await Agent(TestModel(call_tools=[]), capabilities=[PrepareTools(keep)]).run('x')
    source = FunctionToolset([alpha])
    first = (await source.get_tools(contexts[0]))['alpha']
    again = (await source.get_tools(contexts[0]))['alpha']
    assert first is not again and first.tool_def is not again.tool_def
    key = _ListingKey.of(first)
    assert key.matches(again)

    changed: dict[str, Any] = {'toolset': FunctionToolset([alpha]), 'max_retries': 7, 'args_validator_func': len}
    for f in fields(first):
        if f.compare and f.name != 'tool_def':
            value = changed.get(f.name, object())
            assert not key.matches(replace(again, **{f.name: value})), f.name
    def_changes: dict[str, Any] = {'strict': True, 'sequential': True, 'timeout': 3.0, 'defer_loading': True}
    for f in fields(first.tool_def):
        if f.compare:
            value = def_changes.get(f.name, f'changed {f.name}')
            assert not key.matches(replace(again, tool_def=replace(again.tool_def, **{f.name: value}))), f.name

    @dataclass
    class OtherTool(FunctionToolsetTool[Any]):
        pass

    assert not key.matches(OtherTool(**{f.name: getattr(again, f.name) for f in fields(again) if f.init}))


async def test_members_follow_fields_that_equality_ignores_and_tools_whose_key_cannot_be_read() -> None:
    """Found by a hostile review of the member cache: a tool field declared `compare=False` (a handler the source's
    `call_tool` uses) still replaces last step's member; a tool class with a field not set at listing time does not
    break the run; a tool class made per listing does not grow the getter cache without end."""
    from dataclasses import dataclass, field

    from pydantic_ai.toolsets import AbstractToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
    from pydantic_core import SchemaValidator, core_schema

    from pydantic_ai_toolproxy.grouping import member_listing as _member_listing

    any_args = SchemaValidator(core_schema.any_schema())

    @dataclass
    class HandlerTool(ToolsetTool[Any]):
        handler: Any = field(default=None, compare=False)

    @dataclass
    class LazyTool(ToolsetTool[Any]):
        client: Any = field(init=False)

    class Source(AbstractToolset[Any]):
        @property
        def id(self) -> str | None:
            return None

        async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
            step = ctx.run_step

            @dataclass
            class PerListing(ToolsetTool[Any]):
                pass

            def definition(name: str) -> ToolDefinition:
                return ToolDefinition(name=name, description=name, parameters_json_schema={'type': 'object'})

            return {
                'handled': HandlerTool(
                    toolset=self,
                    tool_def=definition('handled'),
                    max_retries=1,
                    args_validator=any_args,
                    handler=lambda: f'handler of step {step}',
                ),
                'lazy': LazyTool(toolset=self, tool_def=definition('lazy'), max_retries=1, args_validator=any_args),
                'fresh': PerListing(toolset=self, tool_def=definition('fresh'), max_retries=1, args_validator=any_args),
            }

        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: Any) -> Any:
            return tool.handler() if name == 'handled' else f'{name} ran'

    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=Source(), description='G')})
    script = Script(
        [
            [(CALL, {'group': 'g', 'tool': 'handled', 'arguments': {}})],
            [(CALL, {'group': 'g', 'tool': 'handled', 'arguments': {}})],
            [(CALL, {'group': 'g', 'tool': 'lazy', 'arguments': {}})],
            'done',
        ]
    )
    for _ in range(3):
        result = await Agent(script.model, capabilities=[proxy]).run('x')
        outputs = [p.content for p in returns(result.all_messages()) if p.tool_name == CALL]
        assert outputs == ['handler of step 1', 'handler of step 2', 'lazy ran'], outputs
        script = Script(script.turns)
    assert len(_member_listing._GETTERS) <= _member_listing._MAX_GETTERS
