"""The `EmbeddingStore` protocol: what the embedding pipeline asks of a store, and what it may ask besides.

Two methods are required (`get_many`, `put_many`). A store may say more about itself through optional members,
which the pipeline and `toolproxy inspect` read with the helpers here, never by checking a concrete class:

- `shared` (bool attribute or property): whether other processes see what this store holds (a file, a database).
  A store without it counts as shared. A shared store only takes vectors of a model with a name of its own.
- `claim_many(model, hashes, *, limit, seconds)` and `release_many(model, hashes)`: claims, so that processes
  sharing the store embed each text once (`ClaimingStore`).
- `describe(model)`: a JSON-able dict for `toolproxy inspect` (`kind`, and what the store wants to show).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ('ClaimingStore', 'EmbeddingStore', 'describe_store', 'is_shared', 'supports_claims')


@runtime_checkable
class EmbeddingStore(Protocol):
    """Vectors by `(model, text hash)`: what the embedding pipeline reads before it embeds and writes after.

    Both methods are synchronous and may be called from any thread (the pipeline calls them through
    `asyncio.to_thread`, so a call may wait without blocking the event loop), and from several processes at once
    when the store is shared. They should not raise for a store that is unavailable: return what is known
    (possibly nothing) and keep going, so a broken cache costs embedder calls, never a run. An exception a method
    does raise is logged by the pipeline and the store is then treated as empty for that batch.

    Keys and values:
        model: The embedder identity, `:` and its dimensions setting (`native` for the model's own size):
            `'sentence-transformers:all-MiniLM-L6-v2:native'`.
            Vectors of different models never mix: a lookup only returns vectors stored under the same `model`.
        hash: The text's hash, `hashlib.blake2b(text.encode(), digest_size=16).digest()` (16 bytes).
        vector: Little-endian float32, `4 * dimensions` bytes (`array('f', values).tobytes()` on a little-endian
            machine), returned exactly as stored.

    Optional members (see the module docstring): `shared`, `claim_many`/`release_many`, `describe`.
    """

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored vectors of `hashes` under `model`: `{hash: vector}`, omitting hashes that have none."""
        ...

    def put_many(self, model: str, items: Mapping[bytes, bytes]) -> None:
        """Store `{hash: vector}` under `model`, replacing a vector already stored for the same hash."""
        ...


@runtime_checkable
class ClaimingStore(Protocol):
    """A store through which processes share the work of embedding: before a process embeds texts it claims them;
    the others wait for those vectors to appear (`get_many`) instead of embedding them again. A claim lasts
    `seconds` (a crashed process's claims expire) or until its owner stores the vectors and releases it."""

    def claim_many(self, model: str, hashes: Sequence[bytes], *, limit: int, seconds: float) -> list[bytes]:
        """Claim, for `seconds`, at most `limit` of `hashes` (in their order) that have no vector under `model` and
        no live claim of another owner; returns the hashes claimed (possibly none). Claims are the store object's:
        another process's object is another owner.

        Raises:
            ValueError: a bad `model` or hash, a `limit` that is not a positive int or `seconds` not positive.
        """
        ...

    def release_many(self, model: str, hashes: Sequence[bytes]) -> None:
        """Drop this owner's claims of `hashes` under `model` (after storing their vectors, or giving up)."""
        ...


def is_shared(store: object) -> bool:
    """Whether other processes see what `store` holds: its `shared` member, True when it has none."""
    shared = getattr(store, 'shared', True)
    return shared if isinstance(shared, bool) else True


def supports_claims(store: object) -> bool:
    """Whether `store` takes claims (`ClaimingStore`) and is shared (claims only matter between processes)."""
    return isinstance(store, ClaimingStore) and is_shared(store)


def describe_store(store: object, model: str) -> dict[str, Any]:
    """What `toolproxy inspect` shows of `store` for `model`: the store's own `describe(model)` (a dict with at
    least `kind`), `{'kind': 'memory'}` for None, else `{'kind': 'custom', 'store': <class name>}`. A `describe`
    that raises or answers something else is reported as the custom store with its `fault`."""
    if store is None:
        return {'kind': 'memory'}
    describe = getattr(store, 'describe', None)
    if callable(describe):
        try:
            info = describe(model)
        except Exception as e:
            return {'kind': 'custom', 'store': type(store).__name__, 'fault': repr(e)[:300]}
        if isinstance(info, dict) and isinstance(info.get('kind'), str):
            return info
    return {'kind': 'custom', 'store': type(store).__name__}
