"""Embedding tool texts in batches within the model's limits: each text cut to the model's `max_input_tokens`,
at most `BATCH_INPUTS` texts and `BATCH_TOKENS` estimated tokens per `embed_documents` call, a refused text
isolated by halving its batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic_ai.usage import RequestUsage

from .embedder import EmbedderTimeout, bounded, vector_bytes

if TYPE_CHECKING:
    from .protocol import VectorHolder

__all__ = ('BATCH_INPUTS', 'BATCH_TOKENS', 'MAX_FAILED_CALLS', 'EmbedCounts', 'TextBatches')

BATCH_INPUTS = 64
"""Most texts in one `embed_documents` call."""
BATCH_TOKENS = 100_000
"""Most estimated tokens in one `embed_documents` call (providers cap a request's total, e.g. OpenAI at 300,000)."""
MAX_FAILED_CALLS = 8
"""Failed `embed_documents` calls in a row after which a pass stops (an outage): halving a batch of `BATCH_INPUTS`
texts down to one refused text fails at most log2(64) + 1 = 7 times in a row."""


@dataclass
class EmbedCounts:
    """What one embedding pass did (`cli._embed.embed_surface`, and the CLI's `toolproxy embed`).

    Attributes:
        tools: Distinct tool texts of the surface.
        embedded: Texts embedded by the embedder in this pass.
        cached: Texts whose vector came from memory or the store.
        cut: Texts cut to the model's `max_input_tokens` before embedding (their vector covers the kept start).
        failed: Texts left without a vector (an embedder error; see the log).
        usage: The embedder's token usage, summed over its calls.
        seconds: Wall time of the pass.
        error: The embedder's error that stopped the pass (`repr`, at most 500 characters), or None.
    """

    tools: int = 0
    embedded: int = 0
    cached: int = 0
    cut: int = 0
    failed: int = 0
    usage: RequestUsage = field(default_factory=RequestUsage)
    seconds: float = 0.0
    error: str | None = None


class TextBatches:
    """The tool-text side of one surface's embedder: its token limit (asked once), token counts, and `embed_texts`,
    which hands each batch's vectors to `vectors` (attached, stored) as it arrives."""

    def __init__(self, vectors: VectorHolder) -> None:
        self.vectors = vectors
        self._max_tokens: int | None = None
        self._asked_limit = False

    async def limit(self) -> int | None:
        """The model's `max_input_tokens` (asked once; an error or an answer that is no count: unknown).

        Raises:
            EmbedderTimeout: no answer within `embedding_timeout` (asked again at the next pass).
        """
        if not self._asked_limit:
            try:
                call = self.vectors.embedder.embedder.max_input_tokens()
                limit = await bounded(call, self.vectors.config.embedding_timeout, 'max_input_tokens')
            except EmbedderTimeout:
                raise
            except Exception:
                limit = None
            usable = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
            self._max_tokens = limit if usable else None  # a bool, a float or a non-positive count: unknown
            self._asked_limit = True
        return self._max_tokens

    async def fit(self, text: str, limit: int | None) -> tuple[str, bool, int]:
        """`(text cut to `limit` tokens, whether it was cut, its estimated tokens)`."""
        size = len(text.encode('utf-8', 'surrogatepass'))
        if limit is None or size + 2 <= limit:  # a token is at least one byte, plus a model's two special tokens
            return text, False, size // 3 + 1
        count = await self.count(text)
        if count < limit:
            return text, False, count
        if count == limit:  # the tokenizer may have truncated by itself (sentence-transformers does)
            return text, True, count
        cut = text
        for _ in range(6):
            cut = cut[: max(1, int(len(cut) * limit / count * 0.95))]
            count = await self.count(cut)
            if count <= limit:
                break
        else:
            cut = cut[: max(1, limit)]
        return cut, True, min(count, limit)

    async def count(self, text: str) -> int:
        """`text`'s tokens by the model's `count_tokens` (estimated when it cannot count).

        Raises:
            EmbedderTimeout: no answer within `embedding_timeout`.
        """
        try:
            call = self.vectors.embedder.embedder.count_tokens(text)
            return await bounded(call, self.vectors.config.embedding_timeout, 'count_tokens')
        except EmbedderTimeout:
            raise
        except Exception:  # NotImplementedError, UserError: this model cannot count; estimate (~3 bytes a token)
            return len(text.encode('utf-8', 'surrogatepass')) // 3 + 1

    async def embed_texts(
        self, texts: Mapping[bytes, str], counts: EmbedCounts, progress: Callable[[int], None] | None = None
    ) -> dict[bytes, bytes]:
        """Embed `texts` (fingerprint -> text) in batches of at most `BATCH_INPUTS` texts and `BATCH_TOKENS`
        estimated tokens, each text cut to the model's `max_input_tokens`. Each batch's vectors are attached
        (`ToolVectors.apply`, taking its lock) and stored as it arrives; counts go into `counts` (embedded, cut,
        usage). `progress(n)` after each batch of `n`. Returns the vectors embedded.

        A failed call (an error, or a malformed answer: wrong count, non-finite values) is split in halves and
        retried, so a text the provider refuses (one over a limit `max_input_tokens` did not tell) costs only its
        own vector; the pass goes on and raises that error at its end. `MAX_FAILED_CALLS` failures in a row (more
        than isolating one refused text takes) are an outage: the pass stops there. So is one call (`embed_documents`,
        `count_tokens`, `max_input_tokens`) past `embedding_timeout` (`EmbedderTimeout`, never split).

        Raises:
            Exception: the embedder's error, or ValueError for a malformed answer or another dimensionality; every
                vector embedded before (or, for refused texts, besides) it is kept.
        """
        vectors = self.vectors
        limit = await self.limit()
        embedder = vectors.embedder.embedder
        key = vectors.current_key()  # the model that embeds here (the context's override, if any)
        out: dict[bytes, bytes] = {}
        batch: list[tuple[bytes, str]] = []
        tokens = 0
        failures = 0  # failed calls since the last one that answered
        refusal: list[Exception] = []

        async def send(items: list[tuple[bytes, str]]) -> None:
            nonlocal failures
            inputs = [t for _, t in items]
            try:
                call = embedder.embed_documents(inputs)
                what = f'embed_documents of {len(inputs)} text{"s" if len(inputs) != 1 else ""}'
                result = await bounded(call, vectors.config.embedding_timeout, what)
                if len(result.embeddings) != len(inputs):
                    raise ValueError(f'the embedder returned {len(result.embeddings)} vectors for {len(inputs)} texts')
                found = {fp: vector_bytes(v) for (fp, _), v in zip(items, result.embeddings, strict=True)}
            except EmbedderTimeout:
                raise  # a call that does not answer is an outage: halving would wait the bound once per half
            except Exception as e:
                failures += 1
                if failures >= MAX_FAILED_CALLS:
                    raise  # more failures in a row than halving a batch down to one refused text takes: an outage
                if len(items) == 1:
                    refusal.append(e)
                    return
                half = len(items) // 2
                await send(items[:half])
                await send(items[half:])
                return
            failures = 0
            counts.usage.incr(result.usage)
            vectors.usage.incr(result.usage)
            counts.embedded += len(found)
            vectors.embedded += len(found)
            with vectors.lock:
                if found and (vectors.held_key is None or key == vectors.held_key):
                    vectors.dimension_policy.adopt_dimensions(len(next(iter(found.values()))) // 4)
                vectors.apply(found, key)
            await vectors.stores.put(found, key)
            out.update(found)
            if progress is not None:
                progress(len(found))

        async def flush() -> None:
            nonlocal tokens
            if batch:
                await send(list(batch))
            batch.clear()
            tokens = 0

        for fingerprint, text in texts.items():
            fitted, was_cut, estimate = await self.fit(text, limit)
            if was_cut:
                counts.cut += 1
                vectors.cut += 1
            if batch and (len(batch) >= BATCH_INPUTS or tokens + estimate > BATCH_TOKENS):
                await flush()
            batch.append((fingerprint, fitted))
            tokens += estimate
        await flush()
        if refusal:
            raise refusal[0]
        return out
