"""Embedding models of this package, one module per family: `local` (`LocalEmbeddingModel`, a sentence-transformers
model folder run with numpy, no torch; the `local` extra)."""

from .local import LocalEmbeddingModel

__all__ = ('LocalEmbeddingModel',)
