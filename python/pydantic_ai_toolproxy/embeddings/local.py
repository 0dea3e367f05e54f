"""`LocalEmbeddingModel`: a sentence-transformers model folder (BERT family) run in this process with numpy, no torch.

The folder is what sentence-transformers saves (all-MiniLM-L6-v2, bge-small, e5-small, gte-small): `config.json` (a
`BertModel`), `model.safetensors`, `tokenizer.json`, and `modules.json` naming the modules after the transformer
(`Pooling` with `1_Pooling/config.json`, then `Normalize` when listed). The forward pass is the BERT encoder in
float32 numpy (embeddings + LayerNorm, N layers of self-attention and a GELU feed-forward), then the pooling and the
normalisation the folder asks for, so the vectors are sentence-transformers' for the same folder (float32 rounding
apart). Texts are tokenized by `_wordpiece.WordPiece` (BERT's tokenizer from `tokenizer.json`, plain Python, the ids
of the `tokenizers` library, which is not used for its install size: see `_wordpiece`) and run in batches of similar
length, padded to the longest of the batch. One process loads a folder once (`shared_network`), and a query runs
before the document batches of its model (`QueryGate`).

Needs the `local` extra (numpy, safetensors), imported when the model first embeds; constructing the model only
checks the folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from ._wordpiece import WordPiece

if TYPE_CHECKING:
    import numpy.typing as npt

    Array = npt.NDArray[Any]  # float32 throughout (numpy's stubs widen mixed arithmetic to float64)

__all__ = ('QUERY_PRIORITY_WAIT', 'LocalEmbeddingModel', 'QueryGate', 'model_folder', 'shared_network')

REQUIRED_FILES = ('config.json', 'model.safetensors', 'tokenizer.json')
"""Files a model folder must hold (checked at construction)."""
BATCH_SIZE = 32
"""Most texts per forward pass (sorted by length first, so each batch pads little)."""
BATCH_TOKENS = 2048
"""Most tokens of one forward pass once padded (texts x the longest's length)."""
DEFAULT_MAX_TOKENS = 512
"""Tokens kept of a text when the folder's `sentence_bert_config.json` names no `max_seq_length`."""
_POOLING_MODES = ('cls', 'max', 'mean', 'mean_sqrt_len')
"""The pooling modes supported, in the order sentence-transformers concatenates them."""

QUERY_PRIORITY_WAIT = 0.5
"""Most seconds a document batch pauses at a layer while queries of the same model run (`QueryGate`); after that it
goes on, so a stream of queries cannot stall the tool texts."""

_LOADED: dict[tuple[Path, tuple[tuple[str, int, int], ...]], _Network] = {}
"""The networks loaded in this process (`shared_network`), by folder and the size and mtime of its files."""
_LOADED_LOCK = threading.Lock()


def model_folder(path: str | Path) -> Path:
    """The model folder `path` names, absolute and resolved (`~` expanded, symlinks and `..` resolved, no trailing
    slash), so that every spelling of one folder gives one path.

    Raises:
        FileNotFoundError: `path` is not a folder, or lacks one of `REQUIRED_FILES` (the message names the path
            as given and as resolved, and the missing file).
    """
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise FileNotFoundError(f'no model folder at {str(path)!r} (resolved: {folder})')
    for name in REQUIRED_FILES:
        if not (folder / name).is_file():
            raise FileNotFoundError(
                f'the model folder {str(path)!r} (resolved: {folder}) has no {name}; name the folder that holds '
                f'{", ".join(REQUIRED_FILES)} (a sentence-transformers model folder)'
            )
    return folder


class QueryGate:
    """Queries first: while a query of a model is being embedded, the document batches of that model (the tool
    texts embedded in the background) pause at the start of their next layer, for at most `QUERY_PRIORITY_WAIT`
    seconds each time. On a machine with few cores a query then has the cores (and numpy's BLAS threads) to itself
    instead of sharing them with a batch of tool texts: its latency is the model's, not the backlog's."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0

    @contextlib.contextmanager
    def query(self) -> Iterator[None]:
        """Mark a query as running for the `with` block."""
        with self._cond:
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                if not self._running:
                    self._cond.notify_all()

    def yield_to_queries(self) -> None:
        """Called by a document batch between layers: wait while a query runs (at most `QUERY_PRIORITY_WAIT` s)."""
        with self._cond:
            if self._running:
                self._cond.wait_for(lambda: not self._running, timeout=QUERY_PRIORITY_WAIT)


@dataclass(frozen=True)
class _Layer:
    qkv: Array  # (D, 3D): query, key and value weights side by side, transposed
    qkv_bias: Array  # (3D,)
    out: Array  # (D, D)
    out_bias: Array
    ln1: tuple[Array, Array]
    up: Array  # (D, I)
    up_bias: Array
    down: Array  # (I, D)
    down_bias: Array
    ln2: tuple[Array, Array]


@dataclass(frozen=True)
class _Network:
    """The loaded model: tokenizer, weights (transposed for `x @ W`), and what the folder says of the output."""

    tokenizer: WordPiece
    words: Array
    positions: Array
    token_type: Array
    ln: tuple[Array, Array]
    layers: list[_Layer]
    heads: int
    eps: float
    max_tokens: int
    pooling: tuple[str, ...]
    normalize: bool
    prompts: dict[str, str]
    gate: QueryGate
    """Queries before document batches, for every model object sharing this network (`shared_network`)."""


def _read_json(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_text(encoding='utf-8'))
    if not isinstance(value, dict):
        raise ValueError(f'{path} does not hold a JSON object')
    return value


def _modules(folder: Path) -> tuple[Path, tuple[str, ...], bool]:
    """`(transformer folder, pooling modes, normalize)` from `modules.json` (without one: the folder itself, mean
    pooling, no normalisation, as sentence-transformers does for a plain transformer folder).

    Raises:
        ValueError: a module this model cannot run (a `Dense` layer, an unknown module or pooling mode).
    """
    listed = folder / 'modules.json'
    if not listed.is_file():
        return folder, ('mean',), False
    modules = json.loads(listed.read_text(encoding='utf-8'))
    transformer, normalize = folder, False
    pooling: tuple[str, ...] = ('mean',)
    for module in modules:
        kind = str(module.get('type', '')).rsplit('.', 1)[-1]
        where = folder / str(module.get('path', ''))
        if kind == 'Transformer':
            transformer = where
        elif kind == 'Pooling':
            config = _read_json(where / 'config.json') if (where / 'config.json').is_file() else {}
            if any(config.get(f'pooling_mode_{mode}', False) for mode in ('weightedmean_tokens', 'lasttoken')):
                raise ValueError(f'{where}: weighted-mean and last-token pooling are not supported')
            keys = {
                'cls': 'cls_token',
                'max': 'max_tokens',
                'mean': 'mean_tokens',
                'mean_sqrt_len': 'mean_sqrt_len_tokens',
            }
            pooling = tuple(mode for mode in _POOLING_MODES if config.get(f'pooling_mode_{keys[mode]}', False))
            if not pooling:
                raise ValueError(f'{where}/config.json selects no pooling mode')
        elif kind == 'Normalize':
            normalize = True
        else:
            raise ValueError(
                f'{listed}: the module {kind or module!r} is not supported (Transformer, Pooling, Normalize)'
            )
    return transformer, pooling, normalize


def _load(folder: Path) -> _Network:
    """Read the folder: configuration, tokenizer and weights (float32, transposed once).

    Raises:
        ImportError: numpy or safetensors is missing (the `local` extra).
        ValueError: the folder's model is not a BERT encoder this module runs (or its tokenizer not BERT's
            WordPiece), or a weight is missing.
    """
    try:
        import numpy as np
        from safetensors.numpy import load_file
    except ImportError as e:
        raise ImportError(
            f'LocalEmbeddingModel needs numpy and safetensors: pip install "pydantic-ai-toolproxy[local]" ({e})'
        ) from e
    transformer, pooling, normalize = _modules(folder)
    config = _read_json(transformer / 'config.json')
    if config.get('model_type', 'bert') != 'bert' or config.get('position_embedding_type', 'absolute') != 'absolute':
        raise ValueError(f'{transformer}/config.json: only BERT encoders with absolute positions are supported')
    if config.get('hidden_act', 'gelu') != 'gelu':
        raise ValueError(f'{transformer}/config.json: hidden_act {config.get("hidden_act")!r} is not supported (gelu)')
    st_config = transformer / 'sentence_bert_config.json'
    max_tokens = int(_read_json(st_config).get('max_seq_length') or 0) if st_config.is_file() else 0
    max_tokens = min(max_tokens or DEFAULT_MAX_TOKENS, int(config.get('max_position_embeddings', 512)))
    prompts_file = folder / 'config_sentence_transformers.json'
    prompts = _read_json(prompts_file).get('prompts') or {} if prompts_file.is_file() else {}

    raw = load_file(str(transformer / 'model.safetensors'))
    weights = {name.removeprefix('bert.'): value for name, value in raw.items()}

    def get(name: str) -> Array:
        if name not in weights:
            raise ValueError(f'{transformer}/model.safetensors has no weight {name!r}')
        return np.ascontiguousarray(weights[name], dtype=np.float32)

    def norm(prefix: str) -> tuple[Array, Array]:
        return get(f'{prefix}.LayerNorm.weight'), get(f'{prefix}.LayerNorm.bias')

    layers = []
    for at in range(int(config['num_hidden_layers'])):
        p = f'encoder.layer.{at}'
        q, k, v = (get(f'{p}.attention.self.{n}.weight') for n in ('query', 'key', 'value'))
        layers.append(
            _Layer(
                qkv=np.ascontiguousarray(np.concatenate([q, k, v]).T),
                qkv_bias=np.concatenate([get(f'{p}.attention.self.{n}.bias') for n in ('query', 'key', 'value')]),
                out=np.ascontiguousarray(get(f'{p}.attention.output.dense.weight').T),
                out_bias=get(f'{p}.attention.output.dense.bias'),
                ln1=norm(f'{p}.attention.output'),
                up=np.ascontiguousarray(get(f'{p}.intermediate.dense.weight').T),
                up_bias=get(f'{p}.intermediate.dense.bias'),
                down=np.ascontiguousarray(get(f'{p}.output.dense.weight').T),
                down_bias=get(f'{p}.output.dense.bias'),
                ln2=norm(f'{p}.output'),
            )
        )
    return _Network(
        tokenizer=WordPiece(transformer / 'tokenizer.json'),
        words=get('embeddings.word_embeddings.weight'),
        positions=get('embeddings.position_embeddings.weight'),
        token_type=get('embeddings.token_type_embeddings.weight')[0],
        ln=norm('embeddings'),
        layers=layers,
        heads=int(config['num_attention_heads']),
        eps=float(config.get('layer_norm_eps', 1e-12)),
        max_tokens=max_tokens,
        pooling=pooling,
        normalize=normalize,
        prompts={str(k): str(v) for k, v in prompts.items()},
        gate=QueryGate(),
    )


def _stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """`(name, size, mtime_ns)` of each file of `folder` and its module folders (a replaced file loads again)."""
    files = sorted(path for path in folder.rglob('*') if path.is_file() and path.suffix in ('.json', '.safetensors'))
    out = []
    for path in files:
        info = path.stat()
        out.append((str(path.relative_to(folder)), info.st_size, info.st_mtime_ns))
    return tuple(out)


def shared_network(folder: Path) -> _Network:
    """The network of `folder` (resolved), loaded once per process however many `LocalEmbeddingModel` objects
    name it (one per proxy surface, the CLI's, a host's own): read again only when a file of the folder changed
    (size or mtime). Loading holds a process-wide lock, so two surfaces asking at once read the weights once.

    Raises:
        ImportError, ValueError: as `_load`.
    """
    with _LOADED_LOCK:
        key = (folder, _stamp(folder))
        net = _LOADED.get(key)
        if net is None:
            for old in [k for k in _LOADED if k[0] == folder]:  # the folder's files changed: drop the old weights
                del _LOADED[old]
            net = _LOADED[key] = _load(folder)
        return net


def _batches(lengths: list[int], size: int) -> list[list[int]]:
    """Indexes of `lengths` in batches of similar length, shortest first: at most `size` texts, and at most
    `BATCH_TOKENS` tokens once padded to the batch's longest (a long text never pads many short ones)."""
    order = sorted(range(len(lengths)), key=lambda at: lengths[at])
    out: list[list[int]] = []
    for at in order:
        if out and len(out[-1]) < size and (len(out[-1]) + 1) * lengths[at] <= BATCH_TOKENS:
            out[-1].append(at)
        else:
            out.append([at])
    return out


def _layer_norm(x: Array, weight_bias: tuple[Array, Array], eps: float) -> Array:
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=-1, keepdims=True)
    out: Array = centered / np.sqrt(variance + eps) * weight_bias[0] + weight_bias[1]
    return out


def _gelu(x: Array) -> Array:
    """GELU with the exact erf (as BERT's `gelu`), erf by Abramowitz-Stegun 7.1.26 (error under 1.5e-7), computed in
    place in float32 (the feed-forward activations are the largest arrays of the pass). `x` is overwritten."""
    import numpy as np

    z = np.abs(x)
    z *= np.float32(1 / math.sqrt(2))
    t = z * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x| / sqrt 2)
    # gelu(x) = x (1 + erf(x / sqrt 2)) / 2 = max(x, 0) - |x| (1 - erf(|x| / sqrt 2)) / 2, for either sign of x
    poly *= np.abs(x)
    poly *= np.float32(0.5)
    np.maximum(x, 0, out=x)
    x -= poly
    return x


def _forward(net: _Network, ids: list[list[int]], pause: Callable[[], None] | None = None) -> Array:
    """Sentence vectors `(len(ids), D)` float32 of token id lists of one batch (each at most `max_tokens` long);
    `pause()` before each layer (a document batch yielding to queries, `QueryGate.yield_to_queries`)."""
    import numpy as np

    with np.errstate(over='ignore', under='ignore'):  # padding's -inf scores: no RuntimeWarning in a host's logs
        return _forward_pass(np, net, ids, pause)


def _forward_pass(np: Any, net: _Network, ids: list[list[int]], pause: Callable[[], None] | None) -> Array:
    batch, length = len(ids), max(len(row) for row in ids)
    tokens = np.zeros((batch, length), dtype=np.int64)
    mask = np.zeros((batch, length), dtype=np.float32)
    for at, row in enumerate(ids):
        tokens[at, : len(row)] = row
        mask[at, : len(row)] = 1.0
    x = (net.words[tokens] + net.positions[:length] + net.token_type).reshape(batch * length, -1)
    x = _layer_norm(x, net.ln, net.eps)  # (B * L, D): the dense layers are one matrix product each
    width = x.shape[-1]
    heads, size = net.heads, width // net.heads
    scale = np.float32(1 / math.sqrt(size))
    bias = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :]  # (B, 1, 1, L): padding
    for layer in net.layers:
        if pause is not None:
            pause()
        qkv = (x @ layer.qkv + layer.qkv_bias).reshape(batch, length, 3, heads, size)
        # (B * H, L, d) each, k as (B * H, d, L): 3-d stacks of contiguous matrices, each product one BLAS call
        q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3)).reshape(batch * heads, length, size)
        k = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1)).reshape(batch * heads, size, length)
        v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3)).reshape(batch * heads, length, size)
        scores = np.matmul(q * scale, k).reshape(batch, heads, length, length) + bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = np.matmul(scores.reshape(batch * heads, length, length), v)
        context = context.reshape(batch, heads, length, size).transpose(0, 2, 1, 3).reshape(batch * length, width)
        x = _layer_norm(x + (context @ layer.out + layer.out_bias), layer.ln1, net.eps)
        hidden = _gelu(x @ layer.up + layer.up_bias)
        x = _layer_norm(x + (hidden @ layer.down + layer.down_bias), layer.ln2, net.eps)
    states: Array = x.reshape(batch, length, width)
    weights = mask[:, :, None]
    counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
    parts = []
    for mode in net.pooling:
        if mode == 'cls':
            parts.append(states[:, 0])
        elif mode == 'max':
            parts.append(np.where(weights > 0, states, np.float32(-1e9)).max(axis=1))
        elif mode == 'mean':
            parts.append((states * weights).sum(axis=1) / counts)
        else:  # mean_sqrt_len
            parts.append((states * weights).sum(axis=1) / np.sqrt(counts))
    pooled: Array = np.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]
    if net.normalize:
        pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), np.float32(1e-12))
    return pooled.astype(np.float32, copy=False)


class LocalEmbeddingModel(EmbeddingModel):
    """A sentence-transformers model folder run in this process with numpy (no torch): `local:PATH` as an embedder
    name (`ToolProxyConfig(embedder='local:PATH')`, `toolproxy --embedder local:PATH`).

    ```python
    import pytest

    from pydantic_ai_toolproxy import LocalEmbeddingModel

    with pytest.raises(FileNotFoundError, match='no model folder'):
        LocalEmbeddingModel('/nonexistent/all-MiniLM-L6-v2')
    ```

    Args:
        path: The model folder (str or path; `~` expanded, resolved to an absolute path, so each spelling of one
            folder is one model): `config.json` of a BERT encoder, `model.safetensors`, `tokenizer.json`, and
            usually `modules.json` (pooling, normalisation) and `sentence_bert_config.json` (`max_seq_length`).
        settings: Default `EmbeddingSettings`; `dimensions` keeps the first N values of each vector (as
            sentence-transformers' `truncate_dim`).
        batch_size: Texts per forward pass, at least 1 (default 32).

    Attributes:
        folder: The resolved folder (an absolute `Path`).

    The model's identity (`system:model_name`, the embedding cache's key) is `local:` + the resolved folder. The
    weights are read at the first `embed`, `count_tokens` or `max_input_tokens` (in a worker thread; about 0.1-0.3 s
    for all-MiniLM-L6-v2), once per process and folder (`shared_network`: every model object of one folder shares
    them). `embed` returns float vectors of the model's width (384 for
    all-MiniLM-L6-v2), unit length when the folder lists `Normalize`. Texts longer than the folder's
    `max_seq_length` tokens are cut to it, as sentence-transformers does. Prompts that the folder's
    `config_sentence_transformers.json` names `query` and `document` (else `passage`, else `corpus`) are put before
    queries and documents, as sentence-transformers' `encode_query` and `encode_document` do.

    Raises:
        FileNotFoundError: at construction, the folder does not exist or lacks a required file (named).
        ValueError: `batch_size` below 1; at first use, a model this class cannot run (not BERT, a `Dense` module).
        ImportError: at first use, numpy or safetensors missing (`pip install "pydantic-ai-toolproxy[local]"`).
    """

    def __init__(
        self, path: str | Path, *, settings: EmbeddingSettings | None = None, batch_size: int = BATCH_SIZE
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f'LocalEmbeddingModel batch_size must be an int of at least 1, got {batch_size!r}')
        self.folder = model_folder(path)
        self._batch_size = batch_size
        self._net: _Network | None = None
        super().__init__(settings=settings)

    def __repr__(self) -> str:
        return f'LocalEmbeddingModel({str(self.folder)!r})'

    def __eq__(self, other: object) -> bool:
        """Equal to another `LocalEmbeddingModel` of the same folder, settings and batch size."""
        if not isinstance(other, LocalEmbeddingModel):
            return NotImplemented
        return (self.folder, self.settings, self._batch_size) == (other.folder, other.settings, other._batch_size)

    def __hash__(self) -> int:
        return hash((LocalEmbeddingModel, self.folder, self._batch_size))

    @property
    def model_name(self) -> str:
        """The resolved folder as a string (e.g. `/models/all-MiniLM-L6-v2`)."""
        return str(self.folder)

    @property
    def system(self) -> str:
        """`'local'`."""
        return 'local'

    def _network(self) -> _Network:
        net = self._net
        if net is None:
            net = self._net = shared_network(self.folder)
        return net

    def _encode(self, texts: list[str], prompt: str, query: bool = False) -> list[list[float]]:
        """Vectors of `texts` (in their order), each text after `prompt`, cut to the model's `max_seq_length`.
        A `query` runs first: document batches of this network pause while it runs (`QueryGate`)."""
        net = self._network()
        if query:
            with net.gate.query():
                return self._run(net, texts, prompt, None)
        return self._run(net, texts, prompt, net.gate.yield_to_queries)

    def _run(self, net: _Network, texts: list[str], prompt: str, pause: Callable[[], None] | None) -> list[list[float]]:
        ids = [self._ids(net, prompt + text) for text in texts]
        rows: dict[int, list[float]] = {}
        for chunk in _batches([len(row) for row in ids], self._batch_size):
            for at, vector in zip(chunk, _forward(net, [ids[at] for at in chunk], pause).tolist()):
                rows[at] = vector
        return [rows[at] for at in range(len(ids))]

    @staticmethod
    def _ids(net: _Network, text: str) -> list[int]:
        ids = net.tokenizer.encode(text)
        if len(ids) > net.max_tokens:  # keep the start and the closing [SEP], as a truncating tokenizer does
            ids = [*ids[: net.max_tokens - 1], ids[-1]]
        return ids

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        """Embed `inputs` (one text or a sequence) in a worker thread.

        Returns:
            An `EmbeddingResult` with one vector per input, in order (floats; the model's width, or `dimensions`).

        Raises:
            ImportError: numpy or safetensors missing.
            ValueError: the folder's model cannot be run (see the class).
        """
        texts, merged = self.prepare_embed(inputs, settings)
        net = await asyncio.to_thread(self._network)
        if input_type == 'query':
            prompt = net.prompts.get('query', '')
        else:
            prompt = next((net.prompts[n] for n in ('document', 'passage', 'corpus') if n in net.prompts), '')
        query = input_type == 'query'
        vectors = await asyncio.to_thread(self._encode, texts, prompt, query) if texts else []
        dimensions = merged.get('dimensions')
        if isinstance(dimensions, int) and not isinstance(dimensions, bool) and dimensions > 0:
            vectors = [vector[:dimensions] for vector in vectors]
        return EmbeddingResult(
            vectors, inputs=texts, input_type=input_type, model_name=self.model_name, provider_name=self.system
        )

    async def max_input_tokens(self) -> int | None:
        """The folder's `max_seq_length` (tokens; texts longer than that are cut), e.g. 256 for all-MiniLM-L6-v2."""
        net = await asyncio.to_thread(self._network)
        return net.max_tokens

    async def count_tokens(self, text: str) -> int:
        """Tokens of `text` with the model's tokenizer, the special tokens ([CLS], [SEP]) included, before cutting."""
        net = await asyncio.to_thread(self._network)
        return len(net.tokenizer.encode(text))
