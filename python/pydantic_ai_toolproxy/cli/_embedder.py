"""The CLI's embedder (`--embedder`, or `embedder = "..."` in a config file): a model name or a `module:attribute`.

- A model name is what Pydantic AI resolves: `provider:model`, e.g. `openai:text-embedding-3-small`,
  `sentence-transformers:all-MiniLM-L6-v2`, `gateway/openai:text-embedding-3-small` (one word, or a
  `gateway/...` name, before the first colon); or `local:PATH`, a sentence-transformers model folder run with numpy
  (`LocalEmbeddingModel`). A relative folder (`local:`, or a `sentence-transformers:` name that is a folder) is
  resolved against the same directory as a module path, and a `local:` folder that does not exist is an error.
- A `module:attribute` names an `EmbeddingModel` or `Embedder` object (or a zero-argument function returning one)
  the way `-s` names a source: `path/to/file.py:attribute` or `dotted.module:attribute`. A module of a single word
  would read as a provider, so write it as a file (`./embedders.py:model`).

The name is resolved here, before any probe runs, so an unknown provider or a missing package or API key is one
error line (exit status 2), not a warning in the middle of a search. Before anything is loaded, the local model
libraries are told to be quiet (`quiet_model_libraries`): no progress bar and no advisory warning of theirs reaches
the command's output.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..embeddings import _quiet
from ..embeddings._quiet import QUIET_ENVIRONMENT
from ..stores.memory import MemoryEmbeddingStore
from ..stores.opening import is_postgres_url
from ._sources import SourceError, load_target

__all__ = (
    'QUIET_ENVIRONMENT',
    'EmbedderSpec',
    'cache_setting',
    'is_module_target',
    'quiet_model_libraries',
    'resolve_embedder',
)

_QUIET_MODULES = _quiet.MODULES


@dataclass(frozen=True)
class EmbedderSpec:
    """An embedder named on the command line or in a config file, before it is resolved.

    Attributes:
        text: The value as written.
        base_dir: What a relative module path is resolved against.
        label: How messages name the setting (`--embedder`, `FILE: discovery.embedder`).
    """

    text: str
    base_dir: Path
    label: str


def cache_setting(value: str | bool, base_dir: Path) -> Any:
    """`ToolProxyConfig.embedding_cache` for a cache setting as written: `off` (or `false` in a config file) is
    memory only (a `MemoryEmbeddingStore`), a `postgresql://` URL the database, anything else a file path, `~` expanded, relative to `base_dir`."""
    if value is False or (isinstance(value, str) and value.strip().lower() == 'off'):
        return MemoryEmbeddingStore()
    if is_postgres_url(value):
        return str(value).strip()  # a fleet's database: ToolProxyConfig opens a PostgresEmbeddingStore
    path = Path(os.path.expanduser(str(value)))
    return str(path if path.is_absolute() else base_dir / path)


def is_module_target(value: str) -> bool:
    """Whether `value` names a `module:attribute` (a `.py` file, a path, or a dotted module) rather than a model."""
    module, sep, attr = value.rpartition(':')
    if not sep or not module or not attr:
        return False
    if module.endswith('.py'):
        return True
    if ('/' in module or '\\' in module) and not module.startswith('gateway/'):
        return True
    parts = module.split('.')
    return len(parts) > 1 and all(p.isidentifier() for p in parts)


def quiet_model_libraries() -> None:
    """Keep the progress bars and advisory warnings of local model libraries (sentence-transformers, transformers,
    huggingface_hub, tokenizers, torch) off the command's output: `QUIET_ENVIRONMENT` where the environment does not
    set those variables, and, when stderr is not a terminal, their Python warnings ignored (on a terminal each shows
    once, as Python shows any warning). Call before they are imported. Errors still show. (A host's process gets
    the same once per process, from `embeddings._quiet`, when a surface first resolves its embedder.)"""
    for name, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    if not sys.stderr.isatty():
        warnings.filterwarnings('ignore', module=_QUIET_MODULES)


async def resolve_embedder(spec: EmbedderSpec) -> Any:
    """The embedder `spec` names: the loaded `EmbeddingModel` / `Embedder`, or the model a name resolves to.

    Raises:
        SourceError: an empty value, a module that cannot be loaded or holds something else, or a model name
            Pydantic AI cannot resolve (unknown provider, missing package, missing API key), each named.
    """
    from pydantic_ai.embeddings import Embedder, EmbeddingModel

    from ..hybrid.embedder import LOCAL_PREFIX, infer_model

    quiet_model_libraries()
    value, label = spec.text, spec.label
    if not value.strip():
        raise SourceError(
            f'{label}: the embedder is empty; name a model (openai:text-embedding-3-small) or module:attr'
        )
    if value.startswith(LOCAL_PREFIX):
        try:
            return infer_model(value, spec.base_dir)
        except FileNotFoundError as exc:
            raise SourceError(f'{label}: {exc}') from None
    if is_module_target(value):
        obj = await load_target(value, spec.base_dir, label)
        if not isinstance(obj, (Embedder, EmbeddingModel)):
            raise SourceError(
                f'{label} is a {type(obj).__name__}; expected a pydantic_ai EmbeddingModel or Embedder '
                '(or a zero-argument function returning one)'
            )
        return obj
    if ':' not in value:
        raise SourceError(
            f"{label}: {value!r} names no provider; write 'provider:model' (openai:text-embedding-3-small) or "
            'path/to/file.py:attribute'
        )
    try:
        return infer_model(value, spec.base_dir)
    except Exception as exc:
        hint = ''
        module = value.split(':', 1)[0]
        if 'Unknown' in str(exc) and (spec.base_dir / f'{module}.py').is_file():
            # A one-word module reads as a provider (see the module docs): say how to name the file.
            hint = f'; to load {module}.py, write ./{value.replace(":", ".py:", 1)}'
        raise SourceError(
            f'{label}: cannot use the embedding model {value!r}: {type(exc).__name__}: {exc}{hint}'
        ) from exc
