"""`search_strategy()` as the ranking of Pydantic AI's own `ToolSearch`, in real Agent runs over deferred tools."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import Script, returns

from pydantic_ai_toolproxy import _core, search_strategy
from pydantic_ai_toolproxy.search.strategy import GROUP


def deferred(name: str, description: str, params: dict[str, Any] | None = None) -> Tool[Any]:
    """A `defer_loading=True` tool (a `Tool` keeps its own flag: a toolset's `defer_loading` does not apply)."""

    def fn(**kwargs: Any) -> str:
        return name

    schema = {'type': 'object', 'properties': params or {}}
    tool = Tool.from_schema(fn, name=name, description=description, json_schema=schema)
    tool.defer_loading = True
    return tool


WEATHER = [
    deferred('get_weather', 'Current weather conditions of a city.', {'city': {'type': 'string'}}),
    deferred('weather_alerts', 'Severe weather alerts issued for a region.', {'region': {'type': 'string'}}),
    deferred('forecast', 'Weather forecast for the next days.', {'city': {'type': 'string'}, 'days': {}}),
    deferred('send_email', 'Send an email message to a recipient.', {'to': {'type': 'string'}, 'body': {}}),
    deferred('list_inbox', 'List the messages in the email inbox.'),
    deferred('create_invoice', 'Create an invoice for a customer.', {'customer': {'type': 'string'}}),
    deferred('refund_payment', 'Refund a payment to a customer card.', {'payment_id': {'type': 'string'}}),
    deferred('email', 'Look up a contact by email address.', {'address': {'type': 'string'}}),
]


def discovered(messages: list[Any]) -> list[list[str]]:
    """The names each `search_tools` return discovered, in order."""
    return [
        [m['name'] for m in p.content['discovered_tools']]
        for p in returns(messages)
        if p.tool_name == ToolSearch.function_tool_name
    ]


def core_ranking(tools: list[Tool[Any]], query: str, limit: int = 10) -> list[str]:
    """The core's own ranking of `tools` for `query` (as `search_proxy_tools` ranks a group's members)."""
    index = _core.SearchIndex()
    index.upsert([(t.name, GROUP, t.name, t.description or '', t.tool_def.parameters_json_schema) for t in tools])
    return index.search(query, None, 0, limit)[1]


async def run_searches(agent: Agent[Any, str]) -> list[list[str]]:
    result = await agent.run('find tools')
    return discovered(result.all_messages())


def agent_with(strategy: Any, tools: list[Tool[Any]], script: Script, **tool_search: Any) -> Agent[Any, str]:
    return Agent(script.model, tools=tools, capabilities=[ToolSearch(strategy=strategy, **tool_search)])


async def test_ranks_deferred_tools_with_the_core_and_exact_names_first() -> None:
    strategy = search_strategy()
    script = Script(
        [[('search_tools', {'queries': ['weather of a city']})], [('search_tools', {'queries': ['email']})]]
    )
    found = await run_searches(agent_with(strategy, WEATHER, script))
    assert found[0] == core_ranking(WEATHER, 'weather of a city')
    assert found[0][0] == 'get_weather'
    # 'email' is a tool's exact name: it comes first though other tools mention email too
    assert found[1][0] == 'email'
    assert set(found[1]) == {'email', 'send_email', 'list_inbox'}
    # before discovery the deferred tools are not offered; the search control is
    assert script.offered(0) == ['search_tools']


async def test_several_queries_interleave_each_querys_best_first() -> None:
    strategy = search_strategy()
    queries = ['refund a card payment', 'weather alerts for a region', 'create invoice']
    script = Script([[('search_tools', {'queries': queries})]])
    [found] = await run_searches(agent_with(strategy, WEATHER, script))
    per_query = [core_ranking(WEATHER, q) for q in queries]
    assert found[:3] == [r[0] for r in per_query] == ['refund_payment', 'weather_alerts', 'create_invoice']
    assert set(found) == {name for r in per_query for name in r}
    assert len(found) == len(set(found))


async def test_max_results_is_respected_by_the_strategy_and_by_tool_search() -> None:
    many = [deferred(f'widget_op_{i}', f'Operation {i} on widgets.') for i in range(40)]
    script = Script([[('search_tools', {'queries': ['widgets operation', 'widget']})]])
    [found] = await run_searches(agent_with(search_strategy(max_results=25), many, script, max_results=25))
    assert len(found) == 25
    script = Script([[('search_tools', {'queries': ['widgets operation']})]])
    [found] = await run_searches(agent_with(search_strategy(max_results=25), many, script))  # ToolSearch keeps 10
    assert len(found) == 10
    script = Script([[('search_tools', {'queries': ['widgets operation']})]])
    [found] = await run_searches(agent_with(search_strategy(max_results=3), many, script, max_results=25))
    assert len(found) == 3


async def test_discovered_tools_follow_fresh_ones_unless_named_exactly() -> None:
    strategy = search_strategy()
    script = Script(
        [
            [('search_tools', {'queries': ['weather']})],
            [('search_tools', {'queries': ['weather city', 'get_weather']})],
        ]
    )
    agent = agent_with(strategy, WEATHER, script, max_results=1)
    found = await run_searches(agent)
    first = found[0]
    assert len(first) == 1
    # get_weather, named exactly, still comes first; nothing discovered displaces a fresh match
    assert found[1] == ['get_weather']
    script = Script([[('search_tools', {'queries': ['weather']})], [('search_tools', {'queries': ['weather']})]])
    found = await run_searches(agent_with(strategy, WEATHER, script, max_results=2))
    assert found[0] == ['get_weather', 'weather_alerts']
    # the one weather tool not yet discovered comes first, the discovered ones fill the rest
    assert found[1] == ['forecast', 'get_weather']


async def test_the_index_is_kept_across_calls_and_runs_and_updated_by_fingerprint() -> None:
    strategy = search_strategy()
    tools = list(WEATHER)
    turns: list[Any] = [[('search_tools', {'queries': ['weather']})]] * 3
    agent = agent_with(strategy, tools, Script(list(turns)))
    await agent.run('x')
    assert (strategy.builds, strategy.upserted) == (1, len(tools))
    agent = agent_with(strategy, tools, Script(list(turns)))  # another agent with the same tools: another run
    await agent.run('x')
    assert (strategy.builds, strategy.upserted) == (1, len(tools))  # three more searches, nothing re-indexed

    # one tool's description changes: that one record is indexed again; a vanished tool stops being found
    changed = deferred('refund_payment', 'Return money to a customer after a thunderstorm ruined the picnic.')
    tools = [t for t in WEATHER if t.name not in ('refund_payment', 'forecast')] + [changed]
    script = Script([[('search_tools', {'queries': ['thunderstorm picnic', 'forecast next days']})]])
    [found] = await run_searches(agent_with(strategy, tools, script))
    assert (strategy.builds, strategy.upserted) == (2, len(WEATHER) + 1)
    assert found[0] == 'refund_payment'
    assert 'forecast' not in found


async def test_a_dynamic_toolset_rebuilding_equal_tools_re_indexes_nothing() -> None:
    strategy = search_strategy()
    builds: list[int] = []

    def rebuilt() -> FunctionToolset[Any]:  # fresh Tool and schema objects each step, equal values
        builds.append(1)
        return FunctionToolset(
            [
                deferred(t.name, t.description or '', dict(t.tool_def.parameters_json_schema['properties']))
                for t in WEATHER
            ]
        )

    script = Script([[('search_tools', {'queries': ['weather']})]] * 3)
    agent = Agent(script.model, toolsets=[_Rebuilding(rebuilt)], capabilities=[ToolSearch(strategy=strategy)])
    await agent.run('x')
    assert len(builds) >= 3
    assert (strategy.builds, strategy.upserted) == (1, len(WEATHER))


class _Rebuilding(FunctionToolset[Any]):
    """A toolset whose tools are rebuilt at every listing (as a dynamic toolset or an MCP server's may be)."""

    def __init__(self, make: Any) -> None:
        super().__init__()
        self._make = make

    async def get_tools(self, ctx: Any) -> dict[str, Any]:
        return await self._make().get_tools(ctx)


def test_concurrent_calls_from_threads_each_rank_their_own_tools() -> None:
    strategy = search_strategy(max_results=50)
    a = [
        ToolDefinition(name=f'alpha_{i}', description=f'alpha widget {i}', parameters_json_schema={})
        for i in range(300)
    ]
    b = [
        ToolDefinition(name=f'beta_{i}', description=f'beta widget {i}', parameters_json_schema={}) for i in range(200)
    ]
    errors: list[BaseException] = []

    def work(tools: list[ToolDefinition]) -> None:
        names = {t.name for t in tools}
        try:
            for _ in range(30):
                found = strategy(None, ['widget'], tools)  # type: ignore[arg-type]  # ctx unused outside a run
                assert len(found) == 50 and set(found) <= names
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(tools,)) for tools in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


async def test_concurrent_runs_share_one_index() -> None:
    strategy = search_strategy()
    agents = [
        agent_with(strategy, WEATHER, Script([[('search_tools', {'queries': ['email inbox']})]])) for _ in range(4)
    ]
    results = await asyncio.gather(*(run_searches(agent) for agent in agents))
    assert all(found == results[0] for found in results)
    assert results[0][0][0] == 'list_inbox'
    assert strategy.builds == 1


def test_blank_punctuation_and_overlong_queries() -> None:
    strategy = search_strategy()
    tools = [t.tool_def for t in WEATHER]
    assert strategy(None, ['', '   ', '?!'], tools) == []  # type: ignore[arg-type]
    long = 'weather ' + 'x' * (2 * _core.MAX_QUERY_BYTES)
    assert strategy(None, [long], tools)[0] in {'get_weather', 'weather_alerts', 'forecast'}  # type: ignore[arg-type]
    assert strategy(None, ['ＥＭＡＩＬ'], tools)[0] == 'email'  # type: ignore[arg-type]  # folded as the core folds


@pytest.mark.parametrize('value', [0, 101, True, 2.0, '5'])
def test_max_results_is_checked(value: Any) -> None:
    with pytest.raises(ValueError, match='search_strategy: max_results must be'):
        search_strategy(max_results=value)


def test_bfcl_quality_through_tool_search_beats_the_keywords_strategy() -> None:
    """Real `ToolSearch` runs over 1,000 deferred BFCL tools (`bench/lib/toolsearch.py`, every 10th of its questions): the
    strategy keeps the package's BFCL level, far above Pydantic AI's `'keywords'` strategy on the same runs."""
    pytest.importorskip('bfcl_eval')
    from bench.lib.metrics import scores
    from bench.lib.toolsearch import deferred_tools, first_ranks, questions_for
    from pydantic_ai_toolproxy._private import keywords_search

    tools = deferred_tools(1_000)
    questions = questions_for(tools)[::10]
    ours = scores(first_ranks(search_strategy(), tools, questions))
    keywords = scores(first_ranks(keywords_search, tools, questions))
    assert ours.recall_5 >= 0.85 and ours.mrr_10 >= 0.72, ours
    assert ours.recall_5 >= keywords.recall_5 + 0.3, (ours, keywords)


UMBRELLA = 'umbrella needed tomorrow'
SYNONYMS = {'umbrella': 'weather', 'rain': 'weather'}


async def test_with_an_embedder_the_strategy_ranks_hybrid() -> None:
    from embedding_fixtures import BagOfWordsModel, DictStore

    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    store = DictStore()
    strategy = search_strategy(embedder=model, embedding_cache=store)
    keyword = search_strategy()
    script = Script([[('search_tools', {'queries': [UMBRELLA]})], [('search_tools', {'queries': [UMBRELLA, 'email']})]])
    found = await run_searches(agent_with(strategy, WEATHER, script))
    assert found[0][0] in {'get_weather', 'weather_alerts', 'forecast'}  # no tool says umbrella: meaning found it
    assert strategy.rankings == [('hybrid', None), ('hybrid', None)]
    assert found[1][0] == 'email'  # an exact name still comes first in hybrid ranking
    [empty] = await run_searches(agent_with(keyword, WEATHER, Script([[('search_tools', {'queries': [UMBRELLA]})]])))
    assert empty == []  # keywords alone find nothing for it
    assert keyword.rankings == [('keyword', None)]

    # each tool text is embedded once, across calls and runs; a changed tool alone is embedded again
    documents = model.documents()
    assert sorted(documents) == sorted(set(documents)) and len(documents) == len(WEATHER)
    assert store.writes >= 1
    changed = deferred('send_email', 'Send a message through the mail server to a recipient.')
    tools = [t for t in WEATHER if t.name != 'send_email'] + [changed]
    await run_searches(agent_with(strategy, tools, Script([[('search_tools', {'queries': [UMBRELLA]})]])))
    assert model.documents()[len(WEATHER) :] == ['send email: Send a message through the mail server to a recipient.']
    assert strategy.builds == 2


async def test_a_failing_query_embedder_falls_back_to_keywords() -> None:
    from embedding_fixtures import BagOfWordsModel

    model = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS, query_fail=ConnectionError('embedder down'))
    strategy = search_strategy(embedder=model, embedding_cache=None)
    script = Script([[('search_tools', {'queries': ['weather alerts', UMBRELLA]})]])
    [found] = await run_searches(agent_with(strategy, WEATHER, script))
    assert found[0] == 'weather_alerts'
    assert strategy.rankings == [('keyword', 'embedder-error'), ('keyword', 'embedder-error')]


def test_hybrid_settings_are_checked_as_the_config_checks_them() -> None:
    with pytest.raises(ValueError, match='semantic_weight'):
        search_strategy(embedder='openai:text-embedding-3-small', semantic_weight=2.0, embedding_cache=None)
    with pytest.raises(ValueError, match='embedder'):
        search_strategy(embedder='test')


def test_a_schema_edited_in_place_is_indexed_at_the_next_call() -> None:
    """The strategy syncs with the search control's own sync (`IndexSlot.sync`): schema fingerprints are compared
    at every call, so an edit in place is seen without the tool list changing."""
    strategy = search_strategy()
    schema: dict[str, Any] = {'type': 'object', 'properties': {'city': {'type': 'string'}}}
    tools = [
        ToolDefinition(name='lookup', description='Look something up.', parameters_json_schema=schema),
        ToolDefinition(name='other', description='Another tool.', parameters_json_schema={}),
    ]
    assert strategy(None, ['zeppelin'], tools) == []  # type: ignore[arg-type]
    schema['properties']['zeppelin'] = {'type': 'string', 'description': 'zeppelin hangar number'}
    assert strategy(None, ['zeppelin'], tools) == ['lookup']  # type: ignore[arg-type]  # the same list, edited
    assert (strategy.builds, strategy.upserted) == (2, 2 + 1)  # only the edited schema was indexed again
    more = [*tools, ToolDefinition(name='third', description='A third tool.', parameters_json_schema={})]
    assert strategy(None, ['zeppelin'], more) == ['lookup']  # type: ignore[arg-type]
    assert strategy.upserted == 2 + 1 + 1  # the new tool; 'lookup' and 'other' kept their records


def test_a_name_listed_twice_is_indexed_once_with_its_first_definition() -> None:
    strategy = search_strategy()
    tools = [
        ToolDefinition(name='lookup', description='Find a zeppelin.', parameters_json_schema={}),
        ToolDefinition(name='lookup', description='Find a submarine.', parameters_json_schema={}),
    ]
    assert strategy(None, ['zeppelin'], tools) == ['lookup']  # type: ignore[arg-type]
    assert strategy(None, ['submarine'], tools) == []  # type: ignore[arg-type]
    assert strategy.upserted == 1
