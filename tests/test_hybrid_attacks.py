"""Hybrid search against a hostile store and a lying embedder, through real Agent runs: a store answering with
vectors the core cannot take (wrong size, non-finite, not bytes, hashes not asked for) costs one warning and a
re-embedding, never the hybrid ranking of the process; a `max_input_tokens` of `True` is no limit of one token."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel, DictStore
from test_hybrid_search import SYNONYMS, UMBRELLA, names, pages, proxy

from pydantic_ai_toolproxy import SQLiteEmbeddingStore, _vectors


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
    assert _vectors.usable_vectors(found, [b'a', b'b', b'c', b'd'], None) == ({b'a': one, b'c': one}, 3)
    assert _vectors.usable_vectors(found, [b'a', b'b', b'd'], 3) == ({b'b': two, b'd': two}, 3)
    big = array('f', [3e38, -3e38, 1e-45, -0.0]).tobytes()
    assert _vectors.usable_vectors({b'x': big}, [b'x'], None) == ({b'x': big}, 0)  # large and tiny values are finite
    with pytest.raises(AttributeError):
        _vectors.usable_vectors([b'x'], [b'x'], None)  # type: ignore[arg-type]


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
    assert [r for r in caplog.records if r.name == 'pydantic_ai_toolproxy'] == []


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
