"""Resolving `ToolProxyConfig.embedder` to a Pydantic AI `Embedder`, its identity, and vector conversions.

Identity: `f'{model.system}:{model.model_name}'`, plus `:dimensions=N` when the settings fix the output size; the
store key (`EmbeddingStore` `model`) is the identity + `:` + the dimensions (`native` when the model's own). A
vector crosses to the Rust core as little-endian float32 bytes (`vector_bytes`).
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence
from typing import Any

from pydantic_ai.embeddings import Embedder, EmbeddingModel, infer_embedding_model, merge_embedding_settings

__all__ = ('ResolvedEmbedder', 'vector_bytes')


def vector_bytes(vector: Sequence[float]) -> bytes:
    """`vector` as little-endian float32 bytes (4 bytes per dimension).

    Raises:
        ValueError: the vector is empty or holds a non-finite value (NaN, infinity, or a float beyond float32).
    """
    if not vector:
        raise ValueError('the embedder returned an empty vector')
    packed = array('f', vector)
    if not all(math.isfinite(x) for x in packed):
        raise ValueError('the embedder returned a vector with a non-finite value')
    if sys.byteorder != 'little':  # pragma: no cover - every supported platform is little-endian
        packed.byteswap()
    return packed.tobytes()


class ResolvedEmbedder:
    """One configured embedder, resolved when first used (a model name builds its provider then, so a missing
    API key shows as a logged fallback at the first search, not as an error at configuration).

    Attributes:
        embedder: The `Embedder` that embeds (the configured one, or one built around the model or name).
    """

    def __init__(self, value: Embedder | EmbeddingModel | str) -> None:
        self._value = value
        self._embedder: Embedder | None = value if isinstance(value, Embedder) else None
        self._identity: str | None = None
        self._store_key: str | None = None

    @property
    def embedder(self) -> Embedder:
        """The `Embedder` to call (built on first access; a model name is resolved by `infer_embedding_model`).

        Raises:
            Exception: whatever Pydantic AI raises resolving a model name (unknown provider, missing API key).
        """
        if self._embedder is None:
            value = self._value
            model = value if isinstance(value, EmbeddingModel) else infer_embedding_model(str(value))
            self._embedder = Embedder(model)
        return self._embedder

    def _model(self) -> EmbeddingModel:
        model = self.embedder.model
        if isinstance(model, EmbeddingModel):
            return model
        return infer_embedding_model(model)

    def _dimensions_setting(self) -> int | None:
        model = self._model()
        own: Any = getattr(self.embedder, '_settings', None)
        settings = merge_embedding_settings(model.settings, own) or {}
        dimensions = settings.get('dimensions')
        return dimensions if isinstance(dimensions, int) and not isinstance(dimensions, bool) else None

    @property
    def identity(self) -> str:
        """`system:model_name` (plus `:dimensions=N` when set), e.g. `openai:text-embedding-3-small`."""
        if self._identity is None:
            model = self._model()
            dimensions = self._dimensions_setting()
            identity = f'{model.system}:{model.model_name}'
            self._identity = identity if dimensions is None else f'{identity}:dimensions={dimensions}'
        return self._identity

    @property
    def store_key(self) -> str:
        """The `EmbeddingStore` model key: the identity + `:` + the dimensions (`native` for the model's own)."""
        if self._store_key is None:
            dimensions = self._dimensions_setting()
            self._store_key = f'{self.identity}:{"native" if dimensions is None else dimensions}'
        return self._store_key

    def describe(self) -> str:
        """The identity, or a short description when it cannot be resolved (for log messages)."""
        try:
            return self.identity
        except Exception:
            return repr(self._value)[:200]
