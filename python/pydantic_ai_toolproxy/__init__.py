"""Group huge Pydantic AI tool collections behind two control tools.

Public API: `ToolProxyCapability`, `ToolProxyGroup`, `ToolProxyConfig`, and for a13n-harness hosts
`ToolProxyPlan` / `ToolProxySelection` (applied with `plan.apply(definition)` or
`pydantic_ai_toolproxy.harness.build`), and `SearchExplanation` / `TermMatch` from
`ToolProxyCapability.explain`; for hybrid search, where tool vectors are kept: the `EmbeddingStore` interface,
`SQLiteEmbeddingStore` (the embedded default), `MemoryEmbeddingStore` and `default_embedding_cache_path()` (the
default file), and `LocalEmbeddingModel` (a sentence-transformers model folder run with numpy, no torch: the
embedder `local:PATH`, the `local` extra); and `search_strategy` (this package's ranking for Pydantic AI's own `ToolSearch`). `__version__` is
the Rust extension's, from Cargo.toml (the one place it is written; maturin gives the wheel the same).
"""

from . import _core
from ._strategy import ToolProxySearchStrategy, search_strategy
from .capability import ToolProxyCapability
from .config import ToolProxyConfig
from .embedding_store import EmbeddingStore, MemoryEmbeddingStore, SQLiteEmbeddingStore, default_embedding_cache_path
from .embeddings import LocalEmbeddingModel
from .explain import SearchExplanation, TermMatch
from .group import ToolProxyGroup
from .plan import ToolProxyPlan, ToolProxySelection

__all__ = (
    'EmbeddingStore',
    'LocalEmbeddingModel',
    'MemoryEmbeddingStore',
    'SQLiteEmbeddingStore',
    'SearchExplanation',
    'TermMatch',
    'ToolProxyCapability',
    'ToolProxyConfig',
    'ToolProxyGroup',
    'ToolProxyPlan',
    'ToolProxySearchStrategy',
    'ToolProxySelection',
    'default_embedding_cache_path',
    'search_strategy',
)
__version__: str = _core.__version__
