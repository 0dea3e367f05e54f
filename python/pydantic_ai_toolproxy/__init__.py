"""Group huge Pydantic AI tool collections behind two control tools.

Public API: `ToolProxyCapability`, `ToolProxyGroup`, `ToolProxyConfig`, and for a13n-harness hosts
`ToolProxyPlan` / `ToolProxySelection` (applied with `plan.apply(definition)` or
`pydantic_ai_toolproxy.harness.build`), and `SearchExplanation` / `TermMatch` from
`ToolProxyCapability.explain`; for hybrid search, where tool vectors are kept: the `EmbeddingStore` interface,
`SQLiteEmbeddingStore` (the embedded default), `MemoryEmbeddingStore` and `default_embedding_cache_path()` (the
default file), and `LocalEmbeddingModel` (a sentence-transformers model folder run with numpy, no torch: the
embedder `local:PATH`, the `local` extra); and `search_strategy` (this package's ranking for Pydantic AI's own
`ToolSearch`). `__version__` is
the Rust extension's, from Cargo.toml (the one place it is written; maturin gives the wheel the same). The
names are imported at first use (`import pydantic_ai_toolproxy` alone loads neither Pydantic AI nor the core).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .capability import ToolProxyCapability
    from .config import ToolProxyConfig
    from .embedding_store import (
        EmbeddingStore,
        MemoryEmbeddingStore,
        SQLiteEmbeddingStore,
        default_embedding_cache_path,
    )
    from .embeddings import LocalEmbeddingModel
    from .explain import SearchExplanation, TermMatch
    from .group import ToolProxyGroup
    from .plan import ToolProxyPlan, ToolProxySelection
    from .search.strategy import ToolProxySearchStrategy, search_strategy

    __version__: str

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

_HOMES = {
    'EmbeddingStore': '.embedding_store',
    'MemoryEmbeddingStore': '.embedding_store',
    'SQLiteEmbeddingStore': '.embedding_store',
    'default_embedding_cache_path': '.embedding_store',
    'LocalEmbeddingModel': '.embeddings',
    'SearchExplanation': '.explain',
    'TermMatch': '.explain',
    'ToolProxyCapability': '.capability',
    'ToolProxyConfig': '.config',
    'ToolProxyGroup': '.group',
    'ToolProxyPlan': '.plan',
    'ToolProxySelection': '.plan',
    'ToolProxySearchStrategy': '.search.strategy',
    'search_strategy': '.search.strategy',
}
"""Public name -> the module defining it: imported at first use, so `toolproxy --help` (the `cli` subpackage)
loads neither Pydantic AI nor the Rust core."""


def __getattr__(name: str) -> Any:
    if name == '__version__':
        from . import _core

        value: Any = _core.__version__
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    else:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, '__version__'})
