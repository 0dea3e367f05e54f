"""Property tests (hypothesis) of the Rust core through its Python binding and of search pages through real
Agent runs.

* Every `_core` entry point, given arbitrary text (lone surrogates included), arbitrary integers (beyond 64
  bits) and arbitrary nested objects, either returns or raises `ValueError`/`TypeError`: never crashes, never
  raises anything else.
* A core panic surfaces as `RuntimeError` (an `Exception`), and a search whose core call fails that way is a
  failed search with a next step, after which the next search works on a rebuilt index.
* Paging through the search control covers the ranking exactly once, in order, each page within
  `max_search_bytes` (UTF-8 bytes of what the model receives), an oversize entry failing only its own page.
* Pages are byte-identical across runs and across processes (different `PYTHONHASHSEED`s).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import UsageLimits
from support import SEARCH, returns_by_id

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup, _core
from pydantic_ai_toolproxy.grouping.names import canonical_name, local_name

TOOL_NAME = re.compile(r'[A-Za-z0-9_-]{1,64}')
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
TEXT = st.text(st.one_of(st.characters(codec=None), SURROGATES), max_size=200)
BIG_INTS = st.one_of(st.integers(), st.integers(min_value=-(2**80), max_value=2**80))
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(), BIG_INTS, TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(TEXT, st.integers()), inner, max_size=6),
    ),
    max_leaves=40,
)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def allowed(call: Any, *args: Any) -> Any:
    """Call `call(*args)`; `ValueError`/`TypeError` (the documented rejections) are fine, anything else fails."""
    try:
        return call(*args)
    except (ValueError, TypeError):
        return None


@FAST
@given(TEXT, TEXT, st.one_of(TEXT, BIG_INTS, st.none()))
def test_validation_functions_take_any_text(a: str, b: str, other: Any) -> None:
    allowed(_core.validate_group_name, a)
    allowed(_core.validate_group_description, a, b)
    assert _core.validate_tool_name(other) == (isinstance(other, str) and TOOL_NAME.fullmatch(other) is not None)
    allowed(_core.validate_config, a, b, other, other)
    canonical = _core.canonical_name(a, b)
    assert isinstance(canonical, str)
    split = _core.split_canonical_name(canonical)
    assert split is None or (isinstance(split, tuple) and len(split) == 2)


GROUP_NAMES = st.from_regex(r'\A[A-Za-z][A-Za-z0-9_-]{0,31}\Z').filter(lambda g: '__' not in g)
TOOL_NAMES = st.from_regex(r'\A[A-Za-z0-9_-]{1,64}\Z')


@FAST
@given(GROUP_NAMES, TOOL_NAMES)
def test_canonical_names_round_trip_for_valid_names(group: str, tool: str) -> None:
    """`local_name(canonical_name(g, t), g) == t` for every valid pair; the core's split agrees when it can."""
    _core.validate_group_name(group)  # the strategy makes only valid names: a rejection here fails the test
    assert _core.validate_tool_name(tool)
    canonical = canonical_name(group, tool)
    assert canonical == _core.canonical_name(group, tool) == f'{group}__{tool}'
    assert local_name(canonical, group) == tool
    if not group.endswith('_') and not tool.startswith('_'):
        # Only then is the spelling unambiguous (`ops` + `_purge` and `ops_` + `purge` both spell `ops___purge`).
        assert _core.split_canonical_name(canonical) == (group, tool)


@FAST
@given(st.lists(st.one_of(BIG_INTS, st.floats(), TEXT), max_size=12), BIG_INTS, BIG_INTS, BIG_INTS)
def test_plan_page_takes_any_numbers(sizes: list[Any], total: int, offset: int, budget: int) -> None:
    plan = allowed(_core.plan_page, sizes, total, offset, budget)
    if plan is not None:
        count, next_offset, size = plan
        assert 0 <= count <= len(sizes)
        assert count == 0 or size <= budget
        if not all(isinstance(v, int) and 0 <= v < 2**40 for v in [*sizes, total, offset, budget]):
            return  # beyond any real page the core saturates its sums: only "no crash" is asserted there
        if not sizes:
            assert count == 0 and next_offset is None  # no entries: the empty page
        elif count == 0:
            # The first entry alone does not fit: `size` is what its page would need, and `next_offset` skips it.
            assert size > budget
            assert next_offset == (offset + 1 if offset + 1 < total else None)
        else:
            assert next_offset == (offset + count if offset + count < total else None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(TEXT, st.sampled_from(['crm', 'billing', 'ops']), TEXT, TEXT, JSONISH), max_size=20),
    TEXT,
    st.one_of(st.none(), st.lists(TEXT, max_size=3)),
    BIG_INTS,
    BIG_INTS,
)
def test_search_index_takes_any_records_and_queries(
    records: list[tuple[str, str, str, str, Any]], query: str, groups: list[str] | None, offset: int, limit: int
) -> None:
    index = _core.SearchIndex()
    index.upsert(records)
    index.remove([r[0] for r in records[::3]] + ['\ud800'])
    result = allowed(index.search, query, groups, offset, limit)
    if result is not None:
        total, keys = result
        assert len(keys) <= max(0, min(limit, total - max(offset, 0)))
        assert len(set(keys)) == len(keys)
    assert len(index) == len(index.keys())


def test_a_core_panic_is_a_runtime_error_and_the_module_keeps_working() -> None:
    with pytest.raises(RuntimeError, match='panicked: boom'):
        _core._panic_for_tests('boom')
    index = _core.SearchIndex()
    index.upsert([('crm__a', 'crm', 'a', 'alpha', {})])
    assert index.search('alpha', None, 0, 5) == (1, ['crm__a'])


class PanicOnce:
    """A real `_core.SearchIndex` whose next ranking call (`rank`, which the search control makes, or `search`)
    hits a real core panic (through `_panic_for_tests`)."""

    def __init__(self) -> None:
        self.inner = _core.SearchIndex()
        self.armed = True

    def upsert(self, records: Any) -> None:
        self.inner.upsert(records)

    def remove(self, keys: Any) -> None:
        self.inner.remove(keys)

    def _fire(self) -> None:
        if self.armed:
            self.armed = False
            _core._panic_for_tests('index corrupted')

    def rank(self, *args: Any) -> Any:
        self._fire()
        return self.inner.rank(*args)

    def search(self, *args: Any) -> Any:
        self._fire()
        return self.inner.search(*args)


async def test_a_core_panic_during_search_fails_that_search_and_the_next_one_works() -> None:
    def alpha() -> str:
        """Alpha report."""
        return 'a'

    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=FunctionToolset([alpha]), description='G')})
    proxy._runtime.search_index.index = PanicOnce()  # type: ignore[assignment]
    turns = iter(
        [
            [ToolCallPart(SEARCH, {'query': 'alpha'}, tool_call_id='s1')],
            [ToolCallPart(SEARCH, {'query': 'alpha'}, tool_call_id='s2')],
        ]
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(turns, [TextPart('done')]))

    result = await Agent(FunctionModel(model), capabilities=[proxy]).run('x')
    parts = returns_by_id(result.all_messages())
    assert parts['s1'].outcome == 'failed' and 'search again' in parts['s1'].model_response_str()
    assert json.loads(parts['s2'].model_response_str())['tools'][0]['tool'] == 'alpha'
    assert isinstance(proxy._runtime.search_index.index, _core.SearchIndex)  # rebuilt from scratch


class PanicOnSecondUpsert(PanicOnce):
    """Builds normally once, then its next upsert hits a real core panic."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.upserts = 0

    def upsert(self, records: Any) -> None:
        self.upserts += 1
        if self.upserts == 2:
            _core._panic_for_tests('index corrupted while syncing')
        self.inner.upsert(records)


async def test_a_core_panic_while_a_step_syncs_the_index_fails_nothing_and_the_next_search_rebuilds() -> None:
    from dataclasses import replace

    from pydantic_ai.capabilities import PrepareTools
    from pydantic_ai.tools import RunContext, ToolDefinition

    def alpha() -> str:
        """Alpha report."""
        return 'a'

    def edit(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [replace(d, description='Beta report.') for d in defs] if ctx.run_step >= 2 else defs

    proxy = ToolProxyCapability(groups={'g': ToolProxyGroup(source=FunctionToolset([alpha]), description='G')})
    proxy._runtime.search_index.index = PanicOnSecondUpsert()  # type: ignore[assignment]
    turns = iter(
        [
            [ToolCallPart(SEARCH, {'query': 'alpha'}, tool_call_id='s1')],
            [ToolCallPart(SEARCH, {'query': 'beta'}, tool_call_id='s2')],
        ]
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(turns, [TextPart('done')]))

    result = await Agent(FunctionModel(model), capabilities=[proxy, PrepareTools(edit)]).run('x')
    parts = returns_by_id(result.all_messages())
    # Step 2's sync (the edited description) panicked in the core: the step went on, and its search rebuilt the index.
    assert json.loads(parts['s1'].model_response_str())['tools'][0]['description'] == 'Alpha report.'
    second = json.loads(parts['s2'].model_response_str())
    assert second['tools'][0]['description'] == 'Beta report.'
    assert isinstance(proxy._runtime.search_index.index, _core.SearchIndex)  # rebuilt from scratch


# --- pages through real Agent runs -------------------------------------------------------------------------

WORDS = ['customer', 'invoice', 'refund', 'email', 'report', 'ticket', 'order', 'note', 'café', '東京']


def catalog(spec: list[tuple[int, int, int]]) -> dict[str, FunctionToolset[Any]]:
    """Groups of tools from `(group, word, description_length)` triples; some descriptions are huge."""
    groups: dict[str, list[Tool[Any]]] = {}
    for i, (group, word, length) in enumerate(spec):

        async def op() -> str:
            return 'ok'

        description = f'{WORDS[word]} operation {i} ' + 'detail ' * length
        groups.setdefault(f'g{group}', []).append(Tool(op, name=f'{WORDS[word % 8]}_{i}', description=description))
    return {name: FunctionToolset(tools) for name, tools in groups.items()}


def pager(query: str, limit: int) -> tuple[FunctionModel, list[tuple[str, Any]]]:
    """A model that pages through `query` until `next_offset` is null, skipping an entry that cannot fit alone
    at the offset the failure names. Records `('page', page)` and `('skip', offset)` in order."""
    seen: list[tuple[str, Any]] = []
    state = {'offset': 0, 'n': 0}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest):
            for part in last.parts:
                if isinstance(part, ToolReturnPart) and part.tool_name == SEARCH:
                    text = part.model_response_str()
                    if part.outcome == 'success':
                        page = json.loads(text)
                        seen.append(('page', page))
                        if page['next_offset'] is None:
                            return ModelResponse(parts=[TextPart('done')])
                        state['offset'] = page['next_offset']
                    else:
                        skip = int(re.search(r'offset=(\d+)', text).group(1))  # type: ignore[union-attr]
                        seen.append(('skip', skip - 1))
                        state['offset'] = skip
        state['n'] += 1
        if state['n'] > 500:
            return ModelResponse(parts=[TextPart('gave up')])
        args = {'query': query, 'limit': limit, 'offset': state['offset']}
        return ModelResponse(parts=[ToolCallPart(SEARCH, args, tool_call_id=f's{state["n"]}')])

    return FunctionModel(model), seen


async def page_through(
    spec: list[tuple[int, int, int]], query: str, limit: int, budget: int
) -> tuple[list[Any], list[str]]:
    groups = catalog(spec)
    proxy = ToolProxyCapability(
        groups={name: ToolProxyGroup(source=ts, description=f'Group {name}') for name, ts in groups.items()},
        config=ToolProxyConfig(max_results=20, max_search_bytes=budget),
    )
    model, seen = pager(query, limit)
    result = await Agent(model, capabilities=[proxy], retries=50).run('x', usage_limits=UsageLimits(request_limit=None))
    assert result.output == 'done'
    total, ranking = proxy._runtime.search_index.index.search(query, None, 0, 10**6)
    assert total == len(ranking)
    return seen, ranking


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, len(WORDS) - 1), st.integers(0, 700)), min_size=1, max_size=40
    ),
    st.sampled_from(['', 'customer', 'refund invoice', 'café 東京', 'operation 3', 'nothing-matches']),
    st.integers(1, 20),
    st.integers(1024, 6000),
)
def test_pages_cover_the_ranking_exactly_once_each_within_budget(
    spec: list[tuple[int, int, int]], query: str, limit: int, budget: int
) -> None:
    seen, ranking = asyncio.run(page_through(spec, query, limit, budget))
    covered: list[str] = []
    for kind, value in seen:
        if kind == 'page':
            assert len(json.dumps(value, ensure_ascii=False, separators=(',', ':')).encode()) <= budget
            covered.extend(f'{t["group"]}__{t["tool"]}' for t in value['tools'])
        else:
            covered.append(ranking[value])  # the entry that cannot fit alone, skipped at its own position
    assert covered == ranking


DETERMINISM_SCRIPT = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from test_reliability_properties import page_through
spec = [(i % 4, (i * 7) % 10, (i * 37) % 300) for i in range(120)]
out = []
for query in ['', 'customer', 'refund invoice', 'café', 'operation 1']:
    seen, ranking = asyncio.run(page_through(spec, query, 7, 4096))
    out.append([query, seen, ranking])
print(json.dumps(out, ensure_ascii=False, sort_keys=True))
"""


@pytest.mark.slow
def test_pages_are_identical_across_runs_and_processes() -> None:
    here = str(Path(__file__).resolve().parent)
    outputs = []
    for seed in ('0', '1', '12345'):
        env = {**os.environ, 'PYTHONHASHSEED': seed}
        done = subprocess.run(
            [sys.executable, '-c', DETERMINISM_SCRIPT, here],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    pages = json.loads(outputs[0])
    assert all(len(ranking) >= 10 for _, _, ranking in pages)  # every query had several pages to page through


ENTRIES = st.lists(
    st.dictionaries(
        st.text(max_size=8), st.one_of(st.none(), st.integers(), TEXT, st.lists(st.integers())), max_size=4
    ),
    max_size=8,
)


@FAST
@given(ENTRIES, st.integers(min_value=0, max_value=10**12), st.integers(min_value=0, max_value=10**6))
def test_the_planned_page_size_is_the_serialized_page_the_model_gets(
    entries: list[dict[str, Any]], extra: int, offset: int
) -> None:
    """The core's page frame (`src/page.rs`) is exactly the JSON Pydantic AI sends for the search control's page:
    the planned size equals the bytes of `{"tools": [...], "total": T, "next_offset": K}` through the same
    serializer (`tool_return_ta`), for any entries, totals and offsets."""
    from pydantic_ai.messages import tool_return_ta
    from pydantic_core import from_json

    from pydantic_ai_toolproxy.controls.search import entry_json

    try:
        encoded = [entry_json(e) for e in entries]
    except ValueError:  # a lone surrogate: such an entry fails its own page before planning
        return
    total = offset + len(entries) + extra
    count, next_offset, size = _core.plan_page([len(b) for b in encoded], total, offset, 2**40)
    assert count == len(entries)
    page = {'tools': [from_json(b) for b in encoded], 'total': total, 'next_offset': next_offset}
    assert size == len(tool_return_ta.dump_json(page, by_alias=True))
