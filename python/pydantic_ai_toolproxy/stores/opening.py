"""`open_embedding_store` and `open_listing_store`: the store a `ToolProxyConfig.embedding_cache` or a `listing_cache`
setting names."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .._urls import POSTGRES_SCHEMES, is_postgres_url, looks_like_database_url, redacted
from .listings import ListingStore, SQLiteListingStore
from .paths import (
    CACHE_ENV,
    LISTING_CACHE_ENV,
    DefaultEmbeddingCache,
    default_embedding_cache_path,
    default_listing_cache_path,
)
from .sqlite import SQLiteEmbeddingStore

if TYPE_CHECKING:
    from .protocol import EmbeddingStore

__all__ = ('POSTGRES_SCHEMES', 'is_postgres_url', 'open_embedding_store', 'open_listing_store')


def _refuse_url_like(setting: object, field: str) -> None:
    if looks_like_database_url(setting):
        assert isinstance(setting, str)
        raise ValueError(
            f'{field} looks like a database URL but is not one libpq reads: {redacted(setting)}. Write it as '
            'postgresql://user:password@host:port/dbname (no +driver), or give a file path.'
        )


def open_embedding_store(setting: object) -> EmbeddingStore | None:
    """The store `setting` names: None (memory only: no store), `'default'`-like `DefaultEmbeddingCache` (the file
    `default_embedding_cache_path()` names, None when that is `off`), a `postgresql://` URL
    (`PostgresEmbeddingStore`), another str or path (`SQLiteEmbeddingStore`, `~` expanded), or a store object as
    is. Nothing is connected or opened here: the stores do that at first use, and fall back to memory there.

    Raises:
        ImportError: a PostgreSQL URL without the `postgres` extra installed (psycopg), saying what to install.
        ValueError: a string shaped like a URL that is not a PostgreSQL one (`postgresql+psycopg://`).
    """
    if isinstance(setting, DefaultEmbeddingCache):
        chosen = os.environ.get(CACHE_ENV, '').strip()
        if is_postgres_url(chosen) or looks_like_database_url(chosen):  # `$TOOLPROXY_EMBEDDING_CACHE` names a database
            return open_embedding_store(chosen)
        path = default_embedding_cache_path()
        return None if path is None else SQLiteEmbeddingStore(path)
    if setting is None:
        return None
    _refuse_url_like(setting, 'embedding_cache')
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
        ValueError: naming `field`, a string shaped like a URL that is not a PostgreSQL one (`postgresql+psycopg://`).
    """
    if setting is None:
        return None
    if isinstance(setting, str) and setting.strip().lower() == 'off':
        return None
    if isinstance(setting, str) and setting == 'default':
        chosen = os.environ.get(LISTING_CACHE_ENV, '').strip()
        if is_postgres_url(chosen) or looks_like_database_url(chosen):  # `$TOOLPROXY_LISTING_CACHE` names a database
            return open_listing_store(chosen, field=LISTING_CACHE_ENV)
        path = default_listing_cache_path()
        return None if path is None else SQLiteListingStore(path)
    _refuse_url_like(setting, field)
    if is_postgres_url(setting):
        assert isinstance(setting, str)
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
