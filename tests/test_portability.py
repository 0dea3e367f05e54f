"""What differs between Linux, macOS and Windows, checked on the machine the tests run on.

- The default cache folder is where each platform keeps caches (`~/.cache` on Linux, `~/Library/Caches` on macOS,
  `%LOCALAPPDATA%` on Windows), and `XDG_CACHE_HOME`, when set to an absolute path, wins everywhere.
- A Windows path with a drive letter (`C:/Users/...`, `C:\\Users\\...`) is a file path wherever a cache path is taken,
  never refused as a URL; database URLs of other schemes still are.
- A cache file in a folder whose name has spaces and non-ASCII letters works (the smoke test of every wheel runs
  from such a folder on Windows and macOS).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pydantic_ai_toolproxy import SQLiteEmbeddingStore, ToolProxyConfig
from pydantic_ai_toolproxy._urls import looks_like_database_url, redacted
from pydantic_ai_toolproxy.stores import paths
from pydantic_ai_toolproxy.stores.opening import open_embedding_store, open_listing_store


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ('XDG_CACHE_HOME', 'LOCALAPPDATA', paths.CACHE_ENV, paths.LISTING_CACHE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('USERPROFILE', str(tmp_path / 'home'))  # what Path.home() reads on Windows
    return tmp_path / 'home'


@pytest.mark.parametrize(
    'platform,folder',
    [
        ('linux', '.cache'),
        ('freebsd14', '.cache'),
        ('darwin', 'Library/Caches'),
        ('win32', 'AppData/Local'),  # LOCALAPPDATA unset
    ],
)
def test_the_cache_folder_is_where_the_platform_keeps_caches(home: Path, platform: str, folder: str) -> None:
    assert paths._xdg_folder(platform) == home / folder / 'pydantic-ai-toolproxy'


def test_windows_reads_localappdata_and_xdg_cache_home_wins_everywhere(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv('LOCALAPPDATA', str(tmp_path / 'local'))
    assert paths._xdg_folder('win32') == tmp_path / 'local' / 'pydantic-ai-toolproxy'
    monkeypatch.setenv('LOCALAPPDATA', 'relative')  # not absolute: ignored, as XDG_CACHE_HOME is
    assert paths._xdg_folder('win32') == home / 'AppData' / 'Local' / 'pydantic-ai-toolproxy'
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'xdg'))
    for platform in ('linux', 'darwin', 'win32'):
        assert paths._xdg_folder(platform) == tmp_path / 'xdg' / 'pydantic-ai-toolproxy'


def test_both_default_files_live_in_the_folder_of_this_platform(home: Path) -> None:
    folder = paths._xdg_folder()
    assert paths.default_embedding_cache_path() == folder / 'embeddings.sqlite3'
    assert paths.default_listing_cache_path() == folder / 'mcp-listings.sqlite3'
    assert folder.is_relative_to(home)


@pytest.mark.parametrize('path', ['C:/Users/Ada Lovelace/cache.sqlite3', 'c:/x.sqlite3', 'D:\\caches\\v.sqlite3'])
def test_a_windows_drive_path_is_a_path_not_a_url(path: str) -> None:
    assert not looks_like_database_url(path)
    assert redacted(path) == path
    assert ToolProxyConfig(embedding_cache=path).embedding_cache == path  # refused before: "looks like a URL"
    store = open_embedding_store(path)  # nothing is opened until first use
    assert isinstance(store, SQLiteEmbeddingStore) and store.path == Path(path)
    assert type(open_listing_store(path)).__name__ == 'SQLiteListingStore'


@pytest.mark.parametrize('url', ['postgresql+psycopg://app:S3cr3t@db/agents', 'sqlite:/x.db', 'pg:/db'])
def test_urls_of_two_letter_schemes_and_longer_are_still_refused(url: str) -> None:
    assert looks_like_database_url(url)
    with pytest.raises(ValueError, match='looks like a database URL'):
        ToolProxyConfig(embedding_cache=url)


def test_a_cache_file_in_a_folder_with_spaces_and_accents(tmp_path: Path) -> None:
    folder = tmp_path / 'Mes Documents' / 'café cache'
    path = folder / 'embeddings.sqlite3'
    with SQLiteEmbeddingStore(str(path)) as store:
        store.put_many('test:model:2', {b'h' * 16: bytes(8)})
        assert not store.fell_back
    with SQLiteEmbeddingStore(path.as_posix()) as again:
        assert again.get_many('test:model:2', [b'h' * 16]) == {b'h' * 16: bytes(8)}
        assert not again.fell_back
