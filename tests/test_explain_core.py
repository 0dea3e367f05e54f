"""Explanations are the ranking, through the binding: an explained score is the ranked score bit for bit (on random
corpora and queries), the core reports the queries it browses (`???` as `''`: no Python rule decides it), and the
core counts the exact names that lead a window.

The Rust side is tested in `src/index/tests/explain.rs`; here what Python callers see: `SearchIndex.explain`,
`SearchIndex.rank`, the search control's `Ranking` and the `ToolSearch` strategy.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import SEARCH, Script, page_of, returns

from pydantic_ai_toolproxy import _core, search_strategy
from pydantic_ai_toolproxy.controls import search as _search
from pydantic_ai_toolproxy.controls.search import Ranking

WORDS = [
    'get', 'list', 'lists', 'listing', 'data', 'user', 'users', 'file', 'files', 'search', 'weather', 'city',
    'report', 'reports', 'create', 'update', 'delete', 'the', 'for', 'of', 'a', 'to', 'with', '2048', 'price',
    'prices', 'email', 'message', 'system', 'filesystem', 'open', 'read',
]  # fmt: skip
"""Stem variants, function words, a number, a compound: every path of a token's gain."""

GROUPS = ['g0', 'g1', 'g2', 'g3']


def bits(value: float) -> bytes:
    """The f32 the core computed (a Python float widened from it), as bytes."""
    return struct.pack('<f', value)


tool_texts = st.tuples(
    st.sampled_from(GROUPS),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=10),
    st.sampled_from(WORDS),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tools=st.lists(tool_texts, min_size=3, max_size=80),
    descriptions=st.lists(st.lists(st.sampled_from(WORDS), max_size=5), min_size=4, max_size=4),
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=1, max_size=5),
    select=st.booleans(),
)
def test_explained_scores_are_the_ranked_scores_bit_for_bit(
    tools: list[tuple[str, list[str], list[str], str]],
    descriptions: list[list[str]],
    queries: list[list[str]],
    select: bool,
) -> None:
    """Each ranked key's `explain` score is the score it was ranked by, bit for bit: the keyword score
    `explain_hybrid` reports (the ranking's own look-up of a document's score, which the hybrid ranking fuses), and
    the explained scores never rise down a ranking after its exact names."""
    index = _core.SearchIndex()
    records = []
    for i, (group, name, description, param) in enumerate(tools):
        tool = f'{"_".join(name)}_{i}' if i % 9 else name[0]  # some tools named by one word: exact names
        records.append((f'{group}__{tool}', group, tool, ' '.join(description), {'properties': {param: {}}}))
    index.upsert(records)
    index.remove([key for key, *_ in records[::7]])
    for group, words in zip(GROUPS, descriptions, strict=True):
        index.set_group_description(group, ' '.join(words))
    groups = ['g1', 'g3'] if select else None
    for words in queries:
        query = ' '.join(words)
        _, keys = index.search(query, groups, 0, 50)
        previous: tuple[bool, float] | None = None
        for key in keys:
            explained = index.explain(query, groups, key)
            ranked = index.explain_hybrid(query, None, groups, key, 0.5)
            assert explained is not None and ranked is not None
            exact, score, _, _ = explained
            assert bits(score) == bits(ranked[1]), (query, key, score, ranked[1])
            assert exact == ranked[0]
            if previous is not None:
                assert previous[0] > exact or (previous[0] == exact and previous[1] >= score), (query, key)
            previous = (exact, score)


@pytest.mark.parametrize('query', ['', '   ', '???', '?!', '...', '—'])
def test_a_query_with_nothing_to_look_for_is_browsed_and_reported_so(query: str) -> None:
    index = _core.SearchIndex()
    index.upsert([('g__read_file', 'g', 'read_file', 'Read a file.', {}), ('g__-', 'g', '-', 'A dash.', {})])
    total, keys, exact, browsed = index.rank(query, None, None, 0, 10, 0.0)
    assert browsed and exact == 0 and (total, keys) == (2, ['g__-', 'g__read_file'])
    assert _core.nothing_to_find(query)
    # A punctuation-only name is an exact name, not a browse; a word that matches nothing is no browse either.
    assert index.rank(' - ', None, None, 0, 10, 0.0)[2:] == (1, False)
    assert index.rank('zzz', None, None, 0, 10, 0.0) == (0, [], 0, False)


def test_the_core_counts_the_leading_exact_names() -> None:
    index = _core.SearchIndex()
    index.upsert(
        [
            ('fs__read_file', 'fs', 'read_file', 'Read a file.', {}),
            ('web__read_file', 'web', 'read_file', 'Read a web page as a file.', {}),
            ('fs__file_info', 'fs', 'file_info', 'Read the size of a file.', {}),
        ]
    )
    assert index.rank('READ_FILE', None, None, 0, 10, 0.0)[2] == 2  # both groups' read_file
    _, keys, exact, _ = index.rank('fs__read_file', None, None, 0, 10, 0.0)
    assert (keys[0], exact) == ('fs__read_file', 1)  # the canonical name names one tool
    assert index.rank('read_file', None, None, 1, 10, 0.0)[2] == 1  # the window starts at the second
    assert index.rank('read_file', None, ['web'], 0, 10, 0.0)[2] == 1
    assert index.rank('read file', None, None, 0, 10, 0.0)[2] == 0


async def test_the_search_control_reports_what_the_core_browsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """With an embedder, `???` is reported as a browse (it was reported hybrid while the core browsed) and never
    embedded."""
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset

    from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

    seen: list[Ranking] = []
    original = _search.search_page

    async def recording(*args: Any) -> Any:
        page, ranking, page_bytes = await original(*args)
        seen.append(ranking)
        return page, ranking, page_bytes

    monkeypatch.setattr(_search, 'search_page', recording)
    files: FunctionToolset[Any] = FunctionToolset()
    files.add_function(lambda path='': path, name='open_file', description='Open a file and return its text.')
    files.add_function(lambda path='': path, name='write_file', description='Write text to a file.')
    model = BagOfWordsModel(dimensions=64)
    capability = ToolProxyCapability(
        groups={'files': ToolProxyGroup(source=files, description='Local files')},
        config=ToolProxyConfig(embedder=model, embedding_cache=None),
    )
    searches = [{'query': 'open a file'}, {'query': '???'}, {'query': ''}]
    result = await Agent(Script([[(SEARCH, s)] for s in searches]).model, capabilities=[capability]).run('go')
    got = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    assert [r.kind for r in seen] == ['hybrid', 'keyword', 'keyword']
    assert [r.reason for r in seen] == [None, 'browse', 'browse']
    assert got[1]['tools'] == got[2]['tools'] and got[1]['total'] == 2  # the browse page, in name order
    assert [texts for kind, texts in model.calls if kind == 'query'] == [['open a file']]


def test_the_strategy_answers_a_browse_with_no_names() -> None:
    from pydantic_ai.tools import ToolDefinition

    tools = [ToolDefinition(name=n, description=f'{n} tool') for n in ('read_file', 'write_file')]
    strategy = search_strategy()
    assert strategy(None, ['???', '—', '?!'], tools) == []  # type: ignore[arg-type]
    assert strategy(None, ['WRITE_FILE'], tools)[0] == 'write_file'  # type: ignore[arg-type]
    assert strategy.rankings == [('keyword', None)]
