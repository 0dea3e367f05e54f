"""Embedder faults a run must survive, through real Agent runs (and `toolproxy embed` as a subprocess):

- an embedder call that never returns (`embed_documents`, `count_tokens`, `max_input_tokens`) is bounded by
  `embedding_timeout`: one host-side warning, keyword pages meanwhile, a retry later that embeds the step's tools
  (a later step's new tool too) once the embedder answers again; `toolproxy embed` exits 1 naming the bound;
- a cache file whose vectors are all of another dimensionality than the embedder's (written by a model of the same
  identity at another size) is replaced: its vectors count as missing, are embedded again and written over, with
  one warning, and the search ranks by meaning;
- a model without a name of its own (`model_name` `unknown`, as a folder SentenceTransformer) never shares a cache
  file: its vectors stay in memory, with one warning that says how to name it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel, DictStore, HangingModel, UnnamedModel
from pydantic_ai import Agent
from pydantic_ai.embeddings import Embedder
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext, Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, json_of, page_of, returns
from test_cli_embed import EMBEDDERS, SOURCES, embed_config, toolproxy
from test_hybrid_search import DESCRIPTIONS, SYNONYMS, UMBRELLA, catalogue, names, pages, proxy

from pydantic_ai_toolproxy import (
    MemoryEmbeddingStore,
    SQLiteEmbeddingStore,
    ToolProxyCapability,
    ToolProxyConfig,
    ToolProxyGroup,
)
from pydantic_ai_toolproxy.hybrid import fill
from pydantic_ai_toolproxy.hybrid.embedder import EmbedderTimeout, ResolvedEmbedder, bounded

LOGGER = 'pydantic_ai_toolproxy'


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def scripted(turns: Sequence[dict[str, Any] | float | Callable[[], None]]) -> FunctionModel:
    """A model that searches with each dict of `turns` in turn (one search per step), sleeps on the run's loop for
    each float and calls each callable (a change of the world between steps), then answers 'done'."""
    plan = list(turns)

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        while plan and not isinstance(plan[0], dict):
            item = plan.pop(0)
            if callable(item):
                item()
            else:
                await asyncio.sleep(item)
        if not plan:
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart(SEARCH, plan.pop(0))])

    return FunctionModel(respond)


# --- an embedder call that never returns ------------------------------------------------------------------------


def growing_proxy(model: Any, state: dict[str, bool], **config: Any) -> ToolProxyCapability[Any]:
    """`test_hybrid_search.proxy`'s catalogue plus a weather tool `rain_radar` that exists only while
    `state['radar']` is set (a later step's new tool)."""

    async def prepare(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition | None:
        return tool_def if state['radar'] else None

    sources: dict[str, FunctionToolset[Any]] = catalogue()
    sources['weather'].add_tool(
        Tool(lambda city='': city, name='rain_radar', description='Radar images of showers.', prepare=prepare)
    )
    return ToolProxyCapability(
        groups={g: ToolProxyGroup(source=sources[g], description=DESCRIPTIONS[g]) for g in sources},
        config=ToolProxyConfig(embedder=model, embedding_cache=None, **config),
    )


@pytest.mark.parametrize('call', ['document', 'count_tokens', 'max_input_tokens'])
async def test_a_hung_embedder_call_is_bounded_warned_once_and_retried(
    call: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedder's `call` never returns: each fill gives up after `embedding_timeout` (0.2 s) with one warning
    for the run, searches rank by keywords (the model sees no error), new tools of later steps wait too; once the
    embedder answers again, the retry embeds every tool of the step, the new one included, and ranks by meaning."""
    monkeypatch.setattr(fill, 'RETRY_SECONDS', 0.3)
    model = HangingModel(dimensions=256, synonyms=SYNONYMS, hang={call}, max_tokens=4)  # texts past 4 are counted
    state = {'radar': False}
    capability = growing_proxy(model, state, embedding_timeout=0.2, embedding_wait=5.0)

    def radar() -> None:
        state['radar'] = True

    def answer() -> None:
        model.hang = set()

    script = scripted(
        [
            radar,  # seen from the next step on (this step's tools are prepared already)
            {'query': UMBRELLA},  # the fill hangs; the search gives up on it at the bound, not at embedding_wait
            0.4,
            {'query': 'showers radar'},  # a retry: hangs again (one warning for both), the new tool waits as well
            answer,
            0.4,
            {'query': UMBRELLA},  # past the retry time: starts the retry without waiting (not the run's first search)
            0.3,
            {'query': UMBRELLA},  # the embedder answered meanwhile, every tool has its vector
        ]
    )
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, LOGGER):
        result = await Agent(script, capabilities=[capability]).run('go')
    elapsed = time.monotonic() - started
    first, second, third, last = [page_of(p) for p in returns(result.all_messages())]
    [keyword] = await pages(proxy(), {'query': UMBRELLA})
    assert first == keyword  # keyword page, no error text
    assert names(second)[0] == 'weather.rain_radar'  # by its keywords
    assert names(third)[:1] in (['weather.get_forecast'], [])  # not waited for: by meaning only if it was quick
    assert names(last)[0] == 'weather.get_forecast'  # by meaning: the retry embedded
    assert model.hung == 2
    warnings = warnings_of(caplog)
    assert len(warnings) == 1, warnings
    assert 'gave no answer within 0.2 s' in warnings[0] and 'rank by keywords' in warnings[0]
    assert elapsed < 5.0, elapsed  # each search was held at most by the bound, never by embedding_wait
    vectors = capability._runtime.vectors
    assert vectors is not None and vectors.coverage(capability._runtime.search_index.index) == (8, 8)
    assert sum(d.startswith('rain radar') for d in model.documents()) == 1  # cut to 4 words, embedded once
    text = str(result.all_messages())
    assert 'gave no answer' not in text and 'EmbedderTimeout' not in text


async def test_a_hung_query_embedding_is_bounded_even_if_it_ignores_cancellation() -> None:
    """`bounded` leaves a call behind that swallows its cancellation (wait_for would wait for it forever)."""
    gate = asyncio.Event()

    async def stubborn() -> str:
        while True:
            try:
                await gate.wait()
                return 'late'
            except asyncio.CancelledError:
                continue  # refuses to stop

    started = time.monotonic()
    with pytest.raises(EmbedderTimeout, match=r'embed_query gave no answer within 0\.1 s'):
        await bounded(stubborn(), 0.1, 'embed_query')
    assert time.monotonic() - started < 1.0
    gate.set()  # let the left-behind call end, so the loop closes cleanly
    await asyncio.sleep(0.01)
    assert await bounded(asyncio.sleep(0, 'ok'), 1.0, 'x') == 'ok'
    with pytest.raises(ValueError, match='own'):
        await bounded(_raises(ValueError('its own error')), 1.0, 'x')


async def _raises(error: Exception) -> None:
    raise error


def test_embedding_timeout_is_validated_and_carried() -> None:
    from pydantic_ai_toolproxy import search_strategy

    for bad in (0, -1, 601, float('nan'), True, '5'):
        with pytest.raises(ValueError, match=r'ToolProxyConfig\.embedding_timeout must'):
            ToolProxyConfig(embedding_timeout=bad)  # type: ignore[arg-type]
    assert ToolProxyConfig().embedding_timeout == 60.0
    strategy = search_strategy(embedder=BagOfWordsModel(), embedding_cache=None, embedding_timeout=3)
    assert strategy.config is not None and strategy.config.embedding_timeout == 3


@pytest.mark.parametrize('embedder', ['hanging', 'hanging_thread'])
def test_toolproxy_embed_gives_up_on_a_hung_embedder(embedder: str, tmp_path: Path) -> None:
    """`hanging`'s document calls never return (`hanging_thread`'s in a worker thread, which the interpreter would
    wait for at exit): `toolproxy embed` exits 1 within the config file's `embedding_timeout`, naming the call and
    the bound; nothing is stored."""
    cache = tmp_path / 'c.sqlite3'
    config = embed_config(tmp_path, embedder, 'embedding_timeout = 0.5\n')
    started = time.monotonic()
    proc = toolproxy('--config', str(config), 'embed', cache=cache)
    assert time.monotonic() - started < 60
    assert proc.returncode == 1, proc.stderr
    assert 'tools     7 tool texts: 0 embedded, 0 from the cache, 0 cut to the input limit, 7 failed' in proc.stdout
    assert proc.stderr.endswith(
        'toolproxy: error: the embedder failed, 7 tools left without a vector: '
        "EmbedderTimeout('embed_documents of 7 texts gave no answer within 0.5 s') (raise --embedding-timeout, or "
        "embedding_timeout in the config file's [discovery], if the embedder is only slow)\n"
    ), proc.stderr
    doc = json_of(toolproxy('--config', str(config), 'embed', '--json', cache=cache))
    assert doc['failed'] == 7 and 'gave no answer within 0.5 s' in doc['error']
    started = time.monotonic()
    search = toolproxy('--config', str(config), 'search', 'note', '--json', cache=cache)
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout) == json_of(toolproxy(*SOURCES, 'search', 'note', '--json'))  # keyword page
    assert search.stderr.count('gave no answer within 0.5 s') == 1, search.stderr  # not asked again at once
    assert time.monotonic() - started < 60


def test_the_embedder_time_bounds_can_be_set_on_the_command_line(tmp_path: Path) -> None:
    """`--embedding-timeout` (and `--embedding-wait`, `--query-timeout`) set the bounds without a config file; a
    value out of range is refused naming the field (exit 2)."""
    started = time.monotonic()
    proc = toolproxy(
        '--embedder', f'{EMBEDDERS}:hanging', '--embedding-timeout', '0.5', *SOURCES, 'embed', cache=tmp_path / 'c'
    )
    assert time.monotonic() - started < 60
    assert proc.returncode == 1 and 'gave no answer within 0.5 s' in proc.stderr, proc.stderr
    bounded = toolproxy(
        '--embedder',
        f'{EMBEDDERS}:bag',
        '--embedding-wait',
        '2',
        '--query-timeout',
        '3',
        *SOURCES,
        'search',
        'note',
        '--json',
    )
    assert bounded.returncode == 0, bounded.stderr
    for flag in ('--embedding-timeout', '--embedding-wait', '--query-timeout'):
        bad = toolproxy('--embedder', f'{EMBEDDERS}:bag', flag, '700', *SOURCES, 'inspect')
        field = flag.removeprefix('--').replace('-', '_')
        assert bad.returncode == 2 and field in bad.stderr and 'Traceback' not in bad.stderr, bad.stderr


# --- a cache of another dimensionality ---------------------------------------------------------------------------


@pytest.mark.parametrize('declared', [False, True], ids=['native', 'declared'])
async def test_a_cache_of_another_dimensionality_is_replaced(
    declared: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A real SQLite file filled by `bag` at 128 dimensions, read by `bag` of the same identity embedding 256
    (the model changed its output size under the cache): the first search already ranks by meaning, every tool is
    embedded again and its row replaced, one warning; a third process reads the 256-dimension rows and embeds
    nothing. With the size declared in the settings (`dimensions=256`), the 128 rows are unusable at once."""
    path = tmp_path / 'embeddings.sqlite3'
    searches = [{'query': UMBRELLA}, {'query': 'send a letter'}]

    def model(dimensions: int) -> Any:
        bag = BagOfWordsModel(dimensions=dimensions, synonyms=SYNONYMS)
        return Embedder(bag, settings={'dimensions': 256}) if declared else bag

    old = BagOfWordsModel(dimensions=128, synonyms=SYNONYMS)
    with SQLiteEmbeddingStore(path) as store:
        await pages(proxy(old, embedding_cache=store), *searches)
        if declared:  # the rows of a model that ignored the setting, under the declared key
            rows = store.get_many('bag:bag:native', store_hashes(path, 'bag:bag:native'))
            store.put_many('bag:bag:dimensions=256:256', rows)
    assert len(old.documents()) == 7
    new = model(256)
    bag = new.model if declared else new
    with caplog.at_level(logging.WARNING, LOGGER), SQLiteEmbeddingStore(path) as store:
        got = await pages(proxy(new, embedding_cache=store), *searches)
        key = ResolvedEmbedder(new).store_key
        rows = store.get_many(key, store_hashes(path, key))
    assert got == await pages(proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)), *searches)
    assert names(got[0])[0] == 'weather.get_forecast' and names(got[1])[0] == 'mail.send_email'
    assert sorted(bag.documents()) == sorted(set(bag.documents())) and len(bag.documents()) == 7
    assert len(rows) == 7 and {len(v) for v in rows.values()} == {256 * 4}  # replaced
    warnings = warnings_of(caplog)
    assert len(warnings) == 1, warnings
    if declared:  # the size was known before the store answered: its rows were unusable at once
        assert 'unusable vector' in warnings[0], warnings
    else:
        assert 'vectors of 128 dimensions' in warnings[0] and 'which embeds 256' in warnings[0], warnings
    third = model(256)
    with SQLiteEmbeddingStore(path) as store:
        assert await pages(proxy(third, embedding_cache=store), *searches) == got
    assert (third.model if declared else third).documents() == []


def store_hashes(path: Path, key: str) -> list[bytes]:
    import sqlite3

    with sqlite3.connect(path) as db:
        found = [
            bytes(h)
            for (h,) in db.execute(
                'SELECT hash FROM vectors JOIN models ON models.id = vectors.model WHERE models.name = ?', (key,)
            )
        ]
    db.close()
    return found


async def test_a_partly_stale_cache_is_replaced_when_a_new_tool_embeds(caplog: pytest.LogCaptureFixture) -> None:
    """The store holds 128-dimension vectors of six of the seven texts; the seventh is embedded fresh at 256: the
    six are stale, embedded again and replaced (one warning), and the search ranks by meaning."""
    store = DictStore()
    await pages(proxy(BagOfWordsModel(dimensions=128, synonyms=SYNONYMS), embedding_cache=store), {'query': 'x'})
    [drop] = [k for k in store.data if k[0] == 'bag:bag:native'][:1]
    del store.data[drop]
    new = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    with caplog.at_level(logging.WARNING, LOGGER):
        [page] = await pages(proxy(new, embedding_cache=store), {'query': UMBRELLA})
    assert names(page)[0] == 'weather.get_forecast'
    assert len(new.documents()) == 7 and len(set(new.documents())) == 7
    assert {len(v) for v in store.data.values()} == {256 * 4} and len(store.data) == 7
    assert len(warnings_of(caplog)) == 1, warnings_of(caplog)


async def test_queries_of_another_size_than_the_model_s_own_documents_still_fall_back() -> None:
    """When the embedder itself embedded the tools (no store), a query of another size is the model's fault: the
    tool vectors stay, the search is a keyword search (nothing re-embedded in a loop)."""
    mismatched = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, query_dimensions=128)
    got = await pages(proxy(mismatched), {'query': UMBRELLA}, {'query': 'email'})
    assert got == await pages(proxy(), {'query': UMBRELLA}, {'query': 'email'})
    assert len(mismatched.documents()) == 7


# --- a model without a name ---------------------------------------------------------------------------------------


async def test_unnamed_models_never_share_a_cache_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Two different models both named `unknown` (folder SentenceTransformers without a card) and one cache file:
    neither reads nor writes it (their key would be the same `sentence-transformers:unknown:native`), so each
    ranks by its own vectors; one warning per proxy says how to name the model. A named twin uses the file."""
    path = tmp_path / 'embeddings.sqlite3'
    one = UnnamedModel(dimensions=256, synonyms=SYNONYMS)
    other = UnnamedModel(dimensions=256, synonyms={'umbrella': 'email'})  # another model: umbrella means mail
    with caplog.at_level(logging.WARNING, LOGGER):
        first = (await pages(proxy(one, embedding_cache=str(path)), {'query': UMBRELLA}, {'query': 'file'}))[0]
        [second] = await pages(proxy(other, embedding_cache=str(path)), {'query': UMBRELLA})
    assert names(first)[0] == 'weather.get_forecast'
    assert names(second)[0] == 'mail.send_email'  # its own vectors, not the first model's
    assert len(other.documents()) == 7
    warnings = warnings_of(caplog)
    assert len(warnings) == 2, warnings
    assert "model_name 'unknown'" in warnings[0] and 'st.model_card_data.model_id' in warnings[0]
    assert 'SentenceTransformerEmbeddingModel(' in warnings[0]
    assert not path.exists() or store_hashes(path, 'sentence-transformers:unknown:native') == []
    named = replace(UnnamedModel(dimensions=256, synonyms=SYNONYMS), name='org/folder-model')
    await pages(proxy(named, embedding_cache=str(path)), {'query': UMBRELLA})
    assert len(store_hashes(path, 'sentence-transformers:org/folder-model:native')) == 7


@pytest.mark.parametrize('name', ['unknown', 'UNKNOWN', '', '  ', None])
def test_which_models_are_unnamed(name: Any) -> None:
    model = UnnamedModel(name=name)
    assert not ResolvedEmbedder(model).named
    assert not ResolvedEmbedder(Embedder(model)).named
    assert ResolvedEmbedder(UnnamedModel(name='sentence-transformers/all-MiniLM-L6-v2')).named
    assert ResolvedEmbedder(UnnamedModel(name='/models/all-MiniLM-L6-v2')).named


async def test_an_unnamed_model_keeps_a_memory_store_and_warns_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """A `MemoryEmbeddingStore` (the CLI's `--embedding-cache off`) is this process's: no ambiguity, no warning."""
    store = MemoryEmbeddingStore()
    with caplog.at_level(logging.WARNING, LOGGER):
        [page] = await pages(
            proxy(UnnamedModel(dimensions=256, synonyms=SYNONYMS), embedding_cache=store), {'query': UMBRELLA}
        )
    assert names(page)[0] == 'weather.get_forecast'
    assert warnings_of(caplog) == []
    assert store.get_many('sentence-transformers:unknown:native', []) == {}


def test_toolproxy_embed_with_an_unnamed_model_exits_1_and_says_how_to_name_it(tmp_path: Path) -> None:
    cache = tmp_path / 'c.sqlite3'
    proc = toolproxy('--embedder', f'{EMBEDDERS}:unnamed', *SOURCES, 'embed', cache=cache)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("model_name 'unknown'") == 1 and 'st.model_card_data.model_id' in proc.stderr
    assert 'toolproxy: error: the embedder has no name of its own: no vector was saved' in proc.stderr
    assert not cache.exists() or store_hashes(cache, 'sentence-transformers:unknown:native') == []


async def test_tool_search_strategy_replaces_a_cache_of_another_dimensionality(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`search_strategy(embedder=...)` (Pydantic AI's `ToolSearch`) over a store of 64-dimension vectors of the same
    identity, embedding 256: the query shows the store stale, the tools are embedded again and the call ranks
    hybrid (one warning), the store's rows replaced."""
    from support import Script
    from test_strategy import SYNONYMS as STRATEGY_SYNONYMS
    from test_strategy import UMBRELLA as STRATEGY_UMBRELLA
    from test_strategy import WEATHER, agent_with, run_searches

    from pydantic_ai_toolproxy import search_strategy

    store = DictStore()
    search = Script([[('search_tools', {'queries': [STRATEGY_UMBRELLA]})]])
    old = search_strategy(embedder=BagOfWordsModel(dimensions=64, synonyms=STRATEGY_SYNONYMS), embedding_cache=store)
    await run_searches(agent_with(old, WEATHER, search))
    assert len(store.data) == len(WEATHER) and {len(v) for v in store.data.values()} == {64 * 4}
    model = BagOfWordsModel(dimensions=256, synonyms=STRATEGY_SYNONYMS)
    strategy = search_strategy(embedder=model, embedding_cache=store)
    search = Script([[('search_tools', {'queries': [STRATEGY_UMBRELLA]})]])
    with caplog.at_level(logging.WARNING, LOGGER):
        [found] = await run_searches(agent_with(strategy, WEATHER, search))
    assert strategy.rankings == [('hybrid', None)]
    assert found[0] in {'get_weather', 'weather_alerts', 'forecast'}
    assert len(model.documents()) == len(WEATHER) and {len(v) for v in store.data.values()} == {256 * 4}
    assert len(warnings_of(caplog)) == 1, warnings_of(caplog)


async def test_embed_surface_replaces_a_partly_stale_cache() -> None:
    """What `toolproxy embed` runs: two of three texts cached at 128 dimensions, the third embedded fresh at 256:
    the two count as embedded, not cached, and the store holds three 256-dimension rows."""
    from test_hybrid_config import _capability, _prepared, _weather_tools

    from pydantic_ai_toolproxy.cli._embed import embed_surface

    store = DictStore()
    first = _capability(BagOfWordsModel(dimensions=128), store, _weather_tools(2))
    assert (await embed_surface(first, await _prepared(first))).embedded == 2
    model = BagOfWordsModel(dimensions=256)
    capability = _capability(model, store, _weather_tools(3))
    seen: list[tuple[int, int]] = []
    counts = await embed_surface(capability, await _prepared(capability), lambda d, t: seen.append((d, t)))
    assert (counts.tools, counts.embedded, counts.cached, counts.failed, counts.error) == (3, 3, 0, 0, None)
    assert len(model.documents()) == 3 and {len(v) for v in store.data.values()} == {256 * 4}
    assert seen[-1] == (3, 3) and all(d <= t for d, t in seen)
