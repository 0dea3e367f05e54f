"""Hostile checks of the vector prefilter and the fusion in `_core.SearchIndex` above `PREFILTER_POOL` (3,072)
vectors: `explain_hybrid` against `search_hybrid`, pages and `total`, group filters, drops/compaction, insertion
order, the portable and AVX2 code paths against the widest ones (subprocesses with `TOOLPROXY_PORTABLE_SIMD=1` and
`=avx2`), threads, odd
dimensionalities and magnitudes, and the keyword scores the hybrid computes against `explain`'s.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import subprocess
import sys
from array import array
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, Script, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup, _core

POOL = 3072
WORDS = ['read', 'load', 'file', 'files', 'delete', 'remove', 'weather', 'forecast', 'the', 'a', '2048', 'mail']


def vectors(rows: Sequence[Sequence[float]]) -> bytes:
    """Rows as little-endian float32 bytes."""
    out = array('f')
    for row in rows:
        out.extend(row)
    return out.tobytes()


def ranking(index: _core.SearchIndex, query: str, vector: bytes, groups: list[str] | None, weight: float) -> list[str]:
    """The whole hybrid ranking of one query."""
    total, _ = index.search_hybrid(query, vector, groups, 0, 0, weight)
    return index.search_hybrid(query, vector, groups, 0, total, weight)[1]


def spiked_index(fillers: int) -> tuple[_core.SearchIndex, bytes]:
    """`fillers` tools whose vectors share the query's signs but point away from it, and one tool (`spike__a`)
    nearly equal to the query whose small components have the other sign: its sign plane is farther from the
    query's than every filler's, so the prefilter's pool (the `POOL` closest sign planes) leaves it out."""
    rng = random.Random(7)
    d = 64
    index = _core.SearchIndex()
    records = [(f'g{i % 5}__t{i:05d}', f'g{i % 5}', f't{i:05d}', 'filler words', None) for i in range(fillers)]
    records.append(('spike__a', 'spike', 'a', 'nothing', None))
    index.upsert(records)
    rows = [[0.01 * (1 + rng.random()) for _ in range(d)] for _ in range(fillers)]
    rows.append([1.0] + [-0.01] * (d - 1))
    index.set_vectors([r[0] for r in records], vectors(rows), d)
    return index, vectors([[1.0] + [0.01] * (d - 1)])


def test_explain_hybrid_gives_no_semantic_share_to_a_tool_the_ranking_left_out() -> None:
    index, query = spiked_index(POOL + 500)
    ranked = ranking(index, 'zzz', query, None, 1.0)
    explained = index.explain_hybrid('zzz', query, None, 'spike__a', 1.0)
    assert explained is not None
    cosine, semantic_share, fused = explained[3], explained[4], explained[6]
    assert cosine is not None and cosine > 0.98
    # Either the ranking holds the tool, or explain says it got nothing from its vector.
    assert 'spike__a' in ranked or (semantic_share == 0.0 and fused == 0.0), (ranked[:3], explained)
    # Below the pool every vector is reranked exactly: the tool is found and explained as ranked.
    small, query = spiked_index(POOL - 1)
    assert ranking(small, 'zzz', query, None, 1.0)[0] == 'spike__a'
    found = small.explain_hybrid('zzz', query, None, 'spike__a', 1.0)
    assert found is not None and found[4] == 1.0


def test_a_vector_of_tiny_values_has_the_direction_of_its_scaled_copy() -> None:
    tiny = 1.401298464324817e-45  # the smallest float32
    index = _core.SearchIndex()
    index.upsert([('g__a', 'g', 'a', 'x', None), ('g__b', 'g', 'b', 'x', None), ('g__c', 'g', 'c', 'x', None)])
    rows = [[tiny, 2 * tiny, 3 * tiny], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]
    index.set_vectors(['g__a', 'g__b', 'g__c'], vectors(rows), 3)
    for query in ([1.0, 2.0, 3.0], [tiny, 2 * tiny, 3 * tiny], [3e-39, 6e-39, 9e-39]):
        explained = {key: index.explain_hybrid('x', vectors([query]), None, key, 0.5) for key in ('g__a', 'g__b')}
        cosines = {key: e[3] for key, e in explained.items() if e is not None}
        assert cosines['g__a'] == pytest.approx(cosines['g__b'], abs=1e-6), (query, cosines)
        assert cosines['g__a'] == pytest.approx(1.0, abs=1e-3), (query, cosines)


SCRIPT = r"""
import hashlib, random, sys
from array import array
from pydantic_ai_toolproxy import _core
out = []
for d in (1, 7, 65, 385):
    rng = random.Random(d)
    n = 3072 + 400
    index = _core.SearchIndex()
    words = ("read", "file", "weather", "mail", "delete", "the")
    records = [(f"g{i % 7}__t{i:05d}", f"g{i % 7}", f"t{i:05d}", " ".join(rng.choice(words) for _ in range(3)), None)
               for i in range(n)]
    index.upsert(records)
    rows = array("f", [rng.gauss(0, 1) for _ in range(n * d)])
    for i in range(0, n, 97):
        rows[i * d] = 1e30
    index.set_vectors([r[0] for r in records], rows.tobytes(), d)
    for _ in range(2):
        query = array("f", [rng.gauss(0, 1) for _ in range(d)]).tobytes()
        for text in ("zzz", "read file", "the 2"):
            for groups in (None, ["g1"], ["g0", "g1", "g2", "g3", "g4", "g5"]):
                total, keys = index.search_hybrid(text, query, groups, 0, 120, 0.4)
                shares = [index.explain_hybrid(text, query, groups, k, 0.4) for k in keys[:20]]
                out.append(f"{d} {text} {groups} {total} {' '.join(keys)} {shares!r}")
sys.stdout.write(hashlib.sha256("\n".join(out).encode()).hexdigest() + " " + str(len(out)))
"""


def test_the_portable_code_paths_rank_byte_identically_to_the_simd_ones() -> None:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)}
    env.pop('TOOLPROXY_PORTABLE_SIMD', None)
    runs = [
        subprocess.run([sys.executable, '-c', SCRIPT], env=extra, capture_output=True, check=True, timeout=120).stdout
        for extra in (env, {**env, 'TOOLPROXY_PORTABLE_SIMD': '1'}, {**env, 'TOOLPROXY_PORTABLE_SIMD': 'avx2'})
    ]
    assert runs[0] == runs[1] == runs[2]
    assert runs[0].endswith(b' 72')


def catalogue(count: int, seed: int) -> tuple[list[tuple[str, str, str, str, None]], list[list[float]]]:
    """`count` records in 9 groups with words from `WORDS` and 48-dimensional vectors (some zero, some with one
    huge component)."""
    rng = random.Random(seed)
    records = [
        (f'g{i % 9}__t{i:05d}', f'g{i % 9}', f't{i:05d}', ' '.join(rng.choice(WORDS) for _ in range(3)), None)
        for i in range(count)
    ]
    rows = [[rng.gauss(0, 1) for _ in range(48)] for _ in range(count)]
    for i in range(0, count, 61):
        rows[i] = [0.0] * 48
    for i in range(5, count, 83):
        rows[i][i % 48] = 3e38
    return records, rows


def build(
    records: Sequence[tuple[str, str, str, str, None]], rows: Sequence[list[float]], order: Sequence[int]
) -> _core.SearchIndex:
    index = _core.SearchIndex()
    index.upsert([records[i] for i in order])
    for start in range(0, len(order), 700):
        batch = order[start : start + 700]
        index.set_vectors([records[i][0] for i in batch], vectors([rows[i] for i in batch]), 48)
    return index


BIG = POOL + 600
Record = tuple[str, str, str, str, None]
Big = tuple[_core.SearchIndex, list[Record], list[list[float]]]
QUERIES = ['zzz', 'read file', 'the 2048', 'remove mail', 'a the']
GROUPS: list[list[str] | None] = [None, [], ['g3'], ['g1', 'g2'], [f'g{i}' for i in range(8)]]


@pytest.fixture(scope='module')
def big() -> Big:
    records, rows = catalogue(BIG, 11)
    return build(records, rows, range(BIG)), records, rows


def query_vectors(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    return [vectors([[rng.gauss(0, 1) for _ in range(48)]]) for _ in range(count)]


def test_pages_total_and_explain_agree_above_the_pool(big: Big) -> None:
    index = big[0]
    for vector in query_vectors(1, 2):
        for query in QUERIES:
            for groups in GROUPS:
                total, first = index.search_hybrid(query, vector, groups, 0, 150, 0.4)
                pages: list[str] = []
                for offset in range(0, 150, 41):
                    page_total, page = index.search_hybrid(query, vector, groups, offset, 41, 0.4)
                    assert page_total == total
                    pages += page
                assert pages[: len(first)] == first[: len(pages)]
                assert len(set(first)) == len(first) == min(150, total)
                explained = [index.explain_hybrid(query, vector, groups, key, 0.4) for key in first[:60]]
                order = [(not e[0], -e[6]) for e in explained if e is not None]
                assert order == sorted(order), (query, groups)
                keyword, matched = index.search(query, groups, 0, 10_000)
                for key, e in zip(first, explained, strict=False):
                    plain = index.explain(query, groups, key)
                    assert e is not None and plain is not None
                    assert e[1] == (plain[1] if key in matched else 0.0), (query, groups, key)
                semantic = sum(1 for e in explained if e is not None and e[4] > 0 and e[1] == 0 and not e[0])
                assert keyword <= total <= keyword + 49 and semantic <= total - keyword


def test_another_insertion_order_ranks_the_same(big: Big) -> None:
    index, records, rows = big
    order = list(range(BIG))
    random.Random(3).shuffle(order)
    shuffled = build(records, rows, order)
    for vector in query_vectors(2, 2):
        for query in QUERIES[:3]:
            for groups in GROUPS:
                assert shuffled.search_hybrid(query, vector, groups, 0, 80, 0.5) == index.search_hybrid(
                    query, vector, groups, 0, 80, 0.5
                )


def test_drops_readds_and_compaction_rank_as_a_fresh_index() -> None:
    records, rows = catalogue(BIG + 1500, 12)
    index = build(records, rows, range(len(records)))
    # Remove a third (compaction), drop and re-add vectors, move some records to other groups.
    gone = set(range(0, len(records), 3))
    index.remove([records[i][0] for i in gone])
    kept = [i for i in range(len(records)) if i not in gone]
    index.drop_vectors([records[i][0] for i in kept[::5]])
    index.set_vectors([records[i][0] for i in kept[::5]], vectors([rows[i] for i in kept[::5]]), 48)
    index.clear_vectors()
    index.set_vectors([records[i][0] for i in kept[:10]], vectors([r[:7] for r in (rows[i] for i in kept[:10])]), 7)
    index.clear_vectors()
    index.set_vectors([records[i][0] for i in kept], vectors([rows[i] for i in kept]), 48)
    assert index.vector_count() == len(kept) > POOL
    fresh = build(records, rows, kept)
    for vector in query_vectors(4, 2):
        for query in QUERIES:
            for groups in GROUPS[:4]:
                assert index.search_hybrid(query, vector, groups, 0, 60, 0.4) == fresh.search_hybrid(
                    query, vector, groups, 0, 60, 0.4
                ), (query, groups)


def test_many_threads_search_one_index_at_once(big: Big) -> None:
    index = big[0]
    asks = [(q, v, g) for v in query_vectors(5, 3) for q in QUERIES[:3] for g in GROUPS[:4]]
    expected = [index.search_hybrid(q, v, g, 0, 40, 0.4) for q, v, g in asks]
    # A thread's distance buffer is sized by the index it last searched: alternate with a smaller one.
    small = build(*catalogue(POOL + 10, 13), range(POOL + 10))

    def ask(at: int) -> tuple[int, list[str]]:
        if at % 5 == 0:
            small.search_hybrid('read', asks[0][1], None, 0, 5, 0.4)
        q, v, g = asks[at % len(asks)]
        return index.search_hybrid(q, v, g, 0, 40, 0.4)

    with ThreadPoolExecutor(12) as pool:
        for at, answer in enumerate(pool.map(ask, range(6 * len(asks)))):
            assert answer == expected[at % len(asks)]


@st.composite
def small_cases(draw: st.DrawFn) -> tuple[_core.SearchIndex, str, bytes, list[str] | None]:
    count = draw(st.integers(2, 40))
    words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(' '.join)
    records = [(f'g{draw(st.integers(0, 3))}', f't{i}', draw(words)) for i in range(count)]
    index = _core.SearchIndex()
    index.upsert([(f'{g}__{t}', g, t, text, None) for g, t, text in records])
    keys = [f'{g}__{t}' for g, t, _ in records]
    with_vector = [k for k in keys if draw(st.booleans()) or k == keys[0]]
    rng = random.Random(draw(st.integers(0, 1000)))
    index.set_vectors(with_vector, vectors([[rng.gauss(0, 1) for _ in range(5)] for _ in with_vector]), 5)
    index.remove([k for k in keys[1:] if draw(st.integers(0, 4)) == 0])
    query = ' '.join(draw(st.lists(st.sampled_from([*WORDS, 'zzz', 't1', '7']), min_size=1, max_size=3)))
    groups = draw(st.none() | st.lists(st.sampled_from(['g0', 'g1', 'g2', 'g3', 'nope']), max_size=3))
    return index, query, vectors([[rng.gauss(0, 1) for _ in range(5)]]), groups


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases(), st.sampled_from([0.0, 0.35, 1.0]))
def test_the_hybrid_keyword_scores_are_explains_scores(
    case: tuple[_core.SearchIndex, str, bytes, list[str] | None], weight: float
) -> None:
    index, query, vector, groups = case
    keyword_total, keyword = index.search(query, groups, 0, 100)
    if weight == 0.0:
        assert index.search_hybrid(query, vector, groups, 0, 100, weight) == (keyword_total, keyword)
    total, ranked = index.search_hybrid(query, vector, groups, 0, 100, weight)
    assert total == len(ranked) and set(keyword) <= set(ranked)
    order = []
    for key in ranked:
        hybrid = index.explain_hybrid(query, vector, groups, key, weight)
        plain = index.explain(query, groups, key)
        assert hybrid is not None and plain is not None
        score = plain[1] if key in keyword else 0.0
        # The hybrid's keyword score is the ranking's (gains summed in the query plan's order); `explain` sums the
        # same gains in query order: equal up to the last bits of an f32 (seen: 5.8290534 against 5.8290529).
        assert hybrid[0] == (plain[0] and key in keyword), (key, hybrid, plain)
        assert math.isclose(hybrid[1], score, rel_tol=4e-7, abs_tol=1e-9), (key, hybrid, plain)
        order.append((not hybrid[0], -hybrid[6], -hybrid[1]))
    assert order == sorted(order)


def big_catalogue(count: int) -> dict[str, FunctionToolset[Any]]:
    """`count` tools in three groups, each described by three words of `WORDS` (many share a description)."""
    rng = random.Random(21)
    sources: dict[str, FunctionToolset[Any]] = {g: FunctionToolset() for g in ('alpha', 'beta', 'gamma')}
    for i in range(count):
        text = ' '.join(rng.choice(WORDS) for _ in range(3))
        sources[('alpha', 'beta', 'gamma')[i % 3]].add_function(lambda x='': x, name=f'tool_{i:05d}', description=text)
    return sources


def test_an_agent_pages_one_hybrid_ranking_above_the_pool() -> None:
    """A real run over more tools than the prefilter's pool: every page of a query (and of a group) has the same
    `total`, the pages walked with `next_offset` visit each ranked tool once, in the order of one big page."""
    sources = big_catalogue(POOL + 300)
    capability: ToolProxyCapability[Any] = ToolProxyCapability(
        groups={g: ToolProxyGroup(source=s, description=f'{g} tools') for g, s in sources.items()},
        config=ToolProxyConfig(embedder=BagOfWordsModel(dimensions=24), embedding_cache=None, embedding_wait=60.0),
    )
    searches: list[dict[str, Any]] = []
    for base in ({'query': 'forecast remove the'}, {'query': 'zzz mail', 'group': 'beta'}):
        searches += [base | {'limit': 10, 'offset': offset} for offset in range(0, 60, 10)]
        searches += [base | {'limit': 7, 'offset': offset} for offset in range(0, 63, 7)]
    script = Script([[(SEARCH, s)] for s in searches])
    result = asyncio.run(Agent(script.model, capabilities=[capability]).run('go'))
    got = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert len(got) == len(searches) == 30

    def keys(pages: list[dict[str, Any]]) -> list[str]:
        return [f'{e["group"]}.{e["tool"]}' for page in pages for e in page['tools']]

    for query in (got[:15], got[15:]):
        totals = {page['total'] for page in query}
        assert len(totals) == 1 and totals.pop() > 20, [page.get('total') for page in query]
        by_ten, by_seven = keys(query[:6]), keys(query[6:])
        assert len(by_seven) == len(set(by_seven))
        assert by_ten[: len(by_seven)] == by_seven[: len(by_ten)]
    assert {e.split('.')[0] for e in keys(got[15:])} == {'beta'}
