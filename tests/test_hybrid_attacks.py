"""Hybrid search against a hostile store and a lying embedder, through real Agent runs: a store answering with
vectors the core cannot take (wrong size, non-finite, not bytes, hashes not asked for) costs one warning and a
re-embedding, never the hybrid ranking of the process; a store waiting for a lock (a SQLite file another process
holds) waits in a worker thread, never on the event loop; a `max_input_tokens` of `True` is no limit of one token; a
tool embedding that never returns leaves keyword pages, and no warning while it is within `embedding_timeout` (past
it: tests/test_hybrid_faults.py); a text the provider refuses costs only its own vector, and an outage is not split
into many calls; runs in several threads embed each text once."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel, DictStore
from pydantic_ai import Agent
from support import SEARCH, Script, page_of, returns
from test_hybrid_search import SYNONYMS, UMBRELLA, names, pages, proxy

from pydantic_ai_toolproxy import SQLiteEmbeddingStore, ToolProxyConfig
from pydantic_ai_toolproxy.hybrid import batches
from pydantic_ai_toolproxy.hybrid.embedding_text import text_hash
from pydantic_ai_toolproxy.hybrid.store_io import usable_vectors
from pydantic_ai_toolproxy.hybrid.vectors import ToolVectors


class GarbageStore(DictStore):
    """A `DictStore` that answers `value` for every hash it does not hold (a damaged or foreign shared store),
    plus one hash nobody asked for."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        held = super().get_many(model, hashes)
        return {h: held.get(h, self.value) for h in hashes} | {b'never asked': bytes(1024)}


GARBAGE = {
    'three-bytes': b'\x00\x00\x80',
    'empty': b'',
    'nan': array('f', [float('nan')] * 256).tobytes(),
    'infinity': array('f', [1.0] * 255 + [float('inf')]).tobytes(),
    'str': 'not bytes',
    'none': None,
    'list': [0.5] * 256,
}


@pytest.mark.parametrize('value', GARBAGE.values(), ids=GARBAGE.keys())
async def test_unusable_store_vectors_are_embedded_again(value: Any, caplog: pytest.LogCaptureFixture) -> None:
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    store = GarbageStore(value)
    searches = [{'query': UMBRELLA}, {'query': 'file'}, {'query': UMBRELLA, 'limit': 1}]
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        got = await pages(proxy(model, embedding_cache=store), *searches)
    assert got == await pages(proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)), *searches)
    assert names(got[0])[0] == 'weather.get_forecast'
    assert len(model.documents()) == 7 and len(store.data) == 7  # embedded once, and the store healed
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1 and 'unusable vector' in warnings[0], warnings
    again = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
    assert await pages(proxy(again, embedding_cache=store), *searches) == got  # a second process reads them
    assert again.documents() == []


def test_usable_vectors_keeps_one_dimensionality() -> None:
    one, two = array('f', [1.0, 2.0]).tobytes(), array('f', [1.0, 2.0, 3.0]).tobytes()
    found = {b'a': one, b'b': two, b'c': bytearray(one), b'd': memoryview(two), b'e': one}
    assert usable_vectors(found, [b'a', b'b', b'c', b'd'], None) == ({b'a': one, b'c': one}, 3)
    assert usable_vectors(found, [b'a', b'b', b'd'], 3) == ({b'b': two, b'd': two}, 3)
    big = array('f', [3e38, -3e38, 1e-45, -0.0]).tobytes()
    assert usable_vectors({b'x': big}, [b'x'], None) == ({b'x': big}, 0)  # large and tiny values are finite
    with pytest.raises(AttributeError):
        usable_vectors([b'x'], [b'x'], None)  # type: ignore[arg-type]


@dataclass(eq=False)
class BoolLimitModel(BagOfWordsModel):
    """A model whose `max_input_tokens` answers `True` (a bool is no token count)."""

    async def max_input_tokens(self) -> int | None:
        return True


async def test_a_bool_token_limit_is_no_limit() -> None:
    model = BoolLimitModel(dimensions=256, synonyms=SYNONYMS)
    [page] = await pages(proxy(model), {'query': UMBRELLA})
    assert names(page)[0] == 'weather.get_forecast'
    assert 'get forecast: Forecast for a city. weather: Weather data' in model.documents()


@dataclass(eq=False)
class HangingModel(BagOfWordsModel):
    """A model whose document embedding never returns (queries answer)."""

    async def embed(self, inputs: Any, *, input_type: Any, settings: Any = None) -> Any:
        if input_type == 'document':
            await asyncio.Event().wait()
        return await super().embed(inputs, input_type=input_type, settings=settings)


async def test_a_hanging_tool_embedding_leaves_keyword_pages(caplog: pytest.LogCaptureFixture) -> None:
    searches = [{'query': UMBRELLA}, {'query': 'file', 'limit': 2}, {'query': 'file', 'offset': 2}]
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        got = await pages(proxy(HangingModel(dimensions=256), embedding_wait=0.05), *searches)
    assert got == await pages(proxy(), *searches)
    logged = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(logged) == 1 and logged[0].startswith('hybrid search ranked by keywords only (no-vectors: ')  # once


async def test_a_locked_cache_file_never_blocks_the_event_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holds the SQLite file's write lock: the store waits its busy timeout (1 s here) and falls
    back to memory; meanwhile the run's event loop keeps ticking and the search still ranks by meaning."""
    path = tmp_path / 'embeddings.sqlite3'
    with SQLiteEmbeddingStore(path) as setup:
        setup.put_many('other:model:1', {b'h' * 16: bytes(4)})
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute('BEGIN EXCLUSIVE')
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS)
        with (
            caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'),
            SQLiteEmbeddingStore(path, timeout=1.0) as store,
        ):
            [page] = await pages(proxy(model, embedding_cache=store), {'query': UMBRELLA})
    finally:
        ticking.cancel()
        blocker.close()
    assert names(page)[0] == 'weather.get_forecast'
    assert 'locked' in caplog.text
    assert max(gaps) < 0.5, max(gaps)


@dataclass(eq=False)
class PickyModel(BagOfWordsModel):
    """A provider that refuses a whole request when one of its texts holds `refused` (say, one text over a token
    limit its `max_input_tokens` did not tell), and counts the document requests it refused."""

    refused: str = 'Air quality'
    refusals: int = 0

    async def embed(self, inputs: Any, *, input_type: Any, settings: Any = None) -> Any:
        if input_type == 'document' and any(self.refused in text for text in inputs):
            self.refusals += 1
            raise ValueError('400: an input is too long')
        return await super().embed(inputs, input_type=input_type, settings=settings)


async def test_one_refused_text_costs_only_its_own_vector(caplog: pytest.LogCaptureFixture) -> None:
    """The provider refuses every request holding the air-quality text: the other six tools still get their
    vectors (the batch is split until the refused text is alone), with one warning."""
    model = PickyModel(dimensions=256, synonyms=SYNONYMS)
    capability = proxy(model)
    with caplog.at_level(logging.WARNING, 'pydantic_ai_toolproxy'):
        [page] = await pages(capability, {'query': UMBRELLA})
    assert names(page)[0] == 'weather.get_forecast'
    assert len(model.documents()) == 6 and model.refusals <= 4  # 7, then 3 or 4, ..., then the text alone
    vectors = capability._runtime.vectors
    assert vectors is not None and vectors.coverage(capability._runtime.search_index.index) == (6, 7)
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1 and 'too long' in warnings[0], warnings


async def test_an_outage_is_not_split_into_many_calls() -> None:
    model = PickyModel(dimensions=256, synonyms=SYNONYMS, refused='')  # every document request fails
    [page] = await pages(proxy(model), {'query': UMBRELLA})
    assert page == (await pages(proxy(), {'query': UMBRELLA}))[0]
    assert 1 <= model.refusals <= batches.MAX_FAILED_CALLS


async def test_refused_texts_in_several_batches_leave_every_other_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts 3, 5 and 6 of 20 are refused (two of them side by side), in batches of 4: the pass embeds the other
    17, each once, and raises the refusal at its end; `embed_surface`-style counts see 17 embedded."""
    monkeypatch.setattr(batches, 'BATCH_INPUTS', 4)
    model = PickyModel(dimensions=16, refused='refuse')
    vectors = ToolVectors(ToolProxyConfig(embedder=model, embedding_cache=None), {}, threading.Lock())
    texts = {text_hash(f'text {i}'): f'text {i}' + (' refuse' if i in (3, 5, 6) else '') for i in range(20)}
    counts = batches.EmbedCounts()
    with pytest.raises(ValueError, match='too long'):
        await vectors.embed_texts(texts, counts)
    assert counts.embedded == 17 and sorted(model.documents()) == sorted(t for t in texts.values() if 'refuse' not in t)
    assert model.refusals <= 8


def test_runs_in_several_threads_embed_each_text_once() -> None:
    """Six threads run the same capability (each on its own event loop) while the first embedding
    is slow: they join the embedding already running on another thread's loop instead of each starting their own,
    so each tool text is embedded once, and every run's first search already ranks by meaning."""
    model = BagOfWordsModel(dimensions=256, synonyms=SYNONYMS, delay=0.2)
    capability = proxy(model)
    got: dict[int, list[str]] = {}

    def run(i: int) -> None:
        agent = Agent(Script([[(SEARCH, {'query': UMBRELLA})]]).model, capabilities=[capability])
        result = asyncio.run(agent.run('go'))  # a loop per thread, closed after (run_sync leaves its loop open)
        got[i] = names(page_of(returns(result.all_messages())[0]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 6 and all(page[0] == 'weather.get_forecast' for page in got.values())
    assert sorted(model.documents()) == sorted(set(model.documents())) and len(model.documents()) == 7
