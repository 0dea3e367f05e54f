"""This package's ranking as a strategy for Pydantic AI's own `ToolSearch` over `defer_loading=True` tools.

`ToolSearch(strategy=search_strategy())` keeps Pydantic AI's discovery flow (its `search_tools` control, or the
provider's client-executed native surface, which keeps the prompt cache) and swaps the ranking: the strategy ranks
the deferred tools with the Rust core's index (BM25F over name, description and parameter text; exact names
first), kept across calls and runs and updated by each tool's fingerprint, never rebuilt per call. Given an
embedder, it ranks hybrid (docs/hybrid-search.md): the tools' vectors come from the same pipeline as
`ToolProxyConfig(embedder=...)`'s (`hybrid.vectors.ToolVectors`: batches, the embedding cache, background filling),
kept with the index, and each query is ranked by the same entry point as the search control's (`hybrid.ranking`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_ai.tools import RunContext, ToolDefinition

from .. import _core
from ..config import DEFAULT_EMBEDDING_CACHE, DefaultEmbeddingCache, ToolProxyConfig
from ..hybrid.ranking import QueryVector, await_vectors, rank
from ..hybrid.store_io import open_store
from ..hybrid.vectors import ToolVectors
from .index_cache import IndexSlot

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder, EmbeddingModel

    from ..embedding_store import EmbeddingStore

__all__ = ('GROUP', 'ToolList', 'ToolProxySearchStrategy', 'search_strategy')

GROUP = ''
"""The one group every deferred tool is indexed under: Pydantic AI's deferred tools have no groups, and an empty
group name adds no searchable text (a real group name would be a term of every tool)."""


class ToolList:
    """The deferred tools of one strategy call as the index sync reads them (`search.index_cache.IndexedTools`): names,
    descriptions and schema objects in the order given, all under `GROUP`. A name listed twice counts once, with
    its first definition, as in `ToolSearch`'s own lookup."""

    __slots__ = ('__weakref__', '_fingerprints', 'descriptions', 'group_runs', 'names', 'schemas')

    def __init__(self, tools: Sequence[ToolDefinition]) -> None:
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            firsts = {t.name: t for t in reversed(tools)}  # reversed: the first definition of a name stays
            tools = [t for t in tools if firsts[t.name] is t]
            names = [t.name for t in tools]
        self.names = names
        self.descriptions: list[object] = [t.description for t in tools]
        self.schemas: list[object] = [t.parameters_json_schema for t in tools]
        self.group_runs: list[tuple[int, str]] = [(0, GROUP)] if names else []
        self._fingerprints: tuple[bytes, int] | None = None

    def fingerprints(self) -> tuple[bytes, int]:
        """`_core.schema_fingerprints(schemas)`, computed once per call."""
        if self._fingerprints is None:
            self._fingerprints = _core.schema_fingerprints(self.schemas)
        return self._fingerprints


class _StrategyIndex:
    """The strategy's index for one call's tools (`hybrid.ranking.IndexSource`). Call with the strategy's lock held."""

    __slots__ = ('slot', 'tools')

    def __init__(self, slot: IndexSlot, tools: ToolList) -> None:
        self.slot = slot
        self.tools = tools

    def sync(self) -> _core.SearchIndex:
        """The index, synced to the call's tools.

        Raises:
            RuntimeError: the core failed (the index is dropped first, so the next call rebuilds it).
        """
        slot = self.slot
        try:
            slot.sync(self.tools)
        except RuntimeError:
            slot.reset()
            raise
        return slot.index

    def reset(self) -> None:
        """Drop the index (the embedding model changed)."""
        self.slot.reset()


def _cut_query(query: str) -> str:
    """`query` cut to at most `MAX_QUERY_BYTES` UTF-8 bytes (at a character boundary): the cap the search control
    enforces, applied here by searching the query's beginning, since a strategy answers with names, not retries."""
    limit = _core.MAX_QUERY_BYTES
    if len(query) <= limit // 4 or len(query.encode('utf-8', 'surrogatepass')) <= limit:
        return query
    return query.encode('utf-8', 'surrogatepass')[:limit].decode('utf-8', 'ignore')


class ToolProxySearchStrategy:
    """A `ToolSearch` strategy `(ctx, queries, tools) -> list[str]` ranking with this package's core.

    Build it with `search_strategy()`. One instance holds one `_core.SearchIndex` for as long as it lives (the
    `ToolSearch` capability that holds it, usually the agent's lifetime), so the index is built by the first search
    and kept across calls and runs. Each call brings it to exactly the `tools` it is given with the search
    control's own sync (`search.index_cache.IndexSlot.sync`): the lists of names, descriptions and schema objects are
    compared with the last call's (in C, without visiting each tool in Python), and the schemas' content
    fingerprints with those indexed, so a schema edited in place is indexed again at once; when anything differs,
    only tools whose description or schema changed are upserted and vanished tools are removed. Thread-safe: one lock covers syncing and ranking, so concurrent runs (in threads or tasks) each
    rank exactly the tools of their own call. One strategy per tool collection is fastest: two agents with
    different deferred tools sharing one strategy re-sync at every switch.

    Without an embedder a call is synchronous (returns the names); with one it returns an awaitable (`ToolSearch`
    awaits it): it embeds the tools it has no vector for (waiting up to `embedding_wait` seconds; the rest rank
    by keywords until their vectors arrive) and each query (up to `query_timeout` seconds), then ranks hybrid.

    Attributes:
        max_results: Most names one call returns, 1-100 (`_core.MAX_RESULTS_LIMIT`). `ToolSearch` keeps at most
            its own `max_results` (default 10) of them, so set both alike.
        config: The hybrid settings (a `ToolProxyConfig` holding the embedder), or None for keyword ranking.
        builds: How many calls changed the index (the first call, and each call whose tools changed since the
            last): for tests and benchmarks.
        upserted: How many tool records those calls (re-)indexed in all.
        rankings: Per query of the latest call, `(kind, reason)`: `('hybrid', None)`, or `('keyword', reason)`
            with reason None (no embedder) or why not hybrid (`query-timeout`, `embedder-error`, `no-vectors`,
            `dimensions`).
    """

    def __init__(self, max_results: int, config: ToolProxyConfig | None = None) -> None:
        self.max_results = max_results
        self.config = config
        self.rankings: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()
        self._vectors: ToolVectors | None = None
        if config is not None and config.embedder is not None:
            self._vectors = ToolVectors(config, {}, self._lock, lambda: open_store(config))
        self._slot = IndexSlot({}, self._vectors)
        """The index and what syncs it (no group descriptions: deferred tools have no groups)."""

    @property
    def builds(self) -> int:
        """How many calls changed the index (see the class docs)."""
        return self._slot.builds

    @property
    def upserted(self) -> int:
        """How many tool records the calls that changed the index (re-)indexed in all."""
        return self._slot.upserted

    def __repr__(self) -> str:
        hybrid = f', embedder={self.config.embedder!r}' if self.config is not None else ''
        return f'search_strategy(max_results={self.max_results}{hybrid})'

    def __call__(
        self, ctx: RunContext[Any], queries: Sequence[str], tools: Sequence[ToolDefinition]
    ) -> list[str] | Awaitable[list[str]]:
        """The names of `tools` that best match `queries`, best first, at most `max_results` (an awaitable of
        them when the strategy has an embedder).

        Each query is ranked on its own; a name that is a query's exact tool name (as the core folds names: case,
        fullwidth forms) comes first, then the queries' results interleave rank by rank (every query's best, then
        every query's second, ...), each name once. Tools this run has already discovered
        (`ctx.discovered_tool_names`) follow the fresh ones unless they are an exact name, as in Pydantic AI's
        own keyword search. Blank queries are skipped; a query longer than `_core.MAX_QUERY_BYTES` UTF-8 bytes is
        searched by its beginning. A query with nothing to look for (punctuation only) matches nothing.

        Raises:
            RuntimeError: the Rust core failed (never on a model's input); the index is dropped first, so the next
                call rebuilds it.
        """
        texts = [_cut_query(q) for q in queries if isinstance(q, str) and q.strip()]
        source = _StrategyIndex(self._slot, ToolList(tools))
        if self._vectors is None:
            return self._rank(ctx, texts, source, None)
        return self._hybrid(ctx, texts, source, self._vectors)

    async def _hybrid(
        self, ctx: RunContext[Any], texts: list[str], source: _StrategyIndex, vectors: ToolVectors
    ) -> list[str]:
        """Sync (which queues the tools without a vector), wait for tool vectors, embed the queries, then rank."""
        assert self.config is not None
        query_vectors = await await_vectors(vectors, source, texts, self.config.embedding_wait, ctx.run_id)
        return self._rank(ctx, texts, source, query_vectors)

    def _rank(
        self,
        ctx: RunContext[Any],
        texts: list[str],
        source: _StrategyIndex,
        query_vectors: list[QueryVector] | None,
    ) -> list[str]:
        discovered = getattr(ctx, 'discovered_tool_names', None) or frozenset()
        limit = self.max_results
        fetch = limit + len(discovered)  # room for fresh tools behind the discovered ones
        rankings: list[list[str]] = []
        exact: list[str] = []
        kinds: list[tuple[str, str | None]] = []
        with self._lock:
            index = source.sync()  # again: a concurrent call may have moved the index while this one awaited
            try:
                for i, text in enumerate(texts):
                    query_vector = query_vectors[i] if query_vectors is not None else None
                    ranked = rank(index, self._vectors, text, query_vector, None, 0, fetch, report=False)
                    kinds.append((ranked.ranking.kind, ranked.ranking.reason))
                    if not ranked.total or ranked.browsed:  # every tool in name order is no match
                        continue
                    exact += ranked.keys[: ranked.exact]
                    rankings.append(ranked.keys)
            except RuntimeError:
                source.reset()
                raise
        self.rankings = kinds
        return _merged(exact, rankings, discovered, limit)


def _merged(
    exact: list[str], rankings: list[list[str]], discovered: frozenset[str] | set[str], limit: int
) -> list[str]:
    """Exact names first, then the rankings interleaved rank by rank (fresh tools before discovered ones), each
    name once, at most `limit`."""
    out: dict[str, None] = dict.fromkeys(exact)
    later: list[str] = []
    depth = max((len(r) for r in rankings), default=0)
    for position in range(depth):
        for ranking in rankings:
            if position < len(ranking):
                key = ranking[position]
                if key in out:
                    continue
                if key in discovered:
                    later.append(key)
                else:
                    out[key] = None
    for key in later:
        out.setdefault(key, None)
    return list(out)[:limit]


def search_strategy(
    *,
    max_results: int = 10,
    embedder: Embedder | EmbeddingModel | str | None = None,
    semantic_weight: float = ToolProxyConfig.semantic_weight,
    embedding_cache: str | os.PathLike[str] | EmbeddingStore | DefaultEmbeddingCache | None = DEFAULT_EMBEDDING_CACHE,
    embedding_wait: float = ToolProxyConfig.embedding_wait,
    query_timeout: float = ToolProxyConfig.query_timeout,
    embedding_timeout: float = ToolProxyConfig.embedding_timeout,
) -> ToolProxySearchStrategy:
    """A strategy for Pydantic AI's `ToolSearch` that ranks deferred tools with this package's core.

    ```python
    from pydantic_ai import Agent, Tool
    from pydantic_ai.capabilities import ToolSearch

    from pydantic_ai_toolproxy import search_strategy


    def get_weather(city: str) -> str:
        \"\"\"Current weather of a city.\"\"\"
        return 'sunny'


    agent = Agent('test', tools=[Tool(get_weather, defer_loading=True)], capabilities=[ToolSearch(strategy=search_strategy())])
    ```

    Args:
        max_results: Most names one search returns, 1-100; `ToolSearch` keeps at most its own `max_results`
            (default 10) of them, so pass the same value to both.
        embedder: Opt-in hybrid ranking, as `ToolProxyConfig.embedder` (an `Embedder`, an `EmbeddingModel`, or a
            model name such as `'openai:text-embedding-3-small'`); None ranks by keywords alone.
        semantic_weight, embedding_cache, embedding_wait, query_timeout, embedding_timeout: As the
            `ToolProxyConfig` fields of the same names (docs/hybrid-search.md); used only with an embedder.

    Raises:
        ValueError: `max_results` not an int in 1..100, or a hybrid setting `ToolProxyConfig` refuses (naming it).
    """
    if isinstance(max_results, bool) or not isinstance(max_results, int):
        raise ValueError(f'search_strategy: max_results must be an int, got {max_results!r}')
    if not 1 <= max_results <= _core.MAX_RESULTS_LIMIT:
        raise ValueError(
            f'search_strategy: max_results must be between 1 and {_core.MAX_RESULTS_LIMIT}, got {max_results}'
        )
    if embedder is None:
        return ToolProxySearchStrategy(max_results)
    config = ToolProxyConfig(
        embedder=embedder,
        semantic_weight=semantic_weight,
        embedding_cache=embedding_cache,
        embedding_wait=embedding_wait,
        query_timeout=query_timeout,
        embedding_timeout=embedding_timeout,
    )
    return ToolProxySearchStrategy(max_results, config)
