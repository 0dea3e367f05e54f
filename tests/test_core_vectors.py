"""`_core.SearchIndex`'s tool vectors and hybrid ranking through the binding: buffers in, errors out.

The ranking itself is tested in Rust (`src/index/tests/hybrid.rs`: pages against the ranking by definition,
determinism, exact names, group filters); here the Python surface: bytes-like inputs, `ValueError` /
`TypeError` for bad ones (never a panic), `None` and weight 0 being the keyword search.
"""

from __future__ import annotations

import math
from array import array

import pytest

from pydantic_ai_toolproxy import _core

TOOLS = [
    ('meteo__forecast', 'meteo', 'forecast', 'Weather forecast for a city.', {}),
    ('meteo__umbrella', 'meteo', 'umbrella', 'Rain gear.', {}),
    ('fs__read_file', 'fs', 'read_file', 'Read a file.', {}),
    ('fs__write_file', 'fs', 'write_file', 'Write a file.', {}),
]
VECTORS = [[0.9, 0.1, 0.0], [1.0, 0.0, 0.1], [0.0, 1.0, 0.0], [0.1, 0.9, 0.2]]


def vectors(rows: list[list[float]]) -> bytes:
    return array('f', [x for row in rows for x in row]).tobytes()


@pytest.fixture
def index() -> _core.SearchIndex:
    index = _core.SearchIndex()
    index.upsert(TOOLS)
    index.set_vectors([key for key, *_ in TOOLS], vectors(VECTORS), 3)
    return index


def test_vectors_are_stored_and_rank(index: _core.SearchIndex) -> None:
    assert (index.vector_count(), index.vector_dimensions()) == (4, 3)
    rain = array('f', [1.0, 0.0, 0.05])
    total, keys = index.search_hybrid('rain tomorrow', rain, None, 0, 10, 0.4)
    assert (total, keys[0]) == (3, 'meteo__umbrella')
    assert index.search_hybrid('rain tomorrow', rain, ['fs'], 0, 10, 0.4)[1] == ['fs__write_file']
    explained = index.explain_hybrid('file', memoryview(rain), None, 'fs__write_file', 0.4)
    assert explained is not None
    exact, keyword_score, keyword_share, cosine, semantic_share, weight, fused = explained
    # `file` is the best match's only word, held by 2 of the 4 tools: more common than 10% of them, so partial
    # keyword evidence, idf(df=2) / idf(df=ceil(0.1 * 4) = 1) (Lucene's idf over 4 live records).
    evidence = math.log(1 + 2.5 / 2.5) / math.log(1 + 3.5 / 1.5)
    assert not exact and keyword_score > 0 and keyword_share == pytest.approx(0.6 * evidence)
    assert cosine is not None and 0 < cosine < 0.3 and semantic_share > 0
    assert weight == pytest.approx(0.4) and fused == pytest.approx(keyword_share + semantic_share)
    assert index.explain_hybrid('file', None, None, 'nope', 0.4) is None
    # A removed record loses its vector; one re-added has none until set again.
    index.remove(['meteo__umbrella'])
    index.upsert([TOOLS[1]])
    assert index.vector_keys_missing(['meteo__umbrella', 'fs__read_file', 'unknown']) == ['meteo__umbrella']
    index.drop_vectors(['fs__read_file', 'unknown'])
    assert index.vector_count() == 2
    index.clear_vectors()
    assert (index.vector_count(), index.vector_dimensions()) == (0, None)


@pytest.mark.parametrize('query', ['file', 'weather', '', 'read_file', 'zzz'])
def test_without_a_query_vector_or_weight_it_is_the_keyword_search(index: _core.SearchIndex, query: str) -> None:
    keyword = index.search(query, None, 0, 10)
    assert index.search_hybrid(query, None, None, 0, 10, 0.4) == keyword
    assert index.search_hybrid(query, vectors([[1.0, 0.0, 0.0]]), None, 0, 10, 0.0) == keyword


@pytest.mark.parametrize('query', ['file', 'forecast', 'FS__Read_File', 'umbrella rain', '', '!!', '???', 'zzz'])
@pytest.mark.parametrize('query_vector', [None, [1.0, 0.0, 0.05]])
@pytest.mark.parametrize(('offset', 'limit'), [(0, 10), (0, 1), (1, 2)])
def test_rank_is_the_search_and_counts_the_exact_names_as_explain_does(
    index: _core.SearchIndex, query: str, query_vector: list[float] | None, offset: int, limit: int
) -> None:
    vector = None if query_vector is None else vectors([query_vector])
    total, keys, exact, browsed = index.rank(query, vector, None, offset, limit, 0.4)
    expected = index.search(query, None, offset, limit) if vector is None else None
    assert (total, keys) == (expected or index.search_hybrid(query, vector, None, offset, limit, 0.4))
    named = 0
    for key in keys:
        explained = index.explain(query, None, key)
        if explained is None or not explained[0]:
            break
        named += 1
    assert exact == named
    assert browsed == (query in ('', '!!', '???'))  # nothing to look for: the core browsed, whatever the vector
    assert browsed == _core.nothing_to_find(query)
    assert index.rank(query, None, ['meteo'], 0, 10, 0.4)[:2] == index.search(query, ['meteo'], 0, 10)


@pytest.mark.parametrize(
    ('call', 'message'),
    [
        (lambda i: i.set_vectors(['fs__read_file'], vectors([[1.0, 2.0]]), 3), 'bytes'),
        (lambda i: i.set_vectors(['fs__read_file'], vectors([[1.0, 2.0]]), 2), 'dimensions'),
        (lambda i: i.set_vectors(['fs__read_file'], vectors([[1.0, float('nan'), 0.0]]), 3), 'non-finite'),
        (lambda i: i.set_vectors(['fs__read_file'], b'', 0), 'dimensions'),
        (lambda i: i.set_vectors(['fs__read_file'], b'', -3), 'between 1 and 16384, got -3$'),
        (lambda i: i.set_vectors(['fs__read_file'], b'\0' * 12, 2**70), f'between 1 and 16384, got {2**70}$'),
        (lambda i: i.set_vector_rows(['fs__read_file'], [b'\0' * 12], 2**64), f'got {2**64}$'),
        (lambda i: i.search_hybrid('file', vectors([[1.0, 0.0]]), None, 0, 10, 0.4), 'query vector'),
        (lambda i: i.search_hybrid('file', b'\0\0\0', None, 0, 10, 0.4), 'query vector'),
        (lambda i: i.search_hybrid('file', vectors([[1.0, float('inf'), 0.0]]), None, 0, 10, 0.4), 'non-finite'),
        (lambda i: i.search_hybrid('file', None, None, 0, 10, 1.5), 'weight'),
        (lambda i: i.search_hybrid('file', None, None, 0, 10, float('nan')), 'weight'),
        (lambda i: i.search_hybrid('file', None, None, -1, 10, 0.4), 'offset'),
        (lambda i: i.explain_hybrid('file', b'\0' * 8, None, 'fs__read_file', 0.4), 'query vector'),
    ],
)
def test_bad_inputs_raise_value_error(index: _core.SearchIndex, call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(index)  # type: ignore[operator]
    assert index.vector_count() == 4


def test_values_that_are_not_bytes_like_raise_type_error(index: _core.SearchIndex) -> None:
    with pytest.raises(TypeError):
        index.set_vectors(['fs__read_file'], [1.0, 2.0, 3.0], 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.search_hybrid('file', 12, None, 0, 10, 0.4)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.search_hybrid('file', None, None, 0, 10, 'half')  # type: ignore[arg-type]
