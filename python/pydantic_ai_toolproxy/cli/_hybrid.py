"""What the CLI shows of hybrid search: the embedder, its cache, and how many tools already have a vector there.

Shared by `toolproxy inspect` (how many of the surface's tools have a cached vector, without calling the embedder),
`toolproxy embed` (fill the cache) and `toolproxy search` (embed what is missing before it searches).
"""

from __future__ import annotations

from typing import Any

from ..capability import ToolProxyCapability
from ..hybrid.vectors import ToolVectors
from ..stores.protocol import EmbeddingStore, describe_store
from ._embed import surface_texts

__all__ = ('cache_info', 'cached_coverage', 'describe_cache', 'quiet_vectors')


def quiet_vectors(capability: ToolProxyCapability[Any]) -> ToolVectors | None:
    """The capability's tool vectors (None without an embedder), with background embedding off: a probe run over
    it then never calls the embedder (only `embed_surface` does)."""
    vectors = capability.tool_vectors
    if vectors is not None:
        vectors.background = False
    return vectors


def cache_info(store: EmbeddingStore | None, store_key: str) -> dict[str, Any]:
    """The `cache` object of the JSON documents: what the store says of itself (`stores.describe_store`): `kind`
    (`file`, `postgres`, `memory` or `custom`), for a file its `path`, `vectors` (how many it holds for
    `store_key`), `fell_back` and `fault`; for PostgreSQL its `database` (no password), `vectors` and `fault`."""
    return describe_store(store, store_key)


def describe_cache(info: dict[str, Any]) -> str:
    """One line for `info` (`cache_info`): where the vectors are and what it holds, `memory only`, or the custom
    store."""
    kind = info['kind']
    if kind == 'memory':
        return 'none (memory only)'
    if kind == 'file':
        if info.get('fell_back'):
            return f'{info["path"]} cannot be used ({info["fault"]}): vectors stay in memory'
        return f'{info["path"]} ({info["vectors"]:,} vectors of this embedder)'
    if kind == 'postgres':
        if info.get('vectors') is None:
            return f'{info["database"]} cannot be used ({info.get("fault")}): vectors stay in memory'
        return f'{info["database"]} ({info["vectors"]:,} vectors of this embedder)'
    fault = f', {info["fault"]}' if info.get('fault') else ''
    return f'{info.get("store", kind)} (a custom EmbeddingStore{fault})'


async def cached_coverage(
    capability: ToolProxyCapability[Any], vectors: ToolVectors, tools: dict[str, Any]
) -> dict[str, Any]:
    """The `hybrid` object of `toolproxy inspect --json`: `embedder` (identity), `store_key`, `semantic_weight`,
    `cache` (`cache_info`), `tools` (distinct tool texts of the surface) and `with_vectors` (how many of them have a
    vector in this process or the cache: what a search would not have to embed; a damaged stored vector counts as
    none). Never calls the embedder."""
    texts = surface_texts(capability, tools)
    store = vectors.stores.store()
    key = vectors.embedder.store_key
    known = {fp for fp in texts if fp in vectors.memory}
    missing = [fp for fp in texts if fp not in known]
    known.update(vectors.stores.get_now(key, missing))
    return {
        'embedder': vectors.embedder.identity,
        'store_key': key,
        'semantic_weight': vectors.weight,
        'cache': cache_info(store, key),
        'tools': len(texts),
        'with_vectors': len(known),
    }
