"""Issue 28, item 1: a keyword match on function words alone is no keyword evidence in hybrid search.

The docs' hybrid example ("should I bring an umbrella" finds `weather/get_forecast` by meaning) beside six ordinary
tools whose descriptions say "an": the query's only keyword match is the function word `an`, which used to give
those six the full keyword share (0.65 at the default weight), above any semantic share (at most 0.35), so the
tool nearest by meaning fell off the default page. Driven through a real `Agent` run with a deterministic
bag-of-words embedding model; the property test checks the core's ranking on generated collections.
"""

from __future__ import annotations

from array import array
from typing import Any

from embedding_fixtures import BagOfWordsModel
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset
from support import SEARCH, Script, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup, _core
from pydantic_ai_toolproxy.grouping.directory import index_record

SYNONYMS = {'umbrella': 'weather', 'rain': 'weather', 'forecast': 'weather'}
"""The docs' example model's synonyms (docs/hybrid-search.md)."""
QUERY = 'should I bring an umbrella'

AN_TOOLS = {
    'send_email': 'Send an email to a recipient.',
    'create_event': 'Create an event in the calendar.',
    'open_archive': 'Open an archive and list its entries.',
    'issue_invoice': 'Issue an invoice to a customer.',
    'add_user': 'Add an account for a new user.',
    'file_ticket': 'File an issue in the tracker.',
}


def docs_example_with_an_tools() -> ToolProxyCapability[Any]:
    weather: FunctionToolset[Any] = FunctionToolset()
    weather.add_function(lambda city='': 'rain', name='get_forecast', description='Forecast for a city.')
    notes: FunctionToolset[Any] = FunctionToolset()
    notes.add_function(lambda text='': 1, name='add_note', description='Add a note and return its id.')
    office: FunctionToolset[Any] = FunctionToolset()
    for name, description in AN_TOOLS.items():
        office.add_function(lambda x='': x, name=name, description=description)
    groups = {
        'weather': ToolProxyGroup(source=weather, description='Weather data'),
        'notes': ToolProxyGroup(source=notes, description='Personal notes'),
        'office': ToolProxyGroup(source=office, description='Office work'),
    }
    config = ToolProxyConfig(embedder=BagOfWordsModel(dimensions=128, synonyms=SYNONYMS), embedding_cache=None)
    return ToolProxyCapability(groups=groups, config=config)


async def test_a_match_on_an_does_not_bury_the_tool_nearest_by_meaning() -> None:
    capability = docs_example_with_an_tools()
    script = Script([[(SEARCH, {'query': QUERY})], [(SEARCH, {'query': QUERY, 'group': 'office'})]])
    result = await Agent(script.model, capabilities=[capability]).run('Should I bring an umbrella?')
    first, office = [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]
    found = [f'{t["group"]}/{t["tool"]}' for t in first['tools']]
    assert found[0] == 'weather/get_forecast', found
    # The six `an` tools are still ranked (they match a word), after the nearest one.
    assert first['total'] >= 7
    # Without a closer tool in the selection, the `an` matches are what there is.
    assert {t['tool'] for t in office['tools']} <= set(AN_TOOLS) and len(office['tools']) == 5


async def test_explain_shows_no_keyword_share_for_a_function_word_match() -> None:
    capability = docs_example_with_an_tools()
    script = Script([[(SEARCH, {'query': QUERY})]])
    await Agent(script.model, capabilities=[capability]).run('go')
    an, forecast = capability.explain(QUERY, [('office', 'send_email'), ('weather', 'get_forecast')])
    assert an.score > 0  # the keyword score: `an` matched
    assert an.keyword_share == 0.0
    assert forecast.fused is not None and an.fused is not None and forecast.fused > an.fused


FUNCTION_WORDS = ['an', 'the', 'of', 'to', 'for', 'with', 'and']
CONTENT = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel']
UNKNOWN = ['umbrella', 'tomorrow', 'bring']  # no tool holds these


@st.composite
def collections(draw: st.DrawFn) -> tuple[list[tuple[str, str]], list[list[float]], str, list[float], float]:
    count = draw(st.integers(2, 14))
    tools = []
    for at in range(count):
        words = draw(st.lists(st.sampled_from(CONTENT), min_size=1, max_size=4))
        if draw(st.booleans()):
            words += draw(st.lists(st.sampled_from(FUNCTION_WORDS), min_size=1, max_size=3))
        tools.append((f'{CONTENT[at % len(CONTENT)]}_{at}', ' '.join(draw(st.permutations(words)))))
    coordinate = st.integers(-3, 3).map(float)
    vectors = [draw(st.lists(coordinate, min_size=4, max_size=4)) for _ in tools]
    query = draw(st.lists(st.sampled_from(FUNCTION_WORDS + UNKNOWN), min_size=1, max_size=5))
    vector = draw(st.lists(coordinate, min_size=4, max_size=4).filter(any))
    weight = draw(st.sampled_from([0.1, 0.35, 0.5, 0.9]))
    return tools, vectors, ' '.join(query), vector, weight


@settings(max_examples=200, deadline=None)
@given(collections())
def test_a_function_word_match_never_outranks_a_closer_tool_without_keywords(
    case: tuple[list[tuple[str, str]], list[list[float]], str, list[float], float],
) -> None:
    """A tool matching only function words of the query never ranks above a ranked tool of higher cosine that the
    keywords do not match."""
    tools, vectors, query, vector, weight = case
    index = _core.SearchIndex()
    index.upsert([index_record(f'g__{name}', 'g', text, None) for name, text in tools])
    keys = [f'g__{name}' for name, _ in tools]
    index.set_vectors(keys, array('f', [x for v in vectors for x in v]).tobytes(), 4)
    query_vector = array('f', vector).tobytes()
    total, ranked = index.search_hybrid(query, query_vector, None, 0, 100, weight)
    assert len(ranked) == total
    explained = {key: index.explain_hybrid(query, query_vector, None, key, weight) for key in ranked}
    for at, key in enumerate(ranked):
        exact, keyword_score, _, cosine, *_ = explained[key]  # type: ignore[misc]
        if exact or keyword_score <= 0:
            continue  # not a keyword match: nothing to check
        for later in ranked[at + 1 :]:
            _, other_keywords, _, other_cosine, *_ = explained[later]  # type: ignore[misc]
            assert not (
                other_keywords == 0 and other_cosine is not None and cosine is not None and other_cosine > cosine
            ), f'{key} (cosine {cosine}, only function words) above {later} (cosine {other_cosine}, no keyword)'
