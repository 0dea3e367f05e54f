"""A `ToolProxyPlan` carries hybrid search: its config's embedder ranks the surface of a real a13n-harness agent."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from a13n_harness import AgentSpec, HarnessBuilder
from harness_support import SEARCH, StreamScript, page_of, returns
from pydantic_ai.capabilities import Toolset
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyConfig, ToolProxyPlan, ToolProxySelection
from pydantic_ai_toolproxy.harness import build

_spec = importlib.util.spec_from_file_location(
    'embedding_fixtures', Path(__file__).resolve().parent.parent / 'tests' / 'embedding_fixtures.py'
)
assert _spec is not None and _spec.loader is not None
embedding_fixtures: Any = importlib.util.module_from_spec(_spec)
sys.modules['embedding_fixtures'] = embedding_fixtures  # dataclasses look their module up while building
_spec.loader.exec_module(embedding_fixtures)


def get_forecast(city: str) -> str:
    """Forecast for a city."""
    return 'rain'


def open_file(path: str) -> str:
    """Open a file and return its text."""
    return ''


async def test_a_plan_with_an_embedder_searches_by_meaning() -> None:
    weather, files = Toolset(FunctionToolset([get_forecast])), Toolset(FunctionToolset([open_file]))
    model = embedding_fixtures.BagOfWordsModel(synonyms={'umbrella': 'forecast'})
    plan = ToolProxyPlan(
        groups={
            'weather': ToolProxySelection(description='Weather data', capabilities=(weather,)),
            'files': ToolProxySelection(description='Local files', capabilities=(files,)),
        },
        config=ToolProxyConfig(embedder=model, embedding_cache=None),
    )
    script = StreamScript([[(SEARCH, {'query': 'should I bring an umbrella'})], 'done'])
    agent = build(
        HarnessBuilder(),
        AgentSpec(),
        output_type=str,
        model=script.model,
        capabilities=(weather, files),
        tool_proxy=plan,
    )
    result = await agent.run('x')
    page = page_of(returns(result.all_messages(), SEARCH)[0])
    assert next((e['group'], e['tool']) for e in page['tools']) == ('weather', 'get_forecast')
    assert any(kind == 'query' for kind, _ in model.calls)
