"""`open_embedding_store` and `open_listing_store`: the store a `ToolProxyConfig.embedding_cache` or a `listing_cache`
setting names."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..config import DefaultEmbeddingCache
from .listings import ListingStore, SQLiteListingStore
from .paths import default_embedding_cache_path, default_listing_cache_path
from .sqlite import SQLiteEmbeddingStore

if TYPE_CHECKING:
    from .protocol import EmbeddingStore

__all__ = ('POSTGRES_SCHEMES', 'is_postgres_url', 'open_embedding_store', 'open_listing_store')

POSTGRES_SCHEMES = ('postgresql://', 'postgres://')
"""The URL schemes that name a PostgreSQL database (libpq's connection URIs)."""


def is_postgres_url(value: object) -> bool:
    """Whether `value` is a str naming a PostgreSQL database (`postgresql://...` or `postgres://...`)."""
    return isinstance(value, str) and value.strip().lower().startswith(POSTGRES_SCHEMES)


def open_embedding_store(setting: object) -> EmbeddingStore | None:
    """The store `setting` names: None (memory only: no store), `'default'`-like `DefaultEmbeddingCache` (the file
    `default_embedding_cache_path()` names, None when that is `off`), a `postgresql://` URL
    (`PostgresEmbeddingStore`), another str or path (`SQLiteEmbeddingStore`, `~` expanded), or a store object as
    is. Nothing is connected or opened here: the stores do that at first use, and fall back to memory there.

    Raises:
        ImportError: a PostgreSQL URL without the `postgres` extra installed (psycopg), saying what to install.
    """
    if isinstance(setting, DefaultEmbeddingCache):
        path = default_embedding_cache_path()
        return None if path is None else SQLiteEmbeddingStore(path)
    if setting is None:
        return None
    if is_postgres_url(setting):
        from .postgres import PostgresEmbeddingStore

        assert isinstance(setting, str)
        return PostgresEmbeddingStore(setting)
    if isinstance(setting, (str, os.PathLike)):
        return SQLiteEmbeddingStore(setting)
    return setting  # type: ignore[return-value]


def open_listing_store(setting: object, *, field: str = 'listing_cache') -> ListingStore | None:
    """The store a `listing_cache` setting names: `'default'` (`default_listing_cache_path`), a path (`~` expanded),
    `'off'` or None (no cache), a `postgresql://` URL (`PostgresListingStore`, needs the `postgres` extra),
    or a `ListingStore` object as is.

    Raises:
        TypeError: naming `field`, for a value of another type.
    """
    if setting is None:
        return None
    if isinstance(setting, str) and setting.strip().lower() == 'off':
        return None
    if isinstance(setting, str) and setting == 'default':
        path = default_listing_cache_path()
        return None if path is None else SQLiteListingStore(path)
    if isinstance(setting, str) and setting.startswith(('postgresql://', 'postgres://')):
        from .postgres import PostgresListingStore

        return PostgresListingStore(setting)
    if isinstance(setting, (str, os.PathLike)):
        return SQLiteListingStore(setting)
    if isinstance(setting, ListingStore):
        return setting
    raise TypeError(
        f"{field} must be a path, 'default', 'off', None or an object with get(key) and put(key, listing), "
        f'got {type(setting).__name__}'
    )
