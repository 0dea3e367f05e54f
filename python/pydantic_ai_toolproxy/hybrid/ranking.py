"""When hybrid ranking applies, and the ranking itself: the one place the search control (`controls.search`) and the
`ToolSearch` strategy (`search.strategy`) decide between keywords and hybrid and ask the core for the ranked keys.

A search with an embedder first waits for its tools' vectors and embeds its queries (`await_vectors`, outside the
lock), then, under the lock with the index synced to the step's tools, ranks each query (`rank`): hybrid
(`SearchIndex.search_hybrid`) when the query has a vector and some tool of the index has one of the same size,
else by keywords (`SearchIndex.search`, the keyword ranking exactly). Without an embedder every search ranks by
keywords.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from .. import _core
from .vectors import ToolVectors

__all__ = ('KEYWORD', 'IndexSource', 'QueryVector', 'Ranked', 'Ranking', 'await_vectors', 'rank')

QueryVector = tuple[bytes | None, str | None]
"""A query's `(vector, None)`, or `(None, reason)` when it has none (`ToolVectors.query_vector`)."""


@dataclass(frozen=True)
class Ranking:
    """Which ranking one search ran, for telemetry (span attributes) and tests; never shown to the model.

    Attributes:
        kind: `'hybrid'` (keywords fused with the query's cosine in the core) or `'keyword'`.
        reason: Why a surface with an embedder ranked by keywords: `'browse'` (the core browsed: nothing to look
            for and no exact name, e.g. `''` or `'???'`), `'no-words'` (nothing to embed, yet a tool's exact name:
            `'-'`), `'query-timeout'`, `'embedder-error'`, `'no-vectors'` (no tool of the index has a vector yet),
            `'dimensions'` (the query vector's size differs from the tools'); None otherwise.
        tools_with_vectors: Tools of the index with a vector when it ranked (0 without an embedder).
        tools: Tools of the index followed by the vectors (0 without an embedder).
    """

    kind: Literal['keyword', 'hybrid']
    reason: str | None = None
    tools_with_vectors: int = 0
    tools: int = 0


KEYWORD = Ranking('keyword')
"""The ranking of every search of a surface without an embedder."""


@dataclass(frozen=True)
class Ranked:
    """One query's ranked window.

    Attributes:
        total: The ranked set's size (`SearchIndex.search`, `search_hybrid`).
        keys: The keys of the window asked for, best first.
        ranking: Which ranking ran.
        exact: How many of `keys`, from the first, are the query's exact tool names (the core counts them).
        browsed: The core browsed (nothing to look for and no exact name): `keys` are tools in name order, no match.
    """

    total: int
    keys: list[str]
    ranking: Ranking
    exact: int = 0
    browsed: bool = False


class IndexSource(Protocol):
    """The index one search ranks, as `await_vectors` reads it: the search control's (`controls.search`, a slot of the
    proxy's `SearchIndexCache` synced to the step's directory) or the `ToolSearch` strategy's (`search.strategy`)."""

    def sync(self) -> _core.SearchIndex:
        """Bring the index to the search's tools (`search.index_cache.IndexSlot.sync`, which queues the tools without a
        vector) and return it. Called with the vectors' lock held; on a core error it drops that index and raises
        what its owner makes of the error."""
        ...

    def reset(self) -> None:
        """Drop every index the vectors follow (the embedding model changed). Called with the vectors' lock held."""
        ...


async def await_vectors(
    vectors: ToolVectors, source: IndexSource, queries: Sequence[str], wait: float, run_id: str | None
) -> list[QueryVector]:
    """What a search with an embedder awaits before it ranks: the vectors of its tools and of its `queries`.

    Under the vectors' lock: the model of the current context becomes the one whose vectors are held (on a change,
    `source.reset()` drops every index), then `source.sync()` brings the index to the search's tools, which queues
    the tools without a vector, and the texts that index wants are claimed: they stay pending while this search
    waits for them, whichever run moves a shared index meanwhile (`Fill.claim`). Outside the lock: the pending tool
    vectors are waited for up to `wait` seconds (only the first search of run `run_id` waits,
    `ToolVectors.wait_for_tools`) while each query is embedded (up to `query_timeout`, at the same time), and when a query vector shows the
    store's tool vectors to be of another size (their replacements are then embedded) the index is synced and
    claimed again and the tools are waited for once more. Returns each query's `(vector, reason)`.
    """
    lock = vectors.lock
    with lock:
        if vectors.switch_model():  # another model than the last search's: no vector of that one stays attached
            source.reset()
        claimed = vectors.fill.claim(source.sync())
    # The queries are embedded while the search waits for its tools, not after: the wait and the query's embedding
    # overlap (a local model runs the query before the tool texts' batches).
    embedding = [asyncio.ensure_future(vectors.query_vector(query)) for query in queries]
    try:
        await _wait(vectors, claimed, wait, run_id)
        query_vectors = [await future for future in embedding]
    finally:
        for future in embedding:
            future.cancel()  # a search cancelled meanwhile: its queries' embedding stops (no-op once done)
    stale = [v is not None and vectors.dimension_policy.adopt_query(v) for v, _ in query_vectors]
    if any(stale):  # the store's tool vectors had another size than the embedder's: wait for their replacements
        with lock:
            claimed = vectors.fill.claim(source.sync())
        await _wait(vectors, claimed, wait, run_id)
    return query_vectors


async def _wait(vectors: ToolVectors, claimed: list[bytes], wait: float, run_id: str | None) -> None:
    """`vectors.wait_for_tools(wait, run_id)`, then release `claimed` (under the lock)."""
    try:
        await vectors.wait_for_tools(wait, run_id)
    finally:
        if claimed:
            with vectors.lock:
                vectors.fill.release(claimed)


def rank(
    index: _core.SearchIndex,
    vectors: ToolVectors | None,
    query: str,
    query_vector: QueryVector | None,
    groups: list[str] | None,
    offset: int,
    limit: int,
    *,
    report: bool = True,
) -> Ranked:
    """Rank `query` over `index` (synced to the step's tools; call with the lock held): hybrid when `vectors` is
    given, `query_vector` holds a vector and some tool of the index has a vector of its size, else by keywords
    (`Ranking.reason` says why not hybrid; `'browse'` when the core browsed). With `report`, a fallback to keywords
    is logged once per reason (`LogOnce.ranked`). One call into the core (`SearchIndex.rank`), which also counts
    the leading exact tool names (`Ranked.exact`) and says whether it browsed (`Ranked.browsed`).

    Raises:
        RuntimeError: the core panicked.
    """
    ranking = KEYWORD if vectors is None else _decide(index, vectors, query_vector)
    vector = query_vector[0] if ranking.kind == 'hybrid' and query_vector is not None else None
    weight = vectors.weight if vectors is not None else 0.0
    total, keys, exact, browsed = index.rank(query, vector, groups, offset, limit, weight)
    if browsed and ranking is not KEYWORD:
        ranking = Ranking('keyword', 'browse', ranking.tools_with_vectors, ranking.tools)
    if report and vectors is not None:
        vectors.log.ranked(ranking.reason, ranking.tools_with_vectors, ranking.tools)
    return Ranked(total, keys, ranking, exact, browsed)


def _decide(index: _core.SearchIndex, vectors: ToolVectors, query_vector: QueryVector | None) -> Ranking:
    """Hybrid or keyword, for a query with `query_vector` over `index`, and why not hybrid."""
    with_vectors, tools = vectors.coverage(index)
    if query_vector is None:
        return Ranking('keyword', None, with_vectors, tools)
    vector, reason = query_vector
    if vector is not None:
        if with_vectors == 0:
            reason = 'no-vectors'
        elif len(vector) // 4 != vectors.dimensions:
            reason = 'dimensions'
            vectors.dimension_policy.dimension_mismatch(len(vector) // 4)
    if reason is None and vector is not None:
        return Ranking('hybrid', None, with_vectors, tools)
    return Ranking('keyword', reason, with_vectors, tools)
