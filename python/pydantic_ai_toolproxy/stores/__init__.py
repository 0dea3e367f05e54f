"""Where tool vectors and MCP listings are kept between runs and shared between processes.

Embedding a tool collection costs an embedder call per tool, and listing an MCP server costs starting it; a store
keeps each vector (and each server's listing) so that a restart, a second worker process, another machine of a
fleet or the `toolproxy` CLI does not pay again. A vector is keyed by the embedder (`model`: the embedder identity,
`:` and its dimensions setting, `native` for the model's own size, e.g. `'openai:text-embedding-3-small:native'`)
and by the hash of the text it embeds (`hash`: 16 bytes of BLAKE2b over the text's UTF-8); the value is the vector
as little-endian float32 bytes (`4 * dimensions` bytes). A store never sees a tool's text, only its hash.

One module a concept:

- `protocol`: `EmbeddingStore` (two methods), the optional `ClaimingStore` claims, and `is_shared`,
  `supports_claims`, `describe_store`, which read what a store says of itself.
- `memory`: `MemoryEmbeddingStore`, this process only (what "no cache" means, and every store's fallback).
- `sqlite`: `SQLiteEmbeddingStore(path)`, the embedded default: one file, safe for the processes of one machine.
- `postgres`: `PostgresEmbeddingStore(url_or_pool)` and `PostgresListingStore`, one database for a fleet of
  machines (the `postgres` extra: psycopg 3).
- `postgres_db`: the database both PostgreSQL stores use: connections, tables, faults and their pause.
- `paths`: `default_embedding_cache_path()`, `default_listing_cache_path()`.
- `listings`: the MCP listing stores (`ListingStore`, `ServerListing`, memory and SQLite).
- `opening`: `open_embedding_store(setting)`, what `ToolProxyConfig.embedding_cache` names.

A store that fails (a damaged file, a database that is down, refuses the login or is read-only) never fails a run:
it serves what it can, keeps the rest in memory and logs one warning on the `pydantic_ai_toolproxy` logger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .listings import DEFAULT_MAX_AGE, ListingStore, MemoryListingStore, ServerListing, SQLiteListingStore
from .memory import MemoryEmbeddingStore
from .opening import open_embedding_store
from .paths import CACHE_ENV, LISTING_CACHE_ENV, default_embedding_cache_path, default_listing_cache_path
from .protocol import ClaimingStore, EmbeddingStore, describe_store, is_shared, supports_claims
from .sqlite import FORMAT_VERSION, SQLiteEmbeddingStore

if TYPE_CHECKING:
    from .postgres import PostgresEmbeddingStore, PostgresListingStore

__all__ = (
    'CACHE_ENV',
    'DEFAULT_MAX_AGE',
    'FORMAT_VERSION',
    'LISTING_CACHE_ENV',
    'ClaimingStore',
    'EmbeddingStore',
    'ListingStore',
    'MemoryEmbeddingStore',
    'MemoryListingStore',
    'PostgresEmbeddingStore',
    'PostgresListingStore',
    'SQLiteEmbeddingStore',
    'SQLiteListingStore',
    'ServerListing',
    'default_embedding_cache_path',
    'default_listing_cache_path',
    'describe_store',
    'is_shared',
    'open_embedding_store',
    'supports_claims',
)


def __getattr__(name: str) -> Any:
    """The PostgreSQL stores, imported on first use (psycopg is the optional `postgres` extra)."""
    if name in ('PostgresEmbeddingStore', 'PostgresListingStore'):
        from . import postgres

        return getattr(postgres, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
