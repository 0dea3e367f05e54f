"""The MCP listing cache: each server's last `tools/list` answer, so a lazy run can search before any server starts.

`ToolProxyCapability.from_mcp_config(path, lazy=True, listing_cache=...)` reads it at run entry: a server whose
entry is fresh is not started until `call_proxy_tool` targets one of its tools; search ranks the cached tools
(their complete schemas, as the server listed them). Every start of a server stores what it listed.

An entry is keyed by `listing_key`: the server's name and a SHA-256 of what defines its process (transport kind,
command, args, cwd, url, the names of its environment variables and headers with a hash of each value, and the
size and modification time of the command's executable and of the first argument that names an existing file (the
script of `python server.py`), so an upgraded script or binary is a new key), plus `LISTING_FORMAT`. A server
upgraded behind the same files (`uvx pkg`, `npx -y pkg`) keeps its key: its entry ages out, and a lazy start
that finds another listing replaces it at once. An entry stores the tools as the server listed
them (MCP `Tool` JSON), the server's `serverInfo` name, version and title, its `instructions`, when it was fetched
and the server's `ttlMs` hint. Secrets never reach the store: environment and header values are only hashed into
the key.

Age: an entry is fresh for the server's `ttlMs` when that is above zero (MCP's "0 = do not cache" is not taken
as "forever"; a larger hint than `MAX_TTL_MS`, 30 days, is cut to it), else for `max_age` seconds (`DEFAULT_MAX_AGE`, one day). `toolproxy --mcp-config F refresh`
re-lists every server.

Stores (`pydantic_ai_toolproxy.stores`, re-exported here): `SQLiteListingStore` (the default, a file beside the
embedding cache: `default_listing_cache_path`), `PostgresListingStore` (a `postgresql://` URL: a fleet lists each
server once), `MemoryListingStore`, or any object with the `ListingStore` methods. A store that fails (unreadable file, locked
database) is logged once on the `pydantic_ai_toolproxy` logger and acts as empty: the servers are started as
without a cache, never a failed run. The stores are never called on the event loop: the entries of a file's
servers are read at once in a worker thread at construction, bounded by `mcp_servers.listing_io.STORE_TIMEOUT` (2 s) in
all (a store past it counts as empty), and each write runs in a thread of its own. An entry whose tools the MCP
SDK rejects counts as missing (one warning).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .stores.listings import (
    DEFAULT_MAX_AGE,
    MAX_TTL_MS,
    ListingStore,
    MemoryListingStore,
    ServerListing,
    SQLiteListingStore,
)
from .stores.opening import open_listing_store
from .stores.paths import LISTING_CACHE_ENV, default_listing_cache_path

__all__ = (
    'DEFAULT_MAX_AGE',
    'LISTING_CACHE_ENV',
    'LISTING_FORMAT',
    'MAX_TTL_MS',
    'ListingStore',
    'MemoryListingStore',
    'SQLiteListingStore',
    'ServerListing',
    'default_listing_cache_path',
    'listing_key',
    'open_listing_store',
)


LISTING_FORMAT = 1
"""The entry format; part of every key, so entries of another build are never read."""


def _hashed(value: object) -> str:
    return hashlib.sha256(str(value).encode('utf-8', 'surrogatepass')).hexdigest()


def _file_stamp(path: str, cwd: str | None) -> list[Any] | None:
    """`[path, size, mtime_ns]` of an existing file `path` (relative to `cwd`), else None."""
    candidate = Path(path)
    if not candidate.is_absolute() and cwd:
        candidate = Path(cwd) / candidate
    try:
        if candidate.is_file():
            stat = candidate.stat()
            return [str(candidate), stat.st_size, stat.st_mtime_ns]
    except OSError:
        return None
    return None


def listing_key(server: str, transport: object) -> str:
    """The cache key of the MCP server named `server` started through `transport` (a FastMCP transport, or a URL
    string): `<LISTING_FORMAT>:<server>:<sha256 hex>` (see the module docstring for what the hash covers).

    Never raises: attributes a transport lacks are left out of the hash.
    """
    material: dict[str, Any] = {'format': LISTING_FORMAT, 'server': server, 'kind': type(transport).__name__}
    if isinstance(transport, str):
        material['url'] = transport
    else:
        command = getattr(transport, 'command', None)
        args = getattr(transport, 'args', None)
        cwd = getattr(transport, 'cwd', None)
        url = getattr(transport, 'url', None)
        env = getattr(transport, 'env', None)
        headers = getattr(transport, 'headers', None)
        material['command'] = command if isinstance(command, str) else None
        material['args'] = [str(a) for a in args] if isinstance(args, Sequence) and not isinstance(args, str) else None
        material['cwd'] = str(cwd) if cwd is not None else None
        material['url'] = str(url) if url is not None else None
        for name, values in (('env', env), ('headers', headers)):
            if isinstance(values, Mapping):
                material[name] = sorted((str(k), _hashed(v)) for k, v in values.items())
        stamps: list[Any] = []
        if isinstance(command, str):
            found = shutil.which(command, path=(env or {}).get('PATH') if isinstance(env, Mapping) else None)
            if found is not None:
                stamps.append(_file_stamp(found, None))
        for arg in material['args'] or []:  # the first argument naming a file: the script a command runs
            if len(arg) < 4096 and not arg.startswith('-') and (stamp := _file_stamp(arg, material['cwd'])):
                stamps.append(stamp)
                break
        material['files'] = [s for s in stamps if s is not None]
    digest = hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()
    return f'{LISTING_FORMAT}:{server[:100]}:{digest}'
