"""Tool vectors in the embedding store: opening it, the answers the core can take (`usable_vectors`), and store
calls bounded by `embedding_timeout`, run in a worker thread (a store may wait, never on the event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .. import _core
from ..stores.opening import open_embedding_store
from ..stores.protocol import is_shared
from .embedder import ResolvedEmbedder
from .warnings import UNNAMED, LogOnce

if TYPE_CHECKING:
    from ..config import ToolProxyConfig
    from ..stores.protocol import EmbeddingStore

__all__ = ('MAX_DIMENSIONS', 'StoreIO', 'StoreTimeout', 'open_store', 'usable_vectors')

T = TypeVar('T')

MAX_DIMENSIONS = 16_384
"""Most dimensions the core accepts for a vector (`SearchIndex.set_vectors`)."""


def usable_vectors(
    found: Mapping[bytes, object], asked: Sequence[bytes], dimensions: int | None
) -> tuple[dict[bytes, bytes], int]:
    """`(usable, dropped)`: the vectors of a store's answer `found` (to `get_many(model, asked)`) that the core
    can take, as `bytes`, and how many were dropped: a hash not asked for, a value that is not bytes-like, empty,
    not a multiple of 4 bytes or over `MAX_DIMENSIONS`, of another dimensionality than `dimensions` (when None,
    than the first usable one), or holding a non-finite value. A store that is not a mapping raises TypeError.

    The usual answer (every hash asked for, every value `bytes` of one valid size) is checked in a few passes at C
    speed; the non-finite check is the core's (`_core.nonfinite_rows`)."""
    wanted = set(asked)
    values = list(found.values())
    if set(map(type, values)) <= {bytes} and found.keys() <= wanted:
        sizes = set(map(len, cast('list[bytes]', values)))
        size = next(iter(sizes), 4)
        fits = len(sizes) <= 1 and size and not size % 4 and size <= MAX_DIMENSIONS * 4
        if fits and (dimensions is None or size == dimensions * 4):
            return _drop_nonfinite(dict(zip(found.keys(), cast('list[bytes]', values), strict=True)), 0)
    usable: dict[bytes, bytes] = {}
    dropped = 0
    for fingerprint, value in found.items():
        if fingerprint not in wanted or not isinstance(value, (bytes, bytearray, memoryview)):
            dropped += 1
            continue
        vector = bytes(value)
        size = len(vector)
        if size == 0 or size % 4 or size > MAX_DIMENSIONS * 4 or (dimensions is not None and size != dimensions * 4):
            dropped += 1
            continue
        dimensions = size // 4
        usable[fingerprint] = vector
    return _drop_nonfinite(usable, dropped)


def _drop_nonfinite(usable: dict[bytes, bytes], dropped: int) -> tuple[dict[bytes, bytes], int]:
    """`(usable without the vectors holding a NaN or an infinity, dropped + how many those were)`."""
    bad = set(_core.nonfinite_rows(list(usable.values()))) if usable else set()
    if bad:
        for fingerprint in [fp for at, fp in enumerate(usable) if at in bad]:
            del usable[fingerprint]
    return usable, dropped + len(bad)


def open_store(config: ToolProxyConfig) -> EmbeddingStore | None:
    """The store `config.embedding_cache` names (`stores.open_embedding_store`): None (memory only), the given
    `EmbeddingStore`, a `PostgresEmbeddingStore` for a `postgresql://` URL, or a `SQLiteEmbeddingStore` at a path
    (the default file for `DEFAULT_EMBEDDING_CACHE`). A bad file or database does not raise here: the stores fall
    back to memory themselves, with one warning."""
    return open_embedding_store(config.embedding_cache)


class StoreTimeout(Exception):
    """A store call past `embedding_timeout` (`StoreIO.call`)."""


class StoreIO:
    """The embedding store of one surface's tool vectors, opened on first use, and its bounded calls.

    Args:
        config: The surface's config (`embedding_timeout` bounds every store call).
        embedder: The surface's embedder (its store key names the model of the vectors).
        log: The surface's log-once warnings.
        opener: Opens the store (None: memory only).
        expected: The size store vectors must have (`ToolVectors.expected_dimensions`).
    """

    def __init__(
        self,
        config: ToolProxyConfig,
        embedder: ResolvedEmbedder,
        log: LogOnce,
        opener: Callable[[], EmbeddingStore | None],
        expected: Callable[[], int | None],
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.log = log
        self._opener = opener
        self._expected = expected
        self._store: EmbeddingStore | None = None
        self._opened = False
        self.refused = False
        """Whether the configured store is not used because the model has no name of its own (`store`)."""

    def store(self) -> EmbeddingStore | None:
        """The embedding store, opened on first use (an error opening it: memory only, one warning)."""
        if not self._opened:
            self._opened = True
            try:
                self._store = self._opener()
            except Exception as e:
                self.log.warn('store', f'ToolProxy embedding cache unavailable, vectors stay in memory: {e!r}')
                self._store = None
            if self._store is not None and not self._named() and is_shared(self._store):
                self._store = None  # a shared store: keys must be unambiguous
                self.refused = True
                self.log.warn('unnamed', UNNAMED.format(model=self.embedder.describe(), name=self._model_name()))
        return self._store

    def _named(self) -> bool:
        try:
            return self.embedder.named
        except Exception:  # a model name that does not resolve: its store key fails later, as before (one warning)
            return True

    def _model_name(self) -> object:
        try:
            return self.embedder.embedder.model.model_name  # type: ignore[union-attr]
        except Exception:
            return None

    async def call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`method(*args, **kwargs)` of the store in a worker thread, bounded by `embedding_timeout` (a slow database
        is one store error: the thread finishes by itself, a PostgreSQL statement at its `statement_timeout`).

        Raises:
            StoreTimeout: no answer in time; and whatever the method raises.
        """
        bound = self.config.embedding_timeout
        try:
            return await asyncio.wait_for(asyncio.to_thread(method, *args, **kwargs), bound)
        except TimeoutError:
            raise StoreTimeout(f'the store did not answer {method.__name__} within {bound:g} s') from None

    async def get(
        self, fingerprints: list[bytes], key: str | None = None, present: set[bytes] | None = None
    ) -> dict[bytes, bytes]:
        """The store's vectors of `fingerprints` under `key` (None: the model of the current context) that are usable
        (`usable_vectors`); the others are embedded again (one warning). A store error: `{}` (one warning). `present`
        gains every fingerprint the store returned a row for, usable or not."""
        store = self.store()
        if store is None or not fingerprints:
            return {}
        try:
            key = key or self.embedder.store_key
        except Exception:  # the embedder cannot be made (a missing API key, say): no store fault; its own
            return {}  # warning says why when it is asked to embed
        try:
            found = await self.call(store.get_many, key, fingerprints)
            if present is not None:
                present.update(found)
            usable, dropped = usable_vectors(found, fingerprints, self._expected())
        except Exception as e:
            self.log.warn('store', f'ToolProxy embedding cache read failed, embedding instead: {e!r}')
            return {}
        if dropped:
            self.log.warn(
                'store-value',
                f'ToolProxy embedding cache returned {dropped} unusable vector(s) (not float32 bytes of one '
                'dimensionality, or non-finite); embedding those tool texts again.',
            )
        return usable

    def get_now(self, key: str, fingerprints: list[bytes]) -> set[bytes]:
        """The fingerprints among `fingerprints` the store holds a usable vector for under `key`, asked in this
        thread, unbounded (the CLI's look at a store). A store error: one warning, none."""
        store = self.store()
        if store is None or not fingerprints:
            return set()
        try:
            found = store.get_many(key, fingerprints)
            return set(usable_vectors(found, fingerprints, self._expected())[0])
        except Exception as exc:  # a custom store that raises: report it, as a search would log it
            self.log.warn('store', f'ToolProxy embedding cache read failed: {exc!r}')
            return set()

    async def put(self, items: dict[bytes, bytes], key: str | None = None) -> None:
        """Write `items` to the store under `key`, the store key of the model that produced them (None: the model
        of the current context). A store error: one warning, the vectors stay in memory."""
        store = self.store()
        if store is None or not items:
            return
        try:
            key = key or self.embedder.store_key
            await self.call(store.put_many, key, items)
        except Exception as e:
            self.log.warn('store', f'ToolProxy embedding cache write failed, vectors stay in memory: {e!r}')
