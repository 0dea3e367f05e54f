"""The rankers compared by the quality benchmark, each called through its installed package.

Every ranker is built once over a corpus and answers ``rank_keys(query, k)``: canonical names ``group__tool``,
best first, at most ``k`` (``rank`` gives the local tool names of the same list, for corpora where they are
unique). ``rank_many`` (where present) ranks a batch of queries at once.

* :class:`ToolProxySearchRanker` - this package, black-box: a real ``Agent`` with a ``ToolProxyCapability``
  over the corpus (one ``FunctionToolset`` per group, the group descriptions given), driven by a scripted
  ``FunctionModel`` that sends each query as a ``search_proxy_tools`` call (``limit`` 10, no group) and follows
  ``next_offset`` until it has 10 entries. Whatever the package indexes (names, descriptions, schemas, group
  names and descriptions) is measured as the model would see it.
* :class:`ToolProxyRanker` - this package's Rust index (``_core.SearchIndex``) fed the records
  ``(canonical name, group, local name, description, parameters_json_schema)`` built by the package's own
  ``grouping.directory.index_record``, as ``search.index_cache.IndexSlot.sync`` builds them (and the group descriptions);
  searched across all groups. Used by ``tests/test_search_quality.py``; not a row of the tables.
* :class:`A13nToolSearchRanker` - a13n-harness 0.21's ToolSearch ranking
  (``a13n_harness.toolsets.tool_search._search_matches``) over the same groups, with the grouped names
  its ``_GroupedToolset`` gives tools.
* :class:`PydanticAIKeywordsRanker` - Pydantic AI's local tool-search fallback
  (``pydantic_ai.capabilities.keywords_search``: keyword overlap over name + description). Tools
  are named by their local names where those are unique in the corpus (BFCL), else by ``group__tool``.
* :class:`Bm25sRanker` - ``bm25s`` with its defaults (Lucene BM25, k1=1.5, b=0.75, its English stopwords
  and tokenizer) over ``name + description + JSON of the parameters schema``; with ``group_descriptions``
  also ``+ group name + group description``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bench.lib.corpus import Tool
from pydantic_ai_toolproxy.grouping.names import canonical_name

__all__ = [
    'A13nToolSearchRanker',
    'Bm25sRanker',
    'PydanticAIKeywordsRanker',
    'Ranker',
    'ToolProxyRanker',
    'ToolProxySearchRanker',
    'agent_rankers',
    'bfcl_rankers',
]

_LOCAL: dict[str, str] = {}
"""Canonical name -> local tool name, for every key a ranker has made (`_key`): `rank` maps keys back through
it, since a canonical name is split only with its group (`grouping.names.local_name`), never at the separator."""


class Ranker(Protocol):
    """A ranker built over a fixed corpus."""

    label: str
    """Row label of the benchmark table."""

    def rank_keys(self, query: str, k: int) -> list[str]:
        """Return at most `k` canonical names `group__tool`, best first."""
        ...


class _Local:
    """`rank` from `rank_keys`: the local tool names of the ranking."""

    def rank_keys(self, query: str, k: int) -> list[str]:
        raise NotImplementedError

    def rank(self, query: str, k: int) -> list[str]:
        """Return at most `k` local tool names, best first."""
        return [_LOCAL[key] for key in self.rank_keys(query, k)]


def _key(tool: Tool) -> str:
    """The tool's canonical name `group__tool` (`grouping.names.canonical_name`)."""
    return _keyed(tool.group, tool.name)


def _keyed(group: str, tool: str) -> str:
    key = canonical_name(group, tool)
    _LOCAL[key] = tool
    return key


class ToolProxySearchRanker(_Local):
    """This package through real `search_proxy_tools` calls of a real agent run (see the module docstring);
    `config` adds `ToolProxyConfig` fields (the hybrid rows pass `embedder=` and `semantic_weight=`)."""

    label = 'pydantic-ai-toolproxy (this package, real search_proxy_tools calls)'
    BATCH = 50
    """Search calls per model response (one agent step runs them all)."""

    def __init__(
        self,
        tools: Sequence[Tool],
        group_descriptions: Mapping[str, str],
        label: str | None = None,
        **config: object,
    ) -> None:
        from bench.lib.agent_steps import toolsets
        from pydantic_ai_toolproxy import (
            ToolProxyCapability,
            ToolProxyConfig,
            ToolProxyGroup,
        )

        if label is not None:
            self.label = label
        sets = toolsets(tools)
        self._proxy = ToolProxyCapability(
            groups={g: ToolProxyGroup(source=ts, description=group_descriptions[g]) for g, ts in sets.items()},
            config=ToolProxyConfig(max_results=10, **config),  # type: ignore[arg-type]  # the hybrid settings
        )
        self.failures: list[str] = []
        """Searches that did not return a page (the message the model got), in order."""

    def rank_keys(self, query: str, k: int) -> list[str]:
        """Return at most `k` canonical names, best first (one agent run for this query)."""
        return self.rank_many([query], k)[0]

    def rank_many(self, queries: Sequence[str], k: int) -> list[list[str]]:
        """Rank every query with `search_proxy_tools` calls in one agent run (`BATCH` calls per step)."""
        from pydantic_ai import Agent
        from pydantic_ai.messages import (
            ModelMessage,
            ModelRequest,
            ModelResponse,
            RetryPromptPart,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import UsageLimits

        if k > 10:
            raise ValueError('the proxy is configured with max_results=10')
        ranked: list[list[str]] = [[] for _ in queries]
        todo: list[tuple[int, int]] = [(i, 0) for i in range(len(queries))]  # (query, offset)

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            last = messages[-1]
            if isinstance(last, ModelRequest):
                for part in last.parts:
                    if not isinstance(part, ToolReturnPart | RetryPromptPart) or not part.tool_call_id.startswith('q'):
                        continue
                    index = int(part.tool_call_id[1:].split('_')[0])
                    if isinstance(part, RetryPromptPart):
                        self.failures.append(f'{queries[index]!r}: {part.model_response()}')
                        continue
                    page = json.loads(part.model_response_str())
                    if not isinstance(page, dict) or 'tools' not in page:
                        self.failures.append(f'{queries[index]!r}: {part.model_response_str()[:300]}')
                        continue
                    ranked[index] += [_keyed(e['group'], e['tool']) for e in page['tools']]
                    if len(ranked[index]) < k and page['next_offset'] is not None:
                        todo.append((index, page['next_offset']))
            if not todo:
                return ModelResponse(parts=[TextPart('done')])
            batch = [todo.pop(0) for _ in range(min(self.BATCH, len(todo)))]
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        'search_proxy_tools',
                        {'query': queries[i], 'limit': k - len(ranked[i]), 'offset': offset},
                        tool_call_id=f'q{i}_{offset}',
                    )
                    for i, offset in batch
                ]
            )

        agent = Agent(FunctionModel(model), capabilities=[self._proxy])
        agent.run_sync('rank these queries', usage_limits=UsageLimits(request_limit=None, tool_calls_limit=None))
        return [keys[:k] for keys in ranked]


class ToolProxyRanker(_Local):
    """This package's Rust ranking (`_core.SearchIndex`), records built by `grouping.directory.index_record`."""

    label = 'pydantic-ai-toolproxy core index (records as grouping.directory.index_record builds them)'

    def __init__(self, tools: Sequence[Tool], group_descriptions: Mapping[str, str] | None = None) -> None:
        from pydantic_ai_toolproxy import _core
        from pydantic_ai_toolproxy.grouping.directory import index_record

        self._index = _core.SearchIndex()
        if group_descriptions and hasattr(self._index, 'set_group_description'):
            for group, description in group_descriptions.items():
                self._index.set_group_description(group, description)
        self._index.upsert([index_record(_key(tool), tool.group, tool.description, tool.parameters) for tool in tools])

    def rank_keys(self, query: str, k: int) -> list[str]:
        """Return at most `k` canonical names, best first."""
        _total, keys = self._index.search(query, None, 0, k)
        return list(keys)


@dataclass
class _Prepared:
    """The one attribute of a prepared `ToolsetTool` that a13n's ranking reads."""

    tool_def: object


class A13nToolSearchRanker(_Local):
    """a13n-harness 0.21 ToolSearch: exact names first, then keyword coverage over name, description, group
    and parameter text (its `_search_matches`, called as its `search` control calls it)."""

    label = 'a13n-harness 0.21 ToolSearch ranking'

    def __init__(self, tools: Sequence[Tool]) -> None:
        from a13n_harness.tools.tool_search import grouped_tool_name
        from pydantic_ai.tools import ToolDefinition

        self._tools: dict[str, _Prepared] = {}
        self._directory: dict[tuple[str, str], str] = {}
        self._key: dict[str, str] = {}
        for tool in tools:
            canonical = grouped_tool_name(tool.group, tool.name)
            definition = ToolDefinition(
                name=canonical, description=tool.description, parameters_json_schema=tool.parameters
            )
            self._tools[canonical] = _Prepared(definition)
            self._directory[(tool.group, tool.name)] = canonical
            self._key[canonical] = _key(tool)

    def rank_keys(self, query: str, k: int) -> list[str]:
        """Return at most `k` canonical names, best first."""
        from a13n_harness.toolsets.tool_search import _search_matches
        from pydantic_ai.exceptions import ModelRetry

        try:
            matches, _exact = _search_matches(self._tools, self._directory, query, None)  # type: ignore[arg-type]
        except ModelRetry:  # a query without keywords and no exact name: no results
            return []
        return [self._key[match.tool_def.name] for match in matches[:k]]


class PydanticAIKeywordsRanker(_Local):
    """Pydantic AI's local `search_tools` fallback: keyword overlap of name + description (stable ties)."""

    label = 'Pydantic AI local fallback (keyword overlap)'

    def __init__(self, tools: Sequence[Tool]) -> None:
        from pydantic_ai.tools import ToolDefinition

        unique = len({tool.name for tool in tools}) == len(tools)
        self._key = {(tool.name if unique else _key(tool)): _key(tool) for tool in tools}
        self._definitions = [
            ToolDefinition(
                name=tool.name if unique else _key(tool),
                description=tool.description,
                parameters_json_schema=tool.parameters,
            )
            for tool in tools
        ]

    def rank_keys(self, query: str, k: int) -> list[str]:
        """Return at most `k` canonical names, best first."""
        from pydantic_ai_toolproxy._private import keywords_search

        names = keywords_search(None, [query], self._definitions)[:k]  # type: ignore[arg-type]  # ctx is unused
        return [self._key[name] for name in names]


class Bm25sRanker(_Local):
    """`bm25s` with default settings over name + description + parameters JSON (+ group name and description)."""

    def __init__(self, tools: Sequence[Tool], group_descriptions: Mapping[str, str] | None = None) -> None:
        import bm25s

        self._bm25s = bm25s
        self._keys = [_key(tool) for tool in tools]
        texts = [f'{tool.name} {tool.description} {json.dumps(tool.parameters)}' for tool in tools]
        if group_descriptions is None:
            self.label = 'bm25s (BM25 over name + description + parameters)'
        else:
            self.label = 'bm25s (BM25 over name + description + parameters + group name + group description)'
            texts = [f'{text} {tool.group} {group_descriptions[tool.group]}' for text, tool in zip(texts, tools)]
        self._retriever = bm25s.BM25()
        self._retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)

    def rank_keys(self, query: str, k: int) -> list[str]:
        """Return at most `k` canonical names, best first."""
        tokens = self._bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:  # nothing left after stopwords
            return []
        documents, scores = self._retriever.retrieve(tokens, k=min(k, len(self._keys)), show_progress=False)
        return [self._keys[doc] for doc, score in zip(documents[0], scores[0]) if score > 0]


def bfcl_rankers(tools: Sequence[Tool], group_descriptions: Mapping[str, str]) -> list[Ranker]:
    """The BFCL table's rows, in order: the three references, then this package (last)."""
    return [
        A13nToolSearchRanker(tools),
        PydanticAIKeywordsRanker(tools),
        Bm25sRanker(tools),
        ToolProxySearchRanker(tools, group_descriptions),
    ]


def agent_rankers(tools: Sequence[Tool], group_descriptions: Mapping[str, str], slow: bool = False) -> list[Ranker]:
    """The agent-query table's rows: the references, bm25s with the group text (the one to beat) last of them,
    then this package (last). `slow` adds a13n-harness ToolSearch and Pydantic AI's keyword fallback (about 330
    and 45 ms a query here, against under 1 ms for bm25s)."""
    slow_rows: list[Ranker] = [A13nToolSearchRanker(tools), PydanticAIKeywordsRanker(tools)] if slow else []
    return [
        *slow_rows,
        Bm25sRanker(tools),
        Bm25sRanker(tools, group_descriptions),
        ToolProxySearchRanker(tools, group_descriptions),
    ]
