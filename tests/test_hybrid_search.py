"""Hybrid search through real Agent runs: meaning-like matches from a deterministic embedding model, fallbacks
(embedder exception, query timeout, a slow first embedding past the wait bound, a retry after an error), pages,
`total` and `next_offset`, exact names, group filters, determinism, re-embedding on change, removal, the store.

The model under test is `embedding_fixtures.BagOfWordsModel`: its `synonyms` make "umbrella" mean "forecast", so
a query can find the weather tool by meaning while no keyword of it matches.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel, DictStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.embeddings import TestEmbeddingModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext, Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, Script, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy.controls import search as _search
from pydantic_ai_toolproxy.controls.search import KEYWORD, Ranking
from pydantic_ai_toolproxy.hybrid import fill
from pydantic_ai_toolproxy.hybrid import vectors as vectors_module

UMBRELLA = 'umbrella needed tomorrow'
SYNONYMS = {'umbrella': 'forecast', 'raincoat': 'forecast', 'letter': 'email', 'post': 'email'}


def catalogue() -> dict[str, FunctionToolset[Any]]:
    weather: FunctionToolset[Any] = FunctionToolset()
    weather.add_function(lambda city='': city, name='get_forecast', description='Forecast for a city.')
    weather.add_function(lambda city='': city, name='air_quality', description='Air quality index of a city.')
    files: FunctionToolset[Any] = FunctionToolset()
    files.add_function(lambda path='': path, name='open_file', description='Open a file and return its text.')
    files.add_function(lambda path='': path, name='write_file', description='Write text to a file.')
    files.add_function(lambda path='': path, name='forecast_cache', description='Path of the cached file.')
    mail: FunctionToolset[Any] = FunctionToolset()
    mail.add_function(lambda to='': to, name='send_email', description='Send an email message.')
    mail.add_function(lambda q='': q, name='search_inbox', description='Find email messages in the inbox.')
    return {'weather': weather, 'files': files, 'mail': mail}


DESCRIPTIONS = {'weather': 'Weather data', 'files': 'Local files', 'mail': 'Electronic mail'}


def proxy(embedder: Any = None, **config: Any) -> ToolProxyCapability[Any]:
    config.setdefault('embedding_cache', None)
    sources = catalogue()
    return ToolProxyCapability(
        groups={g: ToolProxyGroup(source=sources[g], description=DESCRIPTIONS[g]) for g in sources},
        config=ToolProxyConfig(embedder=embedder, **config),
    )


async def pages(capability: ToolProxyCapability[Any], *searches: dict[str, Any]) -> list[dict[str, Any]]:
    """The pages one real agent run got for `searches`, one search per step."""
    result = await Agent(Script([[(SEARCH, s)] for s in searches]).model, capabilities=[capability]).run('go')
    return [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]


def names(page: dict[str, Any]) -> list[str]:
    return [f'{e["group"]}.{e["tool"]}' for e in page['tools']]


async def test_meaning_finds_what_keywords_miss() -> None:
    [keyword] = await pages(proxy(), {'query': UMBRELLA})
    assert 'weather.get_forecast' not in names(keyword)
    [hybrid] = await pages(proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)), {'query': UMBRELLA})
    assert names(hybrid)[0] == 'weather.get_forecast'
    assert hybrid['total'] >= keyword['total'] + 1


@pytest.mark.parametrize('query', ['file', 'email message', 'city', '', 'open_file', 'text file city'])
async def test_weight_zero_and_test_embedding_model_rank_as_keywords(query: str) -> None:
    """Weight 0, and TestEmbeddingModel's identical vectors (every cosine equal: no semantic share), rank exactly
    as keyword search: same entries, same total, same next_offset."""
    search = {'query': query, 'limit': 2}
    [expected] = await pages(proxy(), search)
    [zero] = await pages(proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS), semantic_weight=0), search)
    [same] = await pages(proxy(TestEmbeddingModel()), search)
    assert zero == expected and same == expected


async def test_query_embedder_error_falls_back_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, query_fail=ConnectionError('embedder down'))
    searches = [{'query': UMBRELLA}, {'query': 'email'}, {'query': UMBRELLA, 'limit': 1}]
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        got = await pages(proxy(model), *searches)
    assert got == await pages(proxy(), *searches)  # keyword pages, no error text for the model
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1 and 'embedder down' in warnings[0]


async def test_query_timeout_falls_back_to_keywords(caplog: pytest.LogCaptureFixture) -> None:
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, query_delay=1.0)
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        got = await pages(proxy(model, query_timeout=0.05), {'query': UMBRELLA}, {'query': 'file'})
    assert got == await pages(proxy(), {'query': UMBRELLA}, {'query': 'file'})
    assert sum(r.name == 'pydantic_ai_toolproxy' for r in caplog.records) == 1


def async_script(turns: Sequence[dict[str, Any] | float]) -> FunctionModel:
    """A model that searches with each dict of `turns` in turn and sleeps (on the run's loop) for each float."""
    plan = list(turns)

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        while plan and isinstance(plan[0], float):
            await asyncio.sleep(plan.pop(0))  # type: ignore[arg-type]
        if not plan:
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart(SEARCH, plan.pop(0))])

    return FunctionModel(respond)


async def test_slow_first_embedding_ranks_by_keywords_then_by_meaning() -> None:
    """Past `embedding_wait` the first search ranks by keywords; the embedding goes on, and a later search of the
    same run uses the vectors."""
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, delay=0.3)
    capability = proxy(model, embedding_wait=0.02)
    result = await Agent(async_script([{'query': UMBRELLA}, 0.6, {'query': UMBRELLA}]), capabilities=[capability]).run(
        'go'
    )
    first, later = [page_of(p) for p in returns(result.all_messages())]
    [keyword] = await pages(proxy(), {'query': UMBRELLA})
    assert first == keyword
    assert names(later)[0] == 'weather.get_forecast'


def test_embedding_left_pending_by_a_closed_loop_resumes_in_the_next() -> None:
    """Each `asyncio.run` (or `run_sync` in a fresh thread) brings its own loop: the background embedding runs on
    the process's embedding loop, so the loop closing does not cut it off, and the next run finds the vectors."""
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, delay=0.2)
    capability = proxy(model, embedding_wait=0)
    [first] = asyncio.run(pages(capability, {'query': UMBRELLA}))  # the loop closes with the embedding pending
    assert 'weather.get_forecast' not in names(first)
    assert model.documents() == []

    async def later() -> list[dict[str, Any]]:
        await pages(capability, {'query': UMBRELLA})
        await asyncio.sleep(0.5)
        return await pages(capability, {'query': UMBRELLA})

    [second] = asyncio.run(later())
    assert names(second)[0] == 'weather.get_forecast'
    assert len(model.documents()) == 7


async def test_tool_embedding_error_is_retried_later(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(fill, 'RETRY_SECONDS', 0.0)
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, fail=TimeoutError('provider overloaded'))
    capability = proxy(model)
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        [first] = await pages(capability, {'query': UMBRELLA})
        [keyword] = await pages(proxy(), {'query': UMBRELLA})
        assert first == keyword
        model.fail = None
        [second] = await pages(capability, {'query': UMBRELLA})
    assert names(second)[0] == 'weather.get_forecast'
    assert [r.getMessage() for r in caplog.records if 'provider overloaded' in r.getMessage()]


async def test_exact_names_stay_first() -> None:
    """The query `forecast_cache` is the name of a files tool; the weather tool is nearer by meaning
    (forecast), but the exact name ranks first."""
    [page] = await pages(
        proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS), semantic_weight=1.0), {'query': 'forecast_cache'}
    )
    assert names(page)[0] == 'files.forecast_cache'
    assert 'weather.get_forecast' in names(page)


async def test_group_restricts_both_signals() -> None:
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    [page] = await pages(proxy(model), {'query': UMBRELLA, 'group': 'files', 'limit': 10})
    assert all(n.startswith('files.') for n in names(page))
    assert page['total'] <= 3


async def test_hybrid_is_deterministic() -> None:
    searches = [{'query': UMBRELLA, 'limit': 2}, {'query': 'send a letter', 'limit': 3}, {'query': 'file city'}]
    first = await pages(proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)), *searches)
    second = await pages(proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)), *searches)
    assert first == second
    assert names(first[1])[0] == 'mail.send_email'  # "letter" means email here


async def test_changed_text_is_reembedded_and_removed_tools_lose_their_vector() -> None:
    """A tool whose description changes between steps is embedded again and ranks by its new meaning; a tool that
    leaves the step leaves the ranking; vectors already computed are never embedded twice."""
    state = {'description': 'Forecast for a city.', 'present': True}

    async def prepare(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition | None:
        if not state['present']:
            return None
        return replace(tool_def, description=str(state['description']))

    weather: FunctionToolset[Any] = FunctionToolset(
        [Tool(lambda city='': city, name='outlook', prepare=prepare, description='x')]
    )
    mail: FunctionToolset[Any] = FunctionToolset()
    mail.add_function(lambda to='': to, name='send_email', description='Send an email message.')
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    capability = ToolProxyCapability(
        groups={
            'weather': ToolProxyGroup(source=weather, description='Weather data'),
            'mail': ToolProxyGroup(source=mail, description='Electronic mail'),
        },
        config=ToolProxyConfig(embedder=model, embedding_cache=None),
    )

    def then(change: dict[str, Any], query: str) -> Any:
        def turn(messages: list[ModelMessage], info: AgentInfo) -> list[tuple[str, dict[str, Any]]]:
            state.update(change)  # seen from the next step on (this step's tools are prepared already)
            return [(SEARCH, {'query': query, 'limit': 5})]

        return turn

    script = Script(
        [
            [(SEARCH, {'query': 'umbrella', 'limit': 5})],
            then({'description': 'Send a post card.'}, 'card'),  # now it means email
            [(SEARCH, {'query': 'umbrella', 'limit': 5})],
            then({'present': False}, 'card'),
            [(SEARCH, {'query': 'umbrella post', 'limit': 5})],
        ]
    )
    result = await Agent(script.model, capabilities=[capability]).run('go')
    before, _, after, _, gone = [page_of(p) for p in returns(result.all_messages())]
    assert names(before)[0] == 'weather.outlook'
    assert 'weather.outlook' not in names(after)  # "umbrella" no longer means this tool
    assert 'weather.outlook' not in names(gone) and names(gone) == ['mail.send_email']
    documents = model.documents()
    assert sum('Forecast for a city' in d for d in documents) == 1
    assert sum('Send a post card' in d for d in documents) == 1
    assert len(documents) == len(set(documents))
    vectors = capability._runtime.vectors
    assert vectors is not None
    assert vectors.coverage(capability._runtime.search_index.index) == (1, 1)


async def test_vectors_are_reattached_from_memory_and_store_never_reembedded() -> None:
    store = DictStore()
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    capability = proxy(model, embedding_cache=store)
    [first] = await pages(capability, {'query': UMBRELLA})
    embedded = len(model.documents())
    assert embedded == 7 and len(store.data) == 7
    cache = capability._runtime.search_index
    with cache.lock:
        cache.reset()  # a fresh index (as after a core error): vectors come back from memory
    [again] = await pages(capability, {'query': UMBRELLA})
    assert again == first and len(model.documents()) == embedded
    other_model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    [other] = await pages(proxy(other_model, embedding_cache=store), {'query': UMBRELLA})  # a second process
    assert other == first
    assert other_model.documents() == []  # only the query was embedded
    assert [kind for kind, _ in other_model.calls] == ['query']


async def test_explain_shows_the_hybrid_shares() -> None:
    capability = proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS))
    [page] = await pages(capability, {'query': UMBRELLA})
    why = capability.explain(UMBRELLA, [(e['group'], e['tool']) for e in page['tools']])
    top = why[0]
    assert top.tool == 'get_forecast' and top.weight == pytest.approx(0.35)
    assert top.cosine is not None and top.cosine > 0.2 and top.semantic == pytest.approx(1.0)
    assert top.semantic_share == pytest.approx(0.35) and top.keyword_share == 0.0  # no keyword matched
    for w in why:
        assert w.fused == pytest.approx((w.keyword_share or 0) + (w.semantic_share or 0))
        assert w.semantic_share == pytest.approx(0.35 * (w.semantic or 0))
    assert [w.fused for w in why] == sorted((w.fused or 0 for w in why), reverse=True)
    assert proxy().explain(UMBRELLA, [('weather', 'get_forecast')])[0].cosine is None


WORDS = ['city', 'file', 'email', 'text', 'umbrella', 'message', 'path', 'air', 'send', 'open']


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.lists(st.sampled_from(WORDS), min_size=0, max_size=4).map(' '.join),
    limit=st.integers(1, 4),
    group=st.sampled_from([None, 'weather', 'files', 'mail']),
    weight=st.sampled_from([0.0, 0.3, 0.4, 1.0]),
)
def test_pages_cover_the_ranked_set_exactly_once(query: str, limit: int, group: str | None, weight: float) -> None:
    """Paging with `next_offset` from 0 visits `total` distinct tools, each page reports the same `total`, the
    pages concatenate to the one-page ranking, and a stale offset returns an empty page."""
    capability = proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS), semantic_weight=weight)
    base: dict[str, Any] = {'query': query} | ({'group': group} if group else {})

    stale_asked = []

    def walk(messages: list[ModelMessage], info: AgentInfo) -> Any:
        got = [page_of(p) for p in returns(messages) if p.tool_name == SEARCH]
        if not got:
            return [(SEARCH, base | {'limit': 10})]
        if len(got) == 1:
            return [(SEARCH, base | {'limit': limit, 'offset': 0})]
        if stale_asked:
            return 'done'
        nxt = got[-1]['next_offset']
        if nxt is None:
            stale_asked.append(True)
            return [(SEARCH, base | {'limit': limit, 'offset': got[0]['total'] + 1})]
        return [(SEARCH, base | {'limit': limit, 'offset': nxt})]

    script = Script([walk] * 60)
    result = asyncio.run(Agent(script.model, capabilities=[capability]).run('go'))
    got = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    whole, walked, stale = got[0], got[1:-1], got[-1]
    assert stale['tools'] == [] and stale['next_offset'] is None
    keys = [n for page in walked for n in names(page)]
    assert {p['total'] for p in got} == {whole['total']}
    assert len(keys) == len(set(keys)) == whole['total']
    assert keys[: len(whole['tools'])] == names(whole)
    if group is not None:
        assert all(k.startswith(f'{group}.') for k in keys)


async def test_each_search_reports_the_ranking_that_ran(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`controls.search.search_page` returns the `Ranking` (and the page's bytes) beside the page (for span attributes);
    the search control passes the page on. Recorded here by wrapping `search_page`."""
    seen: list[Ranking] = []
    original = _search.search_page

    async def recording(*args: Any) -> Any:
        page, ranking, page_bytes = await original(*args)
        seen.append(ranking)
        return page, ranking, page_bytes

    monkeypatch.setattr(_search, 'search_page', recording)
    await pages(proxy(), {'query': UMBRELLA})
    assert seen.pop() == KEYWORD
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    capability = proxy(model)
    await pages(capability, {'query': UMBRELLA}, {'query': ''})
    assert seen == [Ranking('hybrid', None, 7, 7), Ranking('keyword', 'browse', 7, 7)]
    seen.clear()
    model.query_fail = ConnectionError('x')
    await pages(capability, {'query': 'query that is not cached'})
    model.query_fail, model.query_delay = None, 1.0
    await pages(proxy(model, query_timeout=0.05), {'query': 'another'})
    assert [r.reason for r in seen] == ['embedder-error', 'query-timeout']
    seen.clear()
    model.query_delay, model.delay = 0, 0.5
    await pages(proxy(model, embedding_wait=0), {'query': UMBRELLA})
    assert seen == [Ranking('keyword', 'no-vectors', 0, 7)]
    seen.clear()
    mismatched = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, query_dimensions=128)
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        got = await pages(proxy(mismatched), {'query': UMBRELLA}, {'query': 'email'})
    assert got == await pages(proxy(), {'query': UMBRELLA}, {'query': 'email'})
    assert [r.reason for r in seen[:2]] == ['dimensions', 'dimensions']
    assert sum('128 dimensions' in r.getMessage() for r in caplog.records) == 1


async def test_memory_stays_bounded_when_texts_keep_changing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool whose description changes at every step is embedded each time (a new text); the process keeps the
    vectors the indexes want, not every text it ever saw."""
    monkeypatch.setattr(vectors_module, 'MEMORY_SLACK', 2)
    step = {'n': 0}

    async def prepare(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        step['n'] += 1
        return replace(tool_def, description=f'Forecast revision {step["n"]}.')

    weather: FunctionToolset[Any] = FunctionToolset([Tool(lambda: '', name='outlook', prepare=prepare)])
    model = BagOfWordsModel(dimensions=32)
    capability = ToolProxyCapability(
        groups={'weather': ToolProxyGroup(source=weather, description='Weather data')},
        config=ToolProxyConfig(embedder=model, embedding_cache=None),
    )
    await pages(capability, *[{'query': 'forecast'}] * 8)
    vectors = capability._runtime.vectors
    assert vectors is not None
    assert len(set(model.documents())) >= 6
    assert len(vectors.memory) <= 2 * 1 + 2 + 1


async def test_concurrent_runs_embed_each_text_once() -> None:
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, delay=0.05)
    capability = proxy(model)
    runs = [
        Agent(
            Script([[(SEARCH, {'query': UMBRELLA})], [(SEARCH, {'query': 'letter'})]]).model, capabilities=[capability]
        )
        for _ in range(4)
    ]
    results = await asyncio.gather(*(a.run('go') for a in runs))
    firsts = [page_of(returns(r.all_messages())[0]) for r in results]
    assert all(names(p)[0] == 'weather.get_forecast' for p in firsts)
    documents = model.documents()
    assert len(documents) == len(set(documents)) == 7


async def test_a_schema_change_keeps_the_vector() -> None:
    """The parameters are not part of the embedded text: a tool whose schema changes is re-indexed, not re-embedded."""
    state = {'extra': False}

    async def prepare(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        if not state['extra']:
            return tool_def
        schema = {**tool_def.parameters_json_schema}
        schema['properties'] = {**schema.get('properties', {}), 'units': {'type': 'string'}}
        return replace(tool_def, parameters_json_schema=schema)

    def flip(messages: list[ModelMessage], info: AgentInfo) -> list[tuple[str, dict[str, Any]]]:
        state['extra'] = True
        return [(SEARCH, {'query': 'forecast city'})]

    weather: FunctionToolset[Any] = FunctionToolset(
        [Tool(lambda city='': city, name='outlook', prepare=prepare, description='Forecast for a city.')]
    )
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    capability = ToolProxyCapability(
        groups={'weather': ToolProxyGroup(source=weather, description='Weather data')},
        config=ToolProxyConfig(embedder=model, embedding_cache=None),
    )
    script = Script([[(SEARCH, {'query': 'forecast city'})], flip, [(SEARCH, {'query': 'forecast city'})]])
    result = await Agent(script.model, capabilities=[capability]).run('go')
    *_, last = [page_of(p) for p in returns(result.all_messages())]
    assert 'units' in last['tools'][0]['parameters_json_schema']['properties']
    assert capability.index_builds >= 2  # the index saw the new schema
    assert len(model.documents()) == 1


def tenant_proxy(embedder: Any) -> ToolProxyCapability[str]:
    """One capability whose source lists per-deps catalogues (deps = the tenant's name), as in test_tenants.py."""
    from pydantic_ai_toolproxy._private import DynamicToolset

    def catalogue(tenant: str) -> FunctionToolset[str]:
        tools: FunctionToolset[str] = FunctionToolset()
        tools.add_function(lambda: tenant, name=f'{tenant}_outlook', description='Forecast for a city.')
        tools.add_function(lambda: tenant, name=f'{tenant}_mailer', description='Send an email message.')
        for i in range(3):
            tools.add_function(lambda: tenant, name=f'{tenant}_op_{i}', description=f'Operate record {i}.')
        return tools

    catalogues = {t: catalogue(t) for t in ('acme', 'globex')}
    source = DynamicToolset[str](toolset_func=lambda ctx: catalogues[ctx.deps], per_run_step=True)
    return ToolProxyCapability(
        groups={'account': ToolProxyGroup(source=source, description='The account tools')},
        config=ToolProxyConfig(embedder=embedder, embedding_cache=None),
    )


@pytest.mark.parametrize('max_indexes', [8, 1])
async def test_vectors_follow_every_tenant_index(max_indexes: int) -> None:
    """Interleaved tenants each rank by meaning over their own tools: vectors follow every index slot; with one slot
    (re-synced between tenants by differences) the vectors come back from memory, never from the embedder."""
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    capability = tenant_proxy(model)
    capability._runtime.search_index.max_indexes = max_indexes

    async def run(tenant: str) -> list[dict[str, Any]]:
        turns = [[(SEARCH, {'query': UMBRELLA, 'limit': 3})], [(SEARCH, {'query': 'letter', 'limit': 3})]] * 2
        script = Script(turns)

        async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            await asyncio.sleep(0.01)  # interleave the tenants' steps
            return script(messages, info)

        agent = Agent(FunctionModel(respond), capabilities=[capability], deps_type=str)
        result = await agent.run('go', deps=tenant)
        return [page_of(p) for p in returns(result.all_messages())]

    acme, globex = await asyncio.gather(run('acme'), run('globex'))
    for tenant, got in (('acme', acme), ('globex', globex)):
        assert [names(p)[0] for p in got] == [f'account.{tenant}_outlook', f'account.{tenant}_mailer'] * 2
        assert all(n.startswith(f'account.{tenant}_') for p in got for n in names(p))
    documents = model.documents()
    assert len(documents) == len(set(documents)) == 10  # 5 tools per tenant, each embedded once
    vectors = capability._runtime.vectors
    assert vectors is not None
    for slot in capability._runtime.search_index.slots:
        assert vectors.coverage(slot.index) == (5, 5)


async def test_the_query_is_embedded_while_the_search_waits_for_its_tools() -> None:
    """The first search's query embedding runs during its wait for the tool vectors, not after it: the document
    call here holds until the query's call has started (at most 3 s, then it answers anyway), so it sees the query
    under way only when the two overlap; embedded one after the other, the search would wait 3 s for the batch."""
    import threading
    from dataclasses import dataclass

    from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings
    from pydantic_ai.embeddings.result import EmbedInputType

    query_started = threading.Event()
    saw: list[bool] = []

    @dataclass(eq=False)
    class Overlap(BagOfWordsModel):
        async def embed(
            self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
        ) -> EmbeddingResult:
            if input_type == 'query':
                query_started.set()
            else:
                saw.append(await asyncio.to_thread(query_started.wait, 3.0))
            return await super().embed(inputs, input_type=input_type, settings=settings)

    model = Overlap(dimensions=256, synonyms=SYNONYMS)
    [page] = await pages(proxy(model), {'query': UMBRELLA})
    assert saw and saw[0] is True
    assert names(page)[0] == 'weather.get_forecast'  # the tools' vectors arrived within the wait: hybrid
