"""Loading tool vectors fast (issue 22: 100,000 cached vectors in under a second) without changing what is loaded.

- `_core.embedding_fingerprints` builds each tool's embedding text and its fingerprint byte-identically to the Python
  recipe (`hybrid.embedding_text.embedding_text`, `text_hash`), so existing cache files stay valid; records it cannot do
  (a lone surrogate, a group without a known part, fields that are not `str`) are left to the recipe;
- `SearchIndex.set_vector_rows` stores the same codes as `set_vectors` of the joined rows, with the same refusals;
- `_core.nonfinite_rows` finds the rows `usable_vectors` must drop;
- a restart over a warm SQLite cache attaches every vector without one embedder call, through a real `Agent` run,
  with more tools than the core's bulk threshold (its threaded paths) and tools sharing one text.
"""

from __future__ import annotations

import math
import struct
import threading
from array import array
from pathlib import Path
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, Script, page_of, returns

from pydantic_ai_toolproxy import SQLiteEmbeddingStore, ToolProxyCapability, ToolProxyConfig, ToolProxyGroup, _core
from pydantic_ai_toolproxy.grouping.directory import index_record
from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text, group_text, text_hash
from pydantic_ai_toolproxy.hybrid.store_io import usable_vectors
from pydantic_ai_toolproxy.hybrid.vectors import ToolVectors

SPACES = ''.join(chr(c) for c in range(0x110000) if chr(c).isspace())
"""Every character Python's `str.split()` splits at (29 in CPython 3.11 and 3.13, U+001C-U+001F among them)."""
TEXT = st.text(alphabet=st.sampled_from(SPACES + '_-:.aZ9é中\u200b\U0001f600'), max_size=24)


def recipe(records: list[Any], descriptions: dict[str, str]) -> tuple[list[str], list[bytes]]:
    texts = [embedding_text(r[1], r[2], r[3], descriptions.get(r[1], '')) for r in records]
    return texts, [text_hash(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT, TEXT), min_size=1, max_size=8), TEXT)
def test_core_fingerprints_equal_the_python_recipe(parts: list[tuple[str, str, str]], group_description: str) -> None:
    records = [index_record(f'g{i}__t', f'g{i % 2}', description, None) for i, (_, _, description) in enumerate(parts)]
    records = [
        (key, group, tool, description, None) for (key, group, _, description, _), (tool, _, _) in zip(records, parts)
    ]
    descriptions = {'g0': group_description, 'g1': parts[0][1]}
    tails = {group: group_text(group, text) for group, text in descriptions.items()}
    assert _core.embedding_fingerprints(records, tails) == recipe(records, descriptions)


def test_records_the_core_leaves_to_the_recipe_get_the_recipes_fingerprint() -> None:
    records = [
        ('g__lone', 'g', 'lone_\ud800', 'surrogate', None),  # not UTF-8
        ('h__tool', 'h', 'tool', 'group h has no known part', None),
        ('g__fine', 'g', 'fine', 'Does   things.\n', None),
    ]
    texts, fingerprints = _core.embedding_fingerprints(records, {'g': 'g: Group'})
    assert (texts[:2], fingerprints[:2]) == ([None, None], [None, None])
    assert (texts[2], fingerprints[2]) == ('fine: Does things. g: Group', text_hash('fine: Does things. g: Group'))
    assert _core.embedding_fingerprints([('k', 'g', 3, 'd', None), ('k',)], {'g': ''}) == ([None, None], [None, None])
    with pytest.raises(TypeError):
        _core.embedding_fingerprints(3, {})  # type: ignore[arg-type]

    vectors = ToolVectors(
        ToolProxyConfig(embedder=BagOfWordsModel(), embedding_cache=None), {'g': 'Group'}, threading.Lock()
    )
    index = _core.SearchIndex()
    index.upsert(records)
    vectors.follow(index, records, [])
    state = next(iter(vectors._states.values()))
    assert state.wanted == dict(zip([r[0] for r in records], recipe(records, {'g': 'Group'})[1]))
    assert vectors.pending == 3


def test_many_records_fingerprint_alike_on_the_threaded_path() -> None:
    n = 3 * 8_192  # past the core's bulk threshold: split over threads
    records = [
        index_record(f'g{i % 7}__t_{i}', f'g{i % 7}', f'Tool {i}\tdoes  {"é" * (i % 3)} things.', None)
        for i in range(n)
    ]
    descriptions = {f'g{g}': f'Group {g}' for g in range(7)}
    tails = {g: group_text(g, d) for g, d in descriptions.items()}
    assert _core.embedding_fingerprints(records, tails) == recipe(records, descriptions)


def rows(n: int, dimensions: int) -> list[bytes]:
    return [array('f', [math.sin(i * 7 + d) for d in range(dimensions)]).tobytes() for i in range(n)]


@pytest.mark.parametrize('n', [5, 9_000])
def test_set_vector_rows_stores_what_set_vectors_stores(n: int) -> None:
    """Also: 9,000 rows at once (quantized by several threads) rank as the same rows attached 4,000 at a time."""
    records = [index_record(f'g__tool_{i}', 'g', f'tool number {i}', None) for i in range(n)]
    keys = [r[0] for r in records]
    vector_rows = rows(n, 16)
    joined, by_rows = _core.SearchIndex(), _core.SearchIndex()
    joined.upsert(records)
    by_rows.upsert(records)
    for start in range(0, n, 4_000):  # below the bulk threshold: quantized by one thread
        joined.set_vectors(keys[start : start + 4_000], b''.join(vector_rows[start : start + 4_000]), 16)
    by_rows.set_vector_rows([*keys, 'g__unknown'], [*vector_rows, vector_rows[0]], 16)
    assert by_rows.vector_count() == joined.vector_count() == n
    for query, vector in [('tool number 3', vector_rows[3]), ('', vector_rows[1]), ('nothing', vector_rows[n - 1])]:
        assert by_rows.search_hybrid(query, vector, None, 0, 20, 0.5) == joined.search_hybrid(
            query, vector, None, 0, 20, 0.5
        )
        for key in keys[:3]:
            assert by_rows.explain_hybrid(query, vector, None, key, 0.5) == joined.explain_hybrid(
                query, vector, None, key, 0.5
            )


def test_set_vector_rows_refuses_what_set_vectors_refuses() -> None:
    index = _core.SearchIndex()
    index.upsert([index_record('g__a', 'g', '', None), index_record('g__b', 'g', '', None)])
    good = array('f', [1.0, 0.0]).tobytes()
    for keys, bad_rows, dimensions in [
        (['g__a', 'g__b'], [good], 2),  # one row for two keys
        (['g__a', 'g__b'], [good, good[:4]], 2),  # a short row
        (['g__a', 'g__b'], [good, array('f', [math.nan, 0.0]).tobytes()], 2),
        (['g__a'], [array('f', [math.inf]).tobytes()], 1),
        (['g__a'], [good], 0),
    ]:
        with pytest.raises(ValueError):
            index.set_vector_rows(keys, bad_rows, dimensions)
        assert index.vector_count() == 0  # nothing stored
    index.set_vector_rows(['g__a'], [bytearray(good)], 2)
    assert index.vector_dimensions() == 2
    with pytest.raises(ValueError, match='dimensions'):
        index.set_vector_rows(['g__b'], [bytes(12)], 3)
    with pytest.raises(TypeError):
        index.set_vector_rows(['g__b'], ['not bytes'], 2)  # type: ignore[list-item]


def test_nonfinite_rows_and_usable_vectors_drop_nan_and_infinity() -> None:
    finite = array('f', [3e38, -3e38, 1e-45, -0.0]).tobytes()
    nan, inf = struct.pack('<4f', 0, 0, math.nan, 0), struct.pack('<4f', -math.inf, 0, 0, 0)
    assert _core.nonfinite_rows([finite, nan, finite, inf, b'\xff\xff']) == [1, 3]
    found = {b'a': finite, b'b': nan, b'c': inf, b'd': finite}
    assert usable_vectors(found, list(found), None) == ({b'a': finite, b'd': finite}, 2)
    assert usable_vectors(found, list(found), 4) == ({b'a': finite, b'd': finite}, 2)
    assert usable_vectors(found, list(found), 3) == ({}, 4)  # another dimensionality: all dropped
    assert usable_vectors(found, [b'a'], None) == ({b'a': finite}, 3)  # hashes not asked for


def collection(n: int, twins: bool) -> dict[str, FunctionToolset[Any]]:
    """`n` tools in two groups, and two more: `twin_a` and (with `twins`) `twin-a`, which embeds as the same text
    ('twin a: ...'; `follow` then takes its per-record path, else its bulk path), or `twin_b`."""
    sets: dict[str, FunctionToolset[Any]] = {'ops': FunctionToolset(), 'docs': FunctionToolset()}
    for i in range(n):
        sets['ops' if i % 2 else 'docs'].add_function(lambda x='': x, name=f'task_{i}', description=f'Runs task {i}.')
    sets['ops'].add_function(lambda x='': x, name='twin_a', description='A forecast twin.')
    sets['ops'].add_function(lambda x='': x, name='twin-a' if twins else 'twin_b', description='A forecast twin.')
    return sets


@pytest.mark.parametrize('twins', [False, True])
async def test_a_restart_attaches_every_cached_vector_without_embedding(tmp_path: Path, twins: bool) -> None:
    n = 9_000  # past the core's bulk threshold
    cache = tmp_path / 'vectors.sqlite3'
    searches = [{'query': 'umbrella twin'}, {'query': 'task 17'}]

    async def run(model: BagOfWordsModel) -> tuple[list[dict[str, Any]], ToolProxyCapability[Any]]:
        sets = collection(n, twins)
        capability = ToolProxyCapability(
            groups={g: ToolProxyGroup(source=s, description=f'{g} tools') for g, s in sets.items()},
            config=ToolProxyConfig(embedder=model, embedding_cache=cache, embedding_wait=60.0),
        )
        script = Script([[(SEARCH, s)] for s in searches])
        result = await Agent(script.model, capabilities=[capability]).run('go')
        return [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH], capability

    first_model = BagOfWordsModel(dimensions=64, synonyms={'umbrella': 'forecast'})
    first, _ = await run(first_model)
    texts = n + 1 if twins else n + 2  # twins share one text
    assert len(first_model.documents()) == texts
    with SQLiteEmbeddingStore(cache) as store:
        assert store.count() == texts
    no_embedding = BagOfWordsModel(dimensions=64, synonyms={'umbrella': 'forecast'}, fail=AssertionError('embedded'))
    again, capability = await run(no_embedding)  # a restart: every tool text is in the cache
    assert again == first
    assert no_embedding.documents() == []
    assert sorted(e['tool'] for e in again[0]['tools'][:2]) == (['twin-a', 'twin_a'] if twins else ['twin_a', 'twin_b'])
    vectors = capability.tool_vectors
    assert vectors is not None and vectors.embedded == 0 and vectors.pending == 0
    [state] = vectors._states.values()
    assert len(state.attached) == len(state.wanted) == n + 2
    assert state.index.vector_count() == n + 2
