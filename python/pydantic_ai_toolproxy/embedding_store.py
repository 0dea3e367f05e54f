"""Where tool vectors are kept between runs: the `EmbeddingStore` interface and its implementations.

This is the public import path of the stores, which live in `pydantic_ai_toolproxy.stores` (one module each):

- `EmbeddingStore`: the interface (two methods; optional `shared`, claims and `describe`, see
  `stores.protocol`). Implement it to share vectors through a database of your own.
- `SQLiteEmbeddingStore(path)`: the embedded default, one SQLite file (standard-library `sqlite3`, WAL), safe for
  several processes of one machine at once. A file that is corrupt, locked, read-only or of another format makes
  the store keep vectors in memory instead, with one warning on the `pydantic_ai_toolproxy` logger; it never
  fails a run.
- `PostgresEmbeddingStore(url_or_pool)`: one PostgreSQL database shared by a fleet of workers on many machines
  (the `postgres` extra). A database that is down, refuses the login or is read-only: vectors in memory meanwhile,
  one warning, a retry later.
- `MemoryEmbeddingStore()`: vectors in this process only (what "no cache" means).
- `default_embedding_cache_path()`: `$TOOLPROXY_EMBEDDING_CACHE`, else
  `$XDG_CACHE_HOME/pydantic-ai-toolproxy/embeddings.sqlite3`, else the platform's cache folder (`~/.cache` on
  Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .stores.memory import MemoryEmbeddingStore
from .stores.paths import CACHE_ENV, default_embedding_cache_path
from .stores.protocol import ClaimingStore, EmbeddingStore
from .stores.sqlite import FORMAT_VERSION, SQLiteEmbeddingStore

if TYPE_CHECKING:
    from .stores.postgres import PostgresEmbeddingStore

__all__ = (
    'CACHE_ENV',
    'FORMAT_VERSION',
    'ClaimingStore',
    'EmbeddingStore',
    'MemoryEmbeddingStore',
    'PostgresEmbeddingStore',
    'SQLiteEmbeddingStore',
    'default_embedding_cache_path',
)


def __getattr__(name: str) -> Any:
    """`PostgresEmbeddingStore`, imported on first use (psycopg is the optional `postgres` extra).

    Raises:
        ImportError: psycopg is not installed (`pip install 'pydantic-ai-toolproxy[postgres]'`).
    """
    if name == 'PostgresEmbeddingStore':
        from .stores.postgres import PostgresEmbeddingStore

        return PostgresEmbeddingStore
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
