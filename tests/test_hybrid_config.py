"""Hybrid search configuration, embedder identity, the embedding text recipe and the embedding pipeline's batching,
cutting, store and query-side faults (no vectors in the index needed: `embed_surface` and `ToolVectors` directly)."""

from __future__ import annotations

import asyncio
import logging
import threading
from array import array
from pathlib import Path
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel, DictStore, bag_vector
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.embeddings import Embedder, TestEmbeddingModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy.cli._embed import embed_surface
from pydantic_ai_toolproxy.config import DEFAULT_EMBEDDING_CACHE
from pydantic_ai_toolproxy.embedding_store import SQLiteEmbeddingStore
from pydantic_ai_toolproxy.hybrid import batches, queries
from pydantic_ai_toolproxy.hybrid.embedder import ResolvedEmbedder, vector_bytes
from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text, text_hash
from pydantic_ai_toolproxy.hybrid.store_io import open_store
from pydantic_ai_toolproxy.hybrid.vectors import ToolVectors


@pytest.mark.parametrize(
    ('kwargs', 'field'),
    [
        ({'semantic_weight': 1.5}, 'semantic_weight'),
        ({'semantic_weight': -0.1}, 'semantic_weight'),
        ({'semantic_weight': float('nan')}, 'semantic_weight'),
        ({'semantic_weight': True}, 'semantic_weight'),
        ({'semantic_weight': '0.4'}, 'semantic_weight'),
        ({'embedding_wait': -1}, 'embedding_wait'),
        ({'embedding_wait': 601}, 'embedding_wait'),
        ({'query_timeout': 0}, 'query_timeout'),
        ({'query_timeout': float('inf')}, 'query_timeout'),
        ({'embedder': 'no-provider-prefix'}, 'embedder'),
        ({'embedder': ':model'}, 'embedder'),
        ({'embedder': 42}, 'embedder'),
        ({'embedding_cache': ''}, 'embedding_cache'),
        ({'embedding_cache': object()}, 'embedding_cache'),
    ],
)
def test_config_errors_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=rf'ToolProxyConfig\.{field} must'):
        ToolProxyConfig(**kwargs)


def test_config_accepts_every_embedder_form(tmp_path: Path) -> None:
    model = TestEmbeddingModel()
    for embedder in (model, Embedder(model), 'openai:text-embedding-3-small', 'sentence-transformers:all-MiniLM-L6-v2'):
        config = ToolProxyConfig(embedder=embedder, semantic_weight=0, embedding_wait=0, embedding_cache=tmp_path / 'x')
        assert config.embedder is embedder
    assert ToolProxyConfig(embedding_cache=DictStore()).embedder is None
    assert ToolProxyConfig().embedding_cache == DEFAULT_EMBEDDING_CACHE


def test_cache_setting_opens_the_store_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = BagOfWordsModel()
    monkeypatch.setenv('TOOLPROXY_EMBEDDING_CACHE', str(tmp_path / 'default.sqlite3'))
    default = open_store(ToolProxyConfig(embedder=model))
    assert isinstance(default, SQLiteEmbeddingStore) and 'default.sqlite3' in repr(default)
    monkeypatch.setenv('TOOLPROXY_EMBEDDING_CACHE', 'off')
    assert open_store(ToolProxyConfig(embedder=model)) is None
    assert open_store(ToolProxyConfig(embedder=model, embedding_cache=None)) is None
    assert isinstance(open_store(ToolProxyConfig(embedder=model, embedding_cache=tmp_path / 'x')), SQLiteEmbeddingStore)
    mine = DictStore()
    assert open_store(ToolProxyConfig(embedder=model, embedding_cache=mine)) is mine
    assert repr(ToolProxyConfig().embedding_cache) == 'DEFAULT_EMBEDDING_CACHE'


def test_a_model_name_is_resolved_only_when_used() -> None:
    """A name whose provider cannot be built (no API key) configures fine; resolving it raises then."""
    config = ToolProxyConfig(embedder='openai:text-embedding-3-small')
    resolved = ResolvedEmbedder(config.embedder)  # type: ignore[arg-type]
    assert 'openai' in resolved.describe()


def test_identity_and_store_key() -> None:
    assert ResolvedEmbedder(TestEmbeddingModel('m1')).identity == 'test:m1'
    assert ResolvedEmbedder(TestEmbeddingModel('m1')).store_key == 'test:m1:native'
    sized = ResolvedEmbedder(Embedder(TestEmbeddingModel('m1'), settings={'dimensions': 256}))
    assert sized.identity == 'test:m1:dimensions=256'
    assert sized.store_key == 'test:m1:dimensions=256:256'
    on_model = ResolvedEmbedder(TestEmbeddingModel('m1', settings={'dimensions': 32}))
    assert on_model.store_key == 'test:m1:dimensions=32:32'


def test_embedding_text_recipe() -> None:
    assert embedding_text('weather', 'get_forecast', 'Forecast for a city.', 'Weather data') == (
        'get forecast: Forecast for a city. weather: Weather data'
    )
    assert embedding_text('g', 'tool-name', '', '') == 'tool name g'
    assert embedding_text('g', 'x', 'two\n lines', '  ') == 'x: two lines g'
    assert text_hash('a') != text_hash('b') and len(text_hash('a')) == 16
    assert text_hash('a\ud800') == text_hash('a\ud800')  # a lone surrogate hashes too


def test_vector_bytes_rejects_bad_vectors() -> None:
    assert array('f', vector_bytes([1.0, -2.5])).tolist() == [1.0, -2.5]
    for bad in ([], [float('nan')], [1e39]):
        with pytest.raises(ValueError):
            vector_bytes(bad)


def _weather_tools(n: int = 3) -> FunctionToolset[Any]:
    tools: FunctionToolset[Any] = FunctionToolset()
    for i in range(n):
        tools.add_function(lambda city='': city, name=f'forecast_{i}', description=f'Weather forecast number {i}.')
    return tools


def _capability(model: Any, store: Any = None, tools: FunctionToolset[Any] | None = None, **kw: Any) -> Any:
    return ToolProxyCapability(
        groups={'weather': ToolProxyGroup(source=tools or _weather_tools(), description='Weather data')},
        config=ToolProxyConfig(embedder=model, embedding_cache=store, **kw),
    )


async def _prepared(capability: ToolProxyCapability[Any]) -> dict[str, ToolsetTool[Any]]:
    """The grouped tools as one step prepares them: the capability's toolset's tools for a bare context."""
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import RunContext
    from pydantic_ai.usage import RunUsage

    toolset = capability.get_toolset()
    assert toolset is not None
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    async with toolset:
        return await toolset.get_tools(ctx)  # type: ignore[union-attr]


async def test_embed_surface_counts_cached_embedded_and_cut() -> None:
    model = BagOfWordsModel(max_tokens=6)
    store = DictStore()
    long = FunctionToolset[Any]()
    long.add_function(lambda: '', name='short', description='Rain.')
    long.add_function(lambda: '', name='long', description=' '.join(['storm'] * 40))
    capability = _capability(model, store, long)
    tools = await _prepared(capability)
    counts = await embed_surface(capability, tools)
    assert (counts.tools, counts.embedded, counts.cached, counts.cut, counts.failed) == (2, 2, 0, 1, 0)
    assert counts.usage.input_tokens > 0 and counts.error is None
    assert all(len(t.split()) <= 6 for t in model.documents())  # the long text was cut to the model's limit
    assert len(store.data) == 2
    second = _capability(BagOfWordsModel(max_tokens=6), store, long)  # another process: same store, empty memory
    again = await embed_surface(second, await _prepared(second))
    assert (again.tools, again.embedded, again.cached, again.failed) == (2, 0, 2, 0)


async def test_embed_surface_batches_within_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, 'BATCH_INPUTS', 4)
    model = BagOfWordsModel()
    capability = _capability(model, None, _weather_tools(10))
    done: list[tuple[int, int]] = []
    counts = await embed_surface(capability, await _prepared(capability), lambda d, t: done.append((d, t)))
    assert [len(texts) for _, texts in model.calls] == [4, 4, 2]
    assert done == [(0, 10), (4, 10), (8, 10), (10, 10)]
    assert counts.embedded == 10


async def test_embed_surface_reports_an_embedder_error() -> None:
    model = BagOfWordsModel(fail=RuntimeError('quota exceeded'))
    capability = _capability(model)
    counts = await embed_surface(capability, await _prepared(capability))
    assert (counts.embedded, counts.failed) == (0, 3)
    assert counts.error is not None and 'quota exceeded' in counts.error


async def test_query_vectors_are_cached_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queries, 'QUERY_CACHE_SIZE', 2)
    model = BagOfWordsModel()
    vectors = ToolVectors(ToolProxyConfig(embedder=model, embedding_cache=None), {}, threading.Lock())
    for q in ('a', 'b', 'a', 'c', 'a'):
        vector, reason = await vectors.query_vector(q)
        assert reason is None and vector == vector_bytes(bag_vector(q, 64, {}))
    assert [texts for _, texts in model.calls] == [['a'], ['b'], ['c']]  # 'a' stayed recent; 'b' was dropped
    assert vectors.cached_query_vector('b') is None
    assert await vectors.query_vector('   ') == (None, 'no-words')
    assert await vectors.query_vector('???') == (None, 'no-words')  # the core's rule: nothing to look for


async def test_query_faults_warn_once_until_recovered(caplog: pytest.LogCaptureFixture) -> None:
    model = BagOfWordsModel(query_delay=0.5)
    vectors = ToolVectors(
        ToolProxyConfig(embedder=model, embedding_cache=None, query_timeout=0.05), {}, threading.Lock()
    )
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        assert await vectors.query_vector('q1') == (None, 'query-timeout')
        assert await vectors.query_vector('q2') == (None, 'query-timeout')
        model.query_delay, model.query_fail = 0, ConnectionError('down')
        assert await vectors.query_vector('q3') == (None, 'embedder-error')
        assert await vectors.query_vector('q4') == (None, 'embedder-error')
        model.query_fail = None
        assert (await vectors.query_vector('q5'))[1] is None
        model.query_fail = ConnectionError('down again')
        assert await vectors.query_vector('q6') == (None, 'embedder-error')
    messages = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(messages) == 3, messages
    assert 'took longer than 0.05 s' in messages[0] and 'down' in messages[1] and 'down again' in messages[2]


async def test_a_broken_store_falls_back_to_memory_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    store = DictStore()
    store.broken = OSError('disk I/O error')
    model = BagOfWordsModel()
    capability = _capability(model, store)
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        counts = await embed_surface(capability, await _prepared(capability))
        counts2 = await embed_surface(capability, await _prepared(capability))
    assert counts.embedded == 3 and counts2.cached == 3  # the second pass finds them in memory
    warnings = [r for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1 and 'disk I/O error' in warnings[0].getMessage()


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 30), min_size=1, max_size=40),
    limit=st.one_of(st.none(), st.integers(3, 12)),
    batch=st.integers(1, 8),
)
def test_batches_and_cuts_respect_the_limits(lengths: list[int], limit: int | None, batch: int) -> None:
    """Every `embed_documents` call holds at most `BATCH_INPUTS` texts, every text sent fits `max_input_tokens`,
    the cut count is the number of texts over it, and every text gets exactly one vector."""
    model = BagOfWordsModel(max_tokens=limit)
    vectors = ToolVectors(ToolProxyConfig(embedder=model, embedding_cache=None), {}, threading.Lock())
    texts = {text_hash(f'text {i} ' + 'word ' * n): f'text {i} ' + 'word ' * n for i, n in enumerate(lengths)}
    counts = batches.EmbedCounts()
    old = batches.BATCH_INPUTS
    batches.BATCH_INPUTS = batch
    try:
        out = asyncio.run(vectors.embed_texts(texts, counts))
    finally:
        batches.BATCH_INPUTS = old
    assert set(out) == set(texts) and counts.embedded == len(texts)
    assert all(1 <= len(sent) <= batch for _, sent in model.calls)
    sent = model.documents()
    if limit is not None:
        assert all(len(t.split()) <= limit for t in sent)
    over = sum(len(t.split()) >= limit for t in texts.values()) if limit is not None else 0
    assert counts.cut == over


def test_an_embedder_that_cannot_be_made_is_no_cache_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A named embedder whose provider has no API key: the search goes on by keywords, the warnings say why, and
    none blames the embedding cache, which did not fail."""
    pytest.importorskip('openai')
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    monkeypatch.delenv('OPENAI_API_KEY', raising=False)

    def get_forecast(city: str) -> str:
        """Forecast for a city."""
        return 'rain'

    proxy = ToolProxyCapability(
        groups={'weather': ToolProxyGroup(source=FunctionToolset([get_forecast]), description='Weather data')},
        config=ToolProxyConfig(embedder='openai:text-embedding-3-small', embedding_cache=str(tmp_path / 'v.sqlite3')),
    )

    def model(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': 'forecast'})])
        return ModelResponse(parts=[TextPart(str(messages[-1].parts[-1].content))])

    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        output = asyncio.run(Agent(FunctionModel(model), capabilities=[proxy]).run('x')).output
    assert 'get_forecast' in output
    said = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert said and all('OPENAI_API_KEY' in line for line in said), said
    assert not any('cache' in line for line in said), said
