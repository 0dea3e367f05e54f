"""The rankers compared by the quality benchmark, each called through its installed package.

Every ranker is built once over the corpus and then answers ``rank(query) -> [tool names]`` (provider-safe
local names, best first, at most ``k``):

* :class:`ToolProxyRanker` - this package: ``pydantic_ai_toolproxy._core.SearchIndex`` fed the records
  ``(canonical name, group, local name, description, parameters_json_schema)`` exactly as
  ``_directory.SearchIndexCache.sync`` builds them, with the demo's groups; searched across all groups.
* :class:`A13nToolSearchRanker` - a13n-harness 0.21's ToolSearch ranking
  (``a13n_harness.toolsets.tool_search._search_matches``) over the same groups, with the grouped names
  its ``_GroupedToolset`` gives tools.
* :class:`PydanticAIKeywordsRanker` - Pydantic AI's local tool-search fallback
  (``pydantic_ai.toolsets._tool_search.keywords_search_fn``: keyword overlap over name + description).
* :class:`Bm25sRanker` - ``bm25s`` with its defaults (Lucene BM25, k1=1.5, b=0.75, its English stopwords
  and tokenizer) over ``name + description + JSON of the parameters schema``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from corpus import Tool

__all__ = ['Ranker', 'ToolProxyRanker', 'A13nToolSearchRanker', 'PydanticAIKeywordsRanker', 'Bm25sRanker', 'all_rankers']


class Ranker(Protocol):
    """A ranker built over a fixed corpus."""

    label: str
    """Row label of the benchmark table."""

    def rank(self, query: str, k: int) -> list[str]:
        """Return at most `k` local tool names, best first."""
        ...


class ToolProxyRanker:
    """This package's Rust ranking (`_core.SearchIndex`), records built as `_directory.py` builds them."""

    label = 'pydantic-ai-toolproxy (this package)'

    def __init__(self, tools: Sequence[Tool]) -> None:
        from pydantic_ai_toolproxy import _core

        self._local = {f'{tool.group}__{tool.name}': tool.name for tool in tools}
        self._index = _core.SearchIndex()
        self._index.upsert(
            [(f'{tool.group}__{tool.name}', tool.group, tool.name, tool.description, tool.parameters) for tool in tools]
        )

    def rank(self, query: str, k: int) -> list[str]:
        """Return at most `k` local tool names, best first."""
        _total, keys = self._index.search(query, None, 0, k)
        return [self._local[key] for key in keys]


@dataclass
class _Prepared:
    """The one attribute of a prepared `ToolsetTool` that a13n's ranking reads."""

    tool_def: object


class A13nToolSearchRanker:
    """a13n-harness 0.21 ToolSearch: exact names first, then keyword coverage over name, description, group
    and parameter text (its `_search_matches`, called as its `search` control calls it)."""

    label = 'a13n-harness 0.21 ToolSearch ranking'

    def __init__(self, tools: Sequence[Tool]) -> None:
        from a13n_harness.tools.tool_search import grouped_tool_name
        from pydantic_ai.tools import ToolDefinition

        self._tools: dict[str, _Prepared] = {}
        self._directory: dict[tuple[str, str], str] = {}
        self._local: dict[str, str] = {}
        for tool in tools:
            canonical = grouped_tool_name(tool.group, tool.name)
            definition = ToolDefinition(name=canonical, description=tool.description, parameters_json_schema=tool.parameters)
            self._tools[canonical] = _Prepared(definition)
            self._directory[(tool.group, tool.name)] = canonical
            self._local[canonical] = tool.name

    def rank(self, query: str, k: int) -> list[str]:
        """Return at most `k` local tool names, best first."""
        from a13n_harness.toolsets.tool_search import _search_matches
        from pydantic_ai.exceptions import ModelRetry

        try:
            matches, _exact = _search_matches(self._tools, self._directory, query, None)  # type: ignore[arg-type]
        except ModelRetry:  # a query without keywords and no exact name: no results
            return []
        return [self._local[match.tool_def.name] for match in matches[:k]]


class PydanticAIKeywordsRanker:
    """Pydantic AI's local `search_tools` fallback: keyword overlap of name + description (stable ties)."""

    label = 'Pydantic AI local fallback (keyword overlap)'

    def __init__(self, tools: Sequence[Tool]) -> None:
        from pydantic_ai.tools import ToolDefinition

        self._definitions = [
            ToolDefinition(name=tool.name, description=tool.description, parameters_json_schema=tool.parameters)
            for tool in tools
        ]

    def rank(self, query: str, k: int) -> list[str]:
        """Return at most `k` local tool names, best first."""
        from pydantic_ai.toolsets._tool_search import keywords_search_fn

        return keywords_search_fn(None, [query], self._definitions)[:k]  # type: ignore[arg-type]  # ctx is unused


class Bm25sRanker:
    """`bm25s` with default settings over name + description + parameters JSON."""

    label = 'bm25s (BM25 over name + description + parameters)'

    def __init__(self, tools: Sequence[Tool]) -> None:
        import bm25s

        self._bm25s = bm25s
        self._names = [tool.name for tool in tools]
        texts = [f'{tool.name} {tool.description} {json.dumps(tool.parameters)}' for tool in tools]
        self._retriever = bm25s.BM25()
        self._retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)

    def rank(self, query: str, k: int) -> list[str]:
        """Return at most `k` local tool names, best first."""
        tokens = self._bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:  # nothing left after stopwords
            return []
        documents, scores = self._retriever.retrieve(tokens, k=min(k, len(self._names)), show_progress=False)
        return [self._names[doc] for doc, score in zip(documents[0], scores[0]) if score > 0]


def all_rankers(tools: Sequence[Tool]) -> list[Ranker]:
    """The table's rows, in order: the three references, then this package."""
    return [A13nToolSearchRanker(tools), PydanticAIKeywordsRanker(tools), Bm25sRanker(tools), ToolProxyRanker(tools)]
