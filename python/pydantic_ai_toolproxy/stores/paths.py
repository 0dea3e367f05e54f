"""Where the embedded default stores live: `default_embedding_cache_path`, `default_listing_cache_path`."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ('CACHE_ENV', 'LISTING_CACHE_ENV', 'default_embedding_cache_path', 'default_listing_cache_path')

CACHE_ENV = 'TOOLPROXY_EMBEDDING_CACHE'
"""The environment variable naming the default cache file; the value `off` turns the default cache off."""
LISTING_CACHE_ENV = 'TOOLPROXY_LISTING_CACHE'
"""The environment variable naming the default MCP listing cache file (`off`: no listing cache)."""


def _xdg_folder() -> Path:
    xdg = os.environ.get('XDG_CACHE_HOME', '')
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / '.cache') / 'pydantic-ai-toolproxy'


def default_embedding_cache_path() -> Path | None:
    """The default cache file: `$TOOLPROXY_EMBEDDING_CACHE` when set (`off` turns the default cache off: None),
    else `$XDG_CACHE_HOME/pydantic-ai-toolproxy/embeddings.sqlite3`, with `~/.cache` when `XDG_CACHE_HOME` is
    unset or not an absolute path (the XDG rule). Read at each call, not at import.

    ```python
    import os

    from pydantic_ai_toolproxy import default_embedding_cache_path

    os.environ['TOOLPROXY_EMBEDDING_CACHE'] = '/srv/cache/vectors.sqlite3'
    assert str(default_embedding_cache_path()) == '/srv/cache/vectors.sqlite3'
    os.environ['TOOLPROXY_EMBEDDING_CACHE'] = 'off'
    assert default_embedding_cache_path() is None
    del os.environ['TOOLPROXY_EMBEDDING_CACHE']
    assert default_embedding_cache_path().name == 'embeddings.sqlite3'
    ```
    """
    chosen = os.environ.get(CACHE_ENV, '')
    if chosen.strip().lower() == 'off':
        return None
    if chosen:
        return Path(chosen).expanduser()
    return _xdg_folder() / 'embeddings.sqlite3'


def default_listing_cache_path() -> Path | None:
    """The default listing cache file: `$TOOLPROXY_LISTING_CACHE` when set (`off`: no cache, None), else
    `mcp-listings.sqlite3` beside the default embedding cache (`$XDG_CACHE_HOME/pydantic-ai-toolproxy/`, with
    `~/.cache` when `XDG_CACHE_HOME` is unset; the folder of `$TOOLPROXY_EMBEDDING_CACHE` when that names a file).
    Read at each call."""
    chosen = os.environ.get(LISTING_CACHE_ENV, '')
    if chosen.strip().lower() == 'off':
        return None
    if chosen:
        return Path(chosen).expanduser()
    beside = default_embedding_cache_path()
    folder = _xdg_folder() if beside is None else beside.parent  # embedding cache off: the XDG folder all the same
    return folder / 'mcp-listings.sqlite3'
