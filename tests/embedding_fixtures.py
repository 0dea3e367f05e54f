"""A deterministic embedding model for hybrid-search tests (no torch, no model files) and a dict-backed store.

`BagOfWordsModel` embeds a text as a hashed bag of its words: each word (lower-cased, after `synonyms` maps it to
a concept word) adds 1 to one of `dimensions` coordinates chosen by blake2b. Texts sharing (concept) words have a
high cosine, so a test controls "meaning": with `synonyms={'umbrella': 'weather'}` the query "should I bring an
umbrella" is close to a weather tool whose text never says umbrella. Faults are switchable: `fail` raises on
every call of that kind, `delay` / `query_delay` sleep first; every call is recorded.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.usage import RequestUsage

_WORD = re.compile(r'[a-z0-9]+')


def bag_vector(text: str, dimensions: int, synonyms: Mapping[str, str]) -> list[float]:
    """The hashed bag of `text`'s words (see the module docstring); a text without words is the zero vector."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        word = synonyms.get(word, word)
        slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), 'little') % dimensions
        vector[slot] += 1.0
    return vector


@dataclass(eq=False)
class BagOfWordsModel(EmbeddingModel):
    """Deterministic `EmbeddingModel` (see the module docstring).

    Attributes:
        dimensions: Vector size.
        synonyms: Word -> concept word, applied before hashing.
        name: Reported `model_name` (the embedder identity is `bag:{name}`).
        max_tokens: What `max_input_tokens` answers (None: unknown); `count_tokens` counts words.
        fail: Raised by every document embedding call while set.
        query_fail: Raised by every query embedding call while set.
        delay: Seconds each document call sleeps first; `query_delay` the same for queries.
        query_dimensions: When set, query vectors have this size instead (a model that changed under a cache).
        calls: `(input_type, inputs)` of every call that returned.
    """

    dimensions: int = 64
    synonyms: Mapping[str, str] = field(default_factory=dict)
    name: str = 'bag'
    max_tokens: int | None = None
    fail: Exception | None = None
    query_fail: Exception | None = None
    delay: float = 0.0
    query_delay: float = 0.0
    query_dimensions: int | None = None
    calls: list[tuple[str, list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    @property
    def model_name(self) -> str:
        return self.name

    @property
    def system(self) -> str:
        return 'bag'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        texts, merged = self.prepare_embed(inputs, settings)
        wait, fail = (self.query_delay, self.query_fail) if input_type == 'query' else (self.delay, self.fail)
        if wait:
            await asyncio.sleep(wait)
        if fail is not None:
            raise fail
        dimensions = merged.get('dimensions') or self.dimensions
        if input_type == 'query' and self.query_dimensions is not None:
            dimensions = self.query_dimensions
        self.calls.append((input_type, list(texts)))
        return EmbeddingResult(
            [bag_vector(t, dimensions, self.synonyms) for t in texts],
            inputs=texts,
            input_type=input_type,
            model_name=self.name,
            provider_name='bag',
            usage=RequestUsage(input_tokens=sum(len(_WORD.findall(t.lower())) for t in texts)),
        )

    async def max_input_tokens(self) -> int | None:
        return self.max_tokens

    async def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text.lower()))

    def documents(self) -> list[str]:
        """Every document text embedded so far, in call order."""
        return [t for kind, texts in self.calls if kind == 'document' for t in texts]


class DictStore:
    """An `EmbeddingStore` over a dict, counting reads and writes; `broken` makes every call raise."""

    def __init__(self) -> None:
        self.data: dict[tuple[str, bytes], bytes] = {}
        self.reads = 0
        self.writes = 0
        self.broken: Exception | None = None

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        if self.broken is not None:
            raise self.broken
        self.reads += 1
        return {h: self.data[(model, h)] for h in hashes if (model, h) in self.data}

    def put_many(self, model: str, items: Mapping[bytes, bytes]) -> None:
        if self.broken is not None:
            raise self.broken
        self.writes += 1
        for h, v in items.items():
            self.data[(model, h)] = v


@dataclass(eq=False)
class HangingModel(BagOfWordsModel):
    """A `BagOfWordsModel` whose calls named in `hang` never return while they are named there: they await an
    `asyncio.Event` nobody sets (a provider that accepted the request and went silent). Names: `document`,
    `query` (`embed` by input type), `count_tokens`, `max_input_tokens`. `hung` counts the calls that hung. With
    `in_thread`, a call hangs in a worker thread instead (`asyncio.to_thread` of a wait nobody ends), as a local model
    stuck in `run_in_executor` would: cancelling the await does not end the thread."""

    hang: set[str] = field(default_factory=lambda: {'document'})
    hung: int = 0
    in_thread: bool = False

    async def _maybe_hang(self, call: str) -> None:
        if call in self.hang:
            self.hung += 1
            if self.in_thread:
                await asyncio.to_thread(threading.Event().wait)
            await asyncio.Event().wait()

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        await self._maybe_hang(input_type)
        return await super().embed(inputs, input_type=input_type, settings=settings)

    async def max_input_tokens(self) -> int | None:
        await self._maybe_hang('max_input_tokens')
        return await super().max_input_tokens()

    async def count_tokens(self, text: str) -> int:
        await self._maybe_hang('count_tokens')
        return await super().count_tokens(text)


@dataclass(eq=False)
class UnnamedModel(BagOfWordsModel):
    """A `BagOfWordsModel` reporting `model_name` `unknown`, as Pydantic AI's `SentenceTransformerEmbeddingModel`
    does for a `SentenceTransformer` loaded from a folder without a model card; `system` is `sentence-transformers`
    (no torch needed: only the name matters here)."""

    name: str = 'unknown'

    @property
    def system(self) -> str:
        return 'sentence-transformers'
