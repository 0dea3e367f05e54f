"""Resolving `ToolProxyConfig.embedder` to a Pydantic AI `Embedder`, its identity, and vector conversions.

Identity: `f'{model.system}:{model.model_name}'`, plus `:dimensions=N` when the settings fix the output size; the
store key (`EmbeddingStore` `model`) is the identity + `:` + the dimensions (`native` when the model's own). Both are
of the model that embeds in the caller's context: the configured one, or the model of an active
`Embedder.override(model=...)` (Pydantic AI's way to swap the model in tests), so a vector is always keyed by the
model that produced it. A
model without a name of its own (`named` False: `model_name` missing, blank or `unknown`, as Pydantic AI names a
`SentenceTransformer` loaded from a folder without a model card) has no unambiguous key: its vectors stay in memory. A
vector crosses to the Rust core as little-endian float32 bytes (`vector_bytes`). Every embedder call is bounded
(`bounded`): past its time it raises `EmbedderTimeout` and is left behind, cancelled, so a call that never returns
cannot hold a search, a background embedding or the CLI.

A model named by a local folder has one identity whatever the spelling of its path (`infer_model`, `model_identity`):
`local:PATH` builds a `LocalEmbeddingModel` of the resolved folder, and a sentence-transformers model whose name is
an existing folder is named by that folder resolved (`./models/x`, `models/x/`, `~/...` and the absolute path are
one model, one cache key).
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
from array import array
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic_ai.embeddings import Embedder, EmbeddingModel, infer_embedding_model, merge_embedding_settings

from ..embeddings import _quiet

__all__ = (
    'LOCAL_PREFIX',
    'EmbedderTimeout',
    'ResolvedEmbedder',
    'bounded',
    'gave_up',
    'infer_model',
    'model_identity',
    'vector_bytes',
)

LOCAL_PREFIX = 'local:'
"""The embedder name prefix of a model folder run by `LocalEmbeddingModel` (`local:PATH`)."""
_ST_SYSTEM = 'sentence-transformers'

T = TypeVar('T')

_ABANDONED: set[asyncio.Future[Any]] = set()
"""Calls `bounded` gave up on, kept referenced until they end (a task nobody holds may be garbage-collected)."""
_GAVE_UP = [0]
"""How many calls `bounded` gave up on in this process (`gave_up`)."""


def gave_up() -> int:
    """How many embedder calls `bounded` gave up on in this process. Such a call may still hold a worker thread
    (a local model computing, or deadlocked, in `run_in_executor`), which the interpreter would wait for at exit;
    the CLI exits without waiting when this is not 0."""
    return _GAVE_UP[0]


class EmbedderTimeout(TimeoutError):
    """An embedder call gave no answer within its bound (`bounded`); the message names the call and the bound."""


def _forget(task: asyncio.Future[Any]) -> None:
    _ABANDONED.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log "exception was never retrieved" for a late failure


def _abandon(task: asyncio.Future[Any]) -> None:
    task.cancel()
    if not task.done():
        _ABANDONED.add(task)
        task.add_done_callback(_forget)


async def bounded(call: Awaitable[T], seconds: float, what: str) -> T:
    """Await `call` (an embedder's coroutine) for at most `seconds`.

    The call runs as its own task: past `seconds` it is cancelled and left behind without waiting for it, so an
    embedder that ignores cancellation (or blocks in a worker thread) cannot hold the caller either. A caller
    that is cancelled cancels the call too.

    Raises:
        EmbedderTimeout: no answer within `seconds` (`'{what} gave no answer within {seconds} s'`).
        Exception: whatever the call raised.
    """
    _quiet.before_first_use()  # the model libraries' warnings filter in place before the call runs
    task = asyncio.ensure_future(call)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except BaseException:
        _abandon(task)
        raise
    if not done:
        _GAVE_UP[0] += 1
        _abandon(task)
        raise EmbedderTimeout(f'{what} gave no answer within {seconds:g} s')
    _quiet.after_first_use()  # what a model library printed while loading shows once per process at most
    return task.result()


def vector_bytes(vector: Sequence[float]) -> bytes:
    """`vector` as little-endian float32 bytes (4 bytes per dimension).

    Raises:
        ValueError: the vector is empty or holds a non-finite value (NaN, infinity, or a float beyond float32).
    """
    if not vector:
        raise ValueError('the embedder returned an empty vector')
    packed = array('f', vector)
    if not all(math.isfinite(x) for x in packed):
        raise ValueError('the embedder returned a vector with a non-finite value')
    if sys.byteorder != 'little':  # pragma: no cover - every supported platform is little-endian
        packed.byteswap()
    return packed.tobytes()


def _local_folder(name: str, base_dir: Path | None) -> str | None:
    """`name` as an absolute resolved path when it names an existing folder (relative to `base_dir`, else the
    working directory), else None."""
    path = Path(os.path.expanduser(name))
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    try:
        return str(path.resolve()) if name.strip() and path.is_dir() else None
    except OSError:
        return None


def infer_model(name: str, base_dir: Path | None = None) -> EmbeddingModel:
    """The `EmbeddingModel` an embedder name names: `local:PATH` is a `LocalEmbeddingModel` of that folder (a
    relative `PATH` against `base_dir`, else the working directory); `sentence-transformers:PATH` of an existing
    folder is Pydantic AI's model of that folder, resolved; anything else is what `infer_embedding_model` makes of it.

    Raises:
        FileNotFoundError: `local:PATH` names no model folder (the message names the path).
        Exception: whatever Pydantic AI raises resolving another name (unknown provider, missing package or key).
    """
    if name.startswith(LOCAL_PREFIX):
        from ..embeddings.local import LocalEmbeddingModel

        path = Path(os.path.expanduser(name[len(LOCAL_PREFIX) :]))
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        return LocalEmbeddingModel(path)
    if name.startswith(f'{_ST_SYSTEM}:'):
        folder = _local_folder(name[len(_ST_SYSTEM) + 1 :], base_dir)
        if folder is not None:
            name = f'{_ST_SYSTEM}:{folder}'
    return infer_embedding_model(name)


def model_identity(model: EmbeddingModel) -> str:
    """`system:model_name` of `model`, with a sentence-transformers model named by an existing folder named by that
    folder resolved (so `SentenceTransformerEmbeddingModel('models/x')` and `('/abs/models/x/')` are one model)."""
    name = model.model_name
    if model.system == _ST_SYSTEM and isinstance(name, str):
        name = _local_folder(name, None) or name
    return f'{model.system}:{name}'


class ResolvedEmbedder:
    """One configured embedder, resolved when first used (a model name builds its provider then, so a missing
    API key shows as a logged fallback at the first search, not as an error at configuration).

    Attributes:
        embedder: The `Embedder` that embeds (the configured one, or one built around the model or name).
    """

    def __init__(self, value: Embedder | EmbeddingModel | str) -> None:
        self._value = value
        self._embedder: Embedder | None = value if isinstance(value, Embedder) else None
        self._keys: dict[int, tuple[EmbeddingModel, str, str]] = {}
        """id(model) -> (model, identity, store key), per model that embedded in some context."""

    @property
    def embedder(self) -> Embedder:
        """The `Embedder` to call (built on first access; a model name is resolved by `infer_embedding_model`).

        Raises:
            Exception: whatever Pydantic AI raises resolving a model name (unknown provider, missing API key).
        """
        if self._embedder is None:
            _quiet.before_first_use()  # before a local model's libraries load: quiet in the host's output and logs
            value = self._value
            model = value if isinstance(value, EmbeddingModel) else infer_model(str(value))
            self._embedder = Embedder(model)
        return self._embedder

    def _model(self) -> EmbeddingModel:
        """The model that embeds in the current context: an active `Embedder.override(model=...)`'s, else the
        configured one."""
        embedder = self.embedder
        override = getattr(embedder, '_override_model', None)
        if override is not None:
            overriding = override.get()
            if isinstance(overriding, EmbeddingModel):
                return overriding
        model = embedder.model
        if isinstance(model, EmbeddingModel):
            return model
        return infer_model(model)

    @property
    def named(self) -> bool:
        """Whether the model names itself: its `model_name` is a non-blank str other than `unknown` (any case).

        Pydantic AI's `SentenceTransformerEmbeddingModel(st)` reports `model_card_data.model_id`, else
        `base_model`, else `'unknown'`: a model loaded from a local folder without a model card is `unknown`, so
        two such models would share one store key (`sentence-transformers:unknown:native`) and read each other's
        vectors. A model passed by path (`SentenceTransformerEmbeddingModel('/models/x')`) is named by the path.

        Raises:
            Exception: whatever Pydantic AI raises resolving a model name.
        """
        try:
            name = self._model().model_name
        except AttributeError:  # an EmbeddingModel subclass without a model_name
            return False
        return isinstance(name, str) and name.strip().lower() not in ('', 'unknown')

    @property
    def declared_dimensions(self) -> int | None:
        """The output size the settings ask for (`dimensions`), None for the model's own (unknown until it embeds).

        Raises:
            Exception: whatever Pydantic AI raises resolving a model name.
        """
        return self._dimensions_setting()

    def _dimensions_setting(self) -> int | None:
        model = self._model()
        own: Any = getattr(self.embedder, '_settings', None)
        settings = merge_embedding_settings(model.settings, own) or {}
        dimensions = settings.get('dimensions')
        return dimensions if isinstance(dimensions, int) and not isinstance(dimensions, bool) else None

    def _keyed(self) -> tuple[str, str]:
        model = self._model()
        known = self._keys.get(id(model))
        if known is None or known[0] is not model:
            dimensions = self._dimensions_setting()
            identity = model_identity(model)
            if dimensions is not None:
                identity = f'{identity}:dimensions={dimensions}'
            key = f'{identity}:{"native" if dimensions is None else dimensions}'
            if len(self._keys) >= 64:
                self._keys.clear()
            known = self._keys[id(model)] = (model, identity, key)
        return known[1], known[2]

    @property
    def identity(self) -> str:
        """`system:model_name` (plus `:dimensions=N` when set), e.g. `openai:text-embedding-3-small`, of the model
        that embeds in the current context (an `Embedder.override`'s when one is active).

        Raises:
            Exception: whatever Pydantic AI raises resolving a model name.
        """
        return self._keyed()[0]

    @property
    def store_key(self) -> str:
        """The `EmbeddingStore` model key of the model that embeds in the current context: its identity + `:` + the
        dimensions (`native` for the model's own).

        Raises:
            Exception: whatever Pydantic AI raises resolving a model name.
        """
        return self._keyed()[1]

    def describe(self) -> str:
        """The identity, or a short description when it cannot be resolved (for log messages)."""
        try:
            return self.identity
        except Exception:
            return repr(self._value)[:200]
