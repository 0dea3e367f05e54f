"""The query side of hybrid search: a query's vector, embedded on the process's embedding loop within
`query_timeout`, and the most recent ones kept (least recently used dropped first), keyed by the model."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING

from .._core import nothing_to_find
from .embedder import bounded, vector_bytes
from .loop import embedding_loop, joined

if TYPE_CHECKING:
    from .protocol import VectorHolder

__all__ = ('QUERY_CACHE_SIZE', 'QueryVectors')

QUERY_CACHE_SIZE = 256
"""Recent query vectors kept (least recently used dropped first)."""


class QueryVectors:
    """The query vectors of one surface's embedder, by the store key of the model in the current context."""

    def __init__(self, vectors: VectorHolder) -> None:
        self.vectors = vectors
        self._queries: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        """(store key of the model, query) -> its vector, the most recent `QUERY_CACHE_SIZE`."""

    async def vector(self, query: str) -> tuple[bytes | None, str | None]:
        """`(float32 vector of query, None)`, or `(None, reason)`: `'no-words'` (nothing to look for, by the
        core's rule `_core.nothing_to_find`: never embedded), `'query-timeout'`, `'embedder-error'` (each logged
        once until a query succeeds again). Recent vectors come from a bounded cache (`QUERY_CACHE_SIZE`)."""
        if nothing_to_find(query):
            return None, 'no-words'
        vectors = self.vectors
        model = vectors.current_key() or ''
        cached = self._queries.get((model, query))
        if cached is not None:
            self._queries.move_to_end((model, query))
            return cached, None
        embedder, timeout, log = vectors.embedder, vectors.config.query_timeout, vectors.log
        try:
            call = bounded(embedder.embedder.embed_query(query), timeout, 'embed_query')
            # On the embedding loop too: every embedder call of the process runs on one loop (a provider's HTTP
            # connections belong to the loop that opened them), in a copy of this search's context.
            result = await joined(asyncio.run_coroutine_threadsafe(call, embedding_loop()))
            if len(result.embeddings) != 1:
                raise ValueError(f'the embedder returned {len(result.embeddings)} vectors for one query')
            vector = vector_bytes(result.embeddings[0])
        except TimeoutError:
            log.warn(
                'query-timeout',
                f'ToolProxy query embedding with {embedder.describe()} took longer than {timeout:g} s; searching by '
                'keywords alone until it answers in time.',
            )
            return None, 'query-timeout'
        except Exception as e:
            log.warn(
                'query-error',
                f'ToolProxy query embedding with {embedder.describe()} failed ({e!r}); searching by keywords '
                'alone until it works.',
            )
            return None, 'embedder-error'
        log.ok('query-timeout')
        log.ok('query-error')
        self._queries[(model, query)] = vector
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return vector, None

    def cached(self, query: str) -> bytes | None:
        """The query's vector by the model of the current context if a recent search embedded it (no embedder
        call), else None."""
        return self._queries.get((self.vectors.current_key() or '', query))
