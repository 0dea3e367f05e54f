"""`ToolProxyConfig`: control names, discovery limits and the hybrid settings, each checked when the config is built
(docs/usage.md; hybrid settings: docs/hybrid-search.md)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from pydantic_ai.embeddings import Embedder, EmbeddingModel

from . import _core
from ._urls import is_postgres_url, looks_like_database_url, redacted
from .stores.paths import DEFAULT_EMBEDDING_CACHE, DefaultEmbeddingCache

if TYPE_CHECKING:
    from .embedding_store import EmbeddingStore

__all__ = ('DEFAULT_EMBEDDING_CACHE', 'DefaultEmbeddingCache', 'ToolProxyConfig')


MAX_WAIT_SECONDS = 600.0
"""Upper bound of `embedding_wait`, `query_timeout` and `embedding_timeout`, in seconds."""


@dataclass(frozen=True)
class ToolProxyConfig:
    """Names of the two control tools and the limits of discovery.

    Use it when the default control names collide with tools of your own, to change how many
    results and how many bytes one search page may hold, or to turn on hybrid search (`embedder` and the
    fields after it; docs/hybrid-search.md). Omit it to get the defaults.

    Attributes:
        search_name: Name of the discovery control (default `search_proxy_tools`). Must be a valid
            provider tool name (`^[A-Za-z0-9_-]{1,64}$`) and differ from `call_name`. The default does not
            collide with Pydantic AI's own `search_tools` (native ToolSearch), so both can coexist.
        call_name: Name of the call control (default `call_proxy_tool`), same rules.
        max_results: Largest `limit` one search may ask for, 1-100. An omitted or null `limit`
            defaults to `min(5, max_results)`.
        max_search_bytes: Budget of one search page in bytes (UTF-8 JSON as sent to the model),
            1,024-32,768. A page holds only complete entries; an entry that cannot fit alone fails the search.
        include_instructions: Whether generated proxy guidance goes into the agent instructions and
            source toolset instructions are returned with discovered tools. A deps object with a
            `toolset_instructions` attribute set to False (as a13n-harness's `AgentSpec(toolset_instructions=False)`
            provides) turns both off for that run as well.
        embedder: Opt-in hybrid search: a `pydantic_ai.embeddings.Embedder`, any `EmbeddingModel`, or a model
            name Pydantic AI resolves (`'openai:text-embedding-3-small'`, `'sentence-transformers:all-MiniLM-L6-v2'`;
            resolved by `Embedder(name)` when first used, so a missing API key surfaces as a logged fallback, not
            here), or `'local:PATH'`, a sentence-transformers model folder run with numpy (`LocalEmbeddingModel`,
            the `local` extra; the folder is checked here: a missing one raises ValueError). None (the default):
            keyword search only, rankings unchanged.
        semantic_weight: Share of the semantic signal in the fused score, 0..1 (default 0.35, chosen on
            half of the queries of `bash scripts/bench-quality`): `fused = (1 - w) *
            keyword share + w * semantic share`. 0 ranks exactly as keyword search.
        embedding_cache: Where tool vectors persist across processes: `DEFAULT_EMBEDDING_CACHE` (the default: the
            file `default_embedding_cache_path()` names when first opened), a `postgresql://` URL (a fleet's shared
            `PostgresEmbeddingStore`, the `postgres` extra), a SQLite file path (`~` expanded), any
            `EmbeddingStore`, or None for memory only. Opened only with an embedder, at the first search.
        embedding_wait: Most seconds a search waits for tool vectors still being computed, 0-600 (default 5.0):
            only the first search of a run, or the first of a run after its tool set gained texts without a vector,
            waits, at most this times the share of its tools' texts without a vector once the cache was read, and
            only while waiting can pay off (until the first vectors arrive, then while the missing ones can all
            arrive within that budget at the pace measured); later searches of that run rank what has no
            vector yet by keywords alone at once. Embedding goes on in the background (on the process's embedding
            thread) past the wait and past the run; a process that exits stores its batch in flight (at most 5 s)
            and releases its claims.
        query_timeout: Seconds a search waits for `embed_query`, more than 0 and at most 600 (default 5.0). Past
            it, or on an embedder error, that search is a keyword search (one logged warning, nothing for the model).
        embedding_timeout: Seconds each embedder call for tool texts may take (`embed_documents` of one batch,
            `count_tokens`, `max_input_tokens`), more than 0 and at most 600 (default 60.0). A call past it counts as
            an embedder error: one logged warning, the tools without a vector rank by keywords alone, retried later.

    Raises:
        ValueError: at construction, naming the offending field and value (the control and page rules live in
            the Rust core, `_core.validate_config`; the hybrid fields are checked here).
    """

    search_name: str = 'search_proxy_tools'
    call_name: str = 'call_proxy_tool'
    max_results: int = 10
    max_search_bytes: int = 32_768
    include_instructions: bool = True
    embedder: Embedder | EmbeddingModel | str | None = None
    semantic_weight: float = 0.35
    embedding_cache: str | os.PathLike[str] | EmbeddingStore | DefaultEmbeddingCache | None = DEFAULT_EMBEDDING_CACHE
    embedding_wait: float = 5.0
    query_timeout: float = 5.0
    embedding_timeout: float = 60.0

    def __post_init__(self) -> None:
        for field_name in ('search_name', 'call_name'):
            value = getattr(self, field_name)
            if not isinstance(value, str):
                raise ValueError(f'ToolProxyConfig.{field_name} must be a str, got {value!r}')
        for field_name in ('max_results', 'max_search_bytes'):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f'ToolProxyConfig.{field_name} must be an int, got {value!r}')
        if not isinstance(self.include_instructions, bool):
            raise ValueError(f'ToolProxyConfig.include_instructions must be a bool, got {self.include_instructions!r}')
        _core.validate_config(self.search_name, self.call_name, self.max_results, self.max_search_bytes)
        _check_embedder(self.embedder)
        _check_number('semantic_weight', self.semantic_weight, 0.0, 1.0, allow_low=True)
        _check_number('embedding_wait', self.embedding_wait, 0.0, MAX_WAIT_SECONDS, allow_low=True)
        _check_number('query_timeout', self.query_timeout, 0.0, MAX_WAIT_SECONDS, allow_low=False)
        _check_number('embedding_timeout', self.embedding_timeout, 0.0, MAX_WAIT_SECONDS, allow_low=False)
        _check_cache(self.embedding_cache)

    def __repr__(self) -> str:
        """The fields as the dataclass shows them, a database URL's password hidden (`***`)."""
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            shown.append(f'{f.name}={redacted(value)!r}' if isinstance(value, str) else f'{f.name}={value!r}')
        return f'ToolProxyConfig({", ".join(shown)})'

    def __hash__(self) -> int:
        """Hashes by value, with an unhashable field (an `EmbeddingModel` dataclass, a store) by identity."""
        return hash(tuple(_hashable(getattr(self, f.name)) for f in fields(self)))

    @property
    def default_limit(self) -> int:
        """The page size used when a search omits `limit`: `min(5, max_results)`."""
        return min(5, self.max_results)


def _hashable(value: object) -> object:
    try:
        hash(value)
    except TypeError:
        return ('id', id(value))
    return value


def _check_number(name: str, value: object, low: float, high: float, *, allow_low: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f'ToolProxyConfig.{name} must be a finite number, got {value!r}')
    if value > high or value < low or (value == low and not allow_low):
        bound = f'{low:g}..{high:g}' if allow_low else f'more than {low:g} and at most {high:g}'
        raise ValueError(f'ToolProxyConfig.{name} must be {bound}, got {value!r}')


def _check_embedder(value: object) -> None:
    """An embedder, an embedding model, or a `provider:model` name (resolved only when first used)."""
    if value is None:
        return
    if isinstance(value, (Embedder, EmbeddingModel)):
        return
    if isinstance(value, str):
        provider, _, model = value.partition(':')
        if not provider.strip() or not model.strip():
            raise ValueError(
                "ToolProxyConfig.embedder must name a model as 'provider:model' (e.g. "
                f"'openai:text-embedding-3-small'), got {value!r}"
            )
        if provider == 'local':  # a model folder: checked now, so a wrong path is never a silent keyword fallback
            from .embeddings.local import model_folder

            try:
                model_folder(os.path.expanduser(model))
            except FileNotFoundError as e:
                raise ValueError(f'ToolProxyConfig.embedder: {e}') from None
        return
    raise ValueError(
        'ToolProxyConfig.embedder must be a pydantic_ai Embedder, an EmbeddingModel, a model name or None, '
        f'got {type(value).__name__}: {value!r}'
    )


def _check_postgres_url(url: str) -> None:
    """A PostgreSQL URL needs psycopg (the `postgres` extra) and must parse; nothing connects here."""
    try:
        from psycopg import conninfo
    except ImportError:
        raise ValueError(
            'ToolProxyConfig.embedding_cache names a PostgreSQL database, which needs psycopg: '
            "pip install 'pydantic-ai-toolproxy[postgres]'"
        ) from None
    try:
        conninfo.conninfo_to_dict(url)
    except Exception:  # libpq's message may quote the password: not shown
        raise ValueError(
            'ToolProxyConfig.embedding_cache is not a valid PostgreSQL URL (libpq cannot read it; percent-encode '
            f'special characters of the user name and password): {redacted(url)}'
        ) from None


def _check_cache(value: object) -> None:
    """A path (str or PathLike), an object with the `EmbeddingStore` methods, or None."""
    if value is None or isinstance(value, (os.PathLike, DefaultEmbeddingCache)):
        return
    if isinstance(value, str):
        if not value.strip():
            raise ValueError('ToolProxyConfig.embedding_cache must be a non-blank path, an EmbeddingStore or None')
        if is_postgres_url(value):
            _check_postgres_url(value)
        elif looks_like_database_url(value):
            raise ValueError(
                f'ToolProxyConfig.embedding_cache looks like a database URL but is not one libpq reads: '
                f'{redacted(value)}. Write it as postgresql://user:password@host:port/dbname (no +driver), or give '
                'a file path.'
            )
        return
    store: Any = value
    if callable(getattr(store, 'get_many', None)) and callable(getattr(store, 'put_many', None)):
        return
    raise ValueError(
        'ToolProxyConfig.embedding_cache must be a path, an EmbeddingStore (get_many/put_many) or None, '
        f'got {type(value).__name__}: {value!r}'
    )
