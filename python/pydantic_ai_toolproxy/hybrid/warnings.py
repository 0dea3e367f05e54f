"""Hybrid search's warnings: each kind logged once on the `pydantic_ai_toolproxy` logger until that kind succeeds
again, and why a search of a surface with an embedder ranked by keywords. Nothing of it reaches the model."""

from __future__ import annotations

import logging

__all__ = ('FALLBACK_REASONS', 'UNNAMED', 'LogOnce', 'logger')

logger = logging.getLogger('pydantic_ai_toolproxy')

FALLBACK_REASONS: dict[str, str] = {
    'query-timeout': "the query's embedding took longer than query_timeout",
    'embedder-error': 'the embedder failed on the query (its warning says why)',
    'no-vectors': 'no tool has a vector yet (the embedder is still working, or failing: see its warnings; or '
    'the cache holds vectors of other tool texts than this agent computes, e.g. other group descriptions)',
    'dimensions': "the query vector's size differs from the tools' vectors",
}
"""Why a search of a surface with an embedder ranked by keywords (`hybrid.ranking.Ranking.reason`), as logged once."""

CAUSES = frozenset({'embed', 'query-timeout', 'query-error', 'dimensions', 'store-value'})
"""Kinds whose warning already says why searches rank by keywords (a fallback then logs nothing more)."""

UNNAMED = (
    'ToolProxy embedding model {model} has no name of its own (model_name {name!r}), so its tool vectors stay in '
    "memory and the embedding cache is not used: another unnamed model's vectors would be read as its own. Name it: "
    "for a SentenceTransformer loaded from a folder, set st.model_card_data.model_id = 'org/model' before "
    "SentenceTransformerEmbeddingModel(st), or pass the folder path (SentenceTransformerEmbeddingModel('/path/to/"
    "model')); a model class of your own should return a distinct model_name."
)
"""The warning for a model without a name (`ResolvedEmbedder.named`) when a shared store is configured."""


class LogOnce:
    """The warnings of one surface's tool vectors: `warn` logs a kind once, until `ok` says it succeeded again."""

    def __init__(self) -> None:
        self.warned: set[str] = set()
        """The kinds logged and not succeeded since."""

    def warn(self, kind: str, message: str) -> None:
        """Log `message` unless a warning of `kind` was logged and has not succeeded since."""
        if kind not in self.warned:
            self.warned.add(kind)
            logger.warning(message)

    def ok(self, kind: str) -> None:
        """`kind` succeeded: its next failure is logged again."""
        self.warned.discard(kind)

    def ranked(self, reason: str | None, with_vectors: int, tools: int) -> None:
        """Note one search's ranking: a search that fell back to keywords (`reason`, not a query with nothing to
        look for) logs one warning per reason until a search ranks hybrid again, naming the reason and how many
        tools lack vectors, unless the cause was logged already (an embedder failure or timeout, a dimension
        change): the silent case is a cache that holds no vector of the texts this agent computes while the
        embedder is still at work."""
        if reason is None:
            for kind in FALLBACK_REASONS:
                self.ok(f'fallback:{kind}')
            return
        why = FALLBACK_REASONS.get(reason)
        if why is None:  # 'browse', 'no-words': a query with nothing to look for is never ranked by meaning
            return
        if self.warned & CAUSES:
            return  # the cause was logged already, with what to do
        self.warn(
            f'fallback:{reason}',
            f'hybrid search ranked by keywords only ({reason}: {why}); {tools - with_vectors:,} of {tools:,} tools '
            'lack a vector. Logged once until a search ranks by meaning again.',
        )
