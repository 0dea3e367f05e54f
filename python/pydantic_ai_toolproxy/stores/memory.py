"""`MemoryEmbeddingStore`: vectors in this process only (what "no cache" means, and every store's fallback)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ._checks import check_claim, check_hashes, check_items, check_model

__all__ = ('MemoryEmbeddingStore',)


class MemoryEmbeddingStore:
    """An `EmbeddingStore` in this process's memory: vectors live as long as the object (no file, no sharing).

    Thread-safe. It is what `embedding_cache=None` uses, and what the SQLite and PostgreSQL stores fall back to.
    `shared` is False; its claims (`claim_many`) hold between the threads of this process only.

    ```python
    from pydantic_ai_toolproxy import EmbeddingStore, MemoryEmbeddingStore

    store = MemoryEmbeddingStore()
    store.put_many('test:model:2', {b'h' * 16: bytes(8)})
    assert store.get_many('test:model:2', [b'h' * 16, b'x' * 16]) == {b'h' * 16: bytes(8)}
    assert store.get_many('other:model:2', [b'h' * 16]) == {}
    assert isinstance(store, EmbeddingStore)
    ```
    """

    shared = False
    """Other processes never see these vectors."""

    def __init__(self) -> None:
        self._vectors: dict[str, dict[bytes, bytes]] = {}
        self._claims: dict[tuple[str, bytes], float] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f'MemoryEmbeddingStore({self.count():,} vectors)'

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored vectors of `hashes` under `model` (hashes without one are omitted).

        Raises:
            ValueError: a `model` that is not a non-empty str, or a hash that is not 1-64 bytes.
        """
        check_model(model)
        check_hashes(hashes)
        with self._lock:
            known = self._vectors.get(model)
            if not known:
                return {}
            return {h: known[h] for h in hashes if h in known}

    def put_many(self, model: str, items: Mapping[bytes, bytes]) -> None:
        """Store `{hash: vector}` under `model`.

        Raises:
            ValueError: a bad `model` or hash (see `get_many`), or a vector that is not a non-empty `bytes` whose
                length is a multiple of 4.
        """
        check_model(model)
        check_items(items)
        with self._lock:
            self._vectors.setdefault(model, {}).update(items)

    def claim_many(self, model: str, hashes: Sequence[bytes], *, limit: int, seconds: float) -> list[bytes]:
        """Claim at most `limit` of `hashes` without a vector or a live claim, for `seconds` (`ClaimingStore`).

        Raises:
            ValueError: a bad `model`, hash, `limit` or `seconds`.
        """
        check_model(model)
        check_hashes(hashes)
        check_claim(limit, seconds)
        now = time.monotonic()
        claimed: list[bytes] = []
        with self._lock:
            known = self._vectors.get(model, {})
            for h in dict.fromkeys(hashes):
                if len(claimed) >= limit:
                    break
                if h in known or self._claims.get((model, h), 0.0) > now:
                    continue
                self._claims[(model, h)] = now + seconds
                claimed.append(h)
        return claimed

    def release_many(self, model: str, hashes: Sequence[bytes]) -> None:
        """Drop the claims of `hashes` under `model`."""
        with self._lock:
            for h in hashes:
                self._claims.pop((model, h), None)

    def count(self, model: str | None = None) -> int:
        """The number of vectors held under `model`, or over all models."""
        with self._lock:
            if model is not None:
                return len(self._vectors.get(model, {}))
            return sum(len(v) for v in self._vectors.values())

    def describe(self, model: str) -> dict[str, Any]:
        """`{'kind': 'memory'}` (`toolproxy inspect`)."""
        return {'kind': 'memory'}
