"""Where the embedded default stores live: `default_embedding_cache_path`, `default_listing_cache_path`, and
`DEFAULT_EMBEDDING_CACHE`, the setting that names the first (`ToolProxyConfig.embedding_cache`'s default)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = (
    'CACHE_ENV',
    'DEFAULT_EMBEDDING_CACHE',
    'LISTING_CACHE_ENV',
    'DefaultEmbeddingCache',
    'default_embedding_cache_path',
    'default_listing_cache_path',
)

CACHE_ENV = 'TOOLPROXY_EMBEDDING_CACHE'
"""The environment variable naming the default cache file; the value `off` turns the default cache off."""
LISTING_CACHE_ENV = 'TOOLPROXY_LISTING_CACHE'
"""The environment variable naming the default MCP listing cache file (`off`: no listing cache)."""


@dataclass(frozen=True)
class DefaultEmbeddingCache:
    """The type of `DEFAULT_EMBEDDING_CACHE`: the file `default_embedding_cache_path()` names when the store is first
    opened (`$TOOLPROXY_EMBEDDING_CACHE`, `off` for memory only, else the platform's cache folder; see
    docs/embedding-cache.md)."""

    def __repr__(self) -> str:
        return 'DEFAULT_EMBEDDING_CACHE'


DEFAULT_EMBEDDING_CACHE = DefaultEmbeddingCache()
"""`ToolProxyConfig.embedding_cache`'s default: the documented default file, resolved when first opened."""


def _xdg_folder(platform: str | None = None) -> Path:
    """The package's cache folder: `$XDG_CACHE_HOME/pydantic-ai-toolproxy` when `XDG_CACHE_HOME` is an absolute path
    (on every platform: a user who sets it chose), else where the platform keeps caches: `~/Library/Caches` on
    macOS, `%LOCALAPPDATA%` on Windows (`~/AppData/Local` when unset or not absolute), `~/.cache` elsewhere (the XDG
    rule). `platform` is `sys.platform` (a parameter for the tests)."""
    platform = sys.platform if platform is None else platform
    xdg = os.environ.get('XDG_CACHE_HOME', '')
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    elif platform == 'darwin':
        base = Path.home() / 'Library' / 'Caches'
    elif platform == 'win32':
        local = os.environ.get('LOCALAPPDATA', '')
        base = Path(local) if local and os.path.isabs(local) else Path.home() / 'AppData' / 'Local'
    else:
        base = Path.home() / '.cache'
    return base / 'pydantic-ai-toolproxy'


def default_embedding_cache_path() -> Path | None:
    """The default cache file: `$TOOLPROXY_EMBEDDING_CACHE` when set (`off` turns the default cache off: None),
    else `$XDG_CACHE_HOME/pydantic-ai-toolproxy/embeddings.sqlite3`; when `XDG_CACHE_HOME` is unset or not an
    absolute path, `pydantic-ai-toolproxy/embeddings.sqlite3` in the platform's cache folder: `~/.cache` on Linux
    (the XDG rule), `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows. Read at each call, not at import.

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
    `mcp-listings.sqlite3` beside the default embedding cache (the package's cache folder, see
    `default_embedding_cache_path`; the folder of `$TOOLPROXY_EMBEDDING_CACHE` when that names a file).
    Read at each call."""
    chosen = os.environ.get(LISTING_CACHE_ENV, '')
    if chosen.strip().lower() == 'off':
        return None
    if chosen:
        return Path(chosen).expanduser()
    beside = default_embedding_cache_path()
    folder = _xdg_folder() if beside is None else beside.parent  # embedding cache off: the XDG folder all the same
    return folder / 'mcp-listings.sqlite3'
