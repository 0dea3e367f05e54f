"""Write real all-MiniLM-L6-v2 vectors of the benchmark corpora to files, for tests and prototypes of the core.

    .venv-bench/bin/python -m bench.export_vectors --out DIR [--corpus bfcl|agent|all] [--recipe RECIPE]

For each corpus NAME (``bfcl``, ``agent``) two pairs of files:

* ``NAME_tools.f32`` + ``NAME_tools.json``: one row per tool, the text of ``bench/lib/tool_texts.py``'s recipe
  (default ``name+description+group``) embedded with ``embed_documents``;
* ``NAME_queries.f32`` + ``NAME_queries.json``: one row per query, embedded with ``embed_query``.

A ``.f32`` file is raw little-endian float32, row-major, ``count * dims * 4`` bytes, each row L2-normalized.
Its ``.json`` sidecar: ``{"format": "float32-le row-major", "count", "dims", "model", "recipe", "order"}``,
where ``order`` lists the row keys in order: the tools' canonical names ``group__tool`` (as
``_core.SearchIndex`` keys them), or the query ids (BFCL ids, ``line N`` for the agent set); query sidecars
also carry ``queries`` (the texts) and ``expected`` (canonical names per query). Nothing reaches a model hub
(``bench/lib/embedder.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.lib.embedder import MODEL_LABEL, embed
from bench.lib.rankers import _key
from bench.lib.sets import agent, bfcl
from bench.lib.tool_texts import DEFAULT_RECIPE, RECIPES, tool_texts


def write(path: Path, vectors: np.ndarray, header: dict[str, object]) -> None:
    """Write `vectors` (count x dims float32) to `path` + '.f32' and its sidecar to `path` + '.json'."""
    rows = np.ascontiguousarray(vectors, dtype='<f4')
    path.with_suffix('.f32').write_bytes(rows.tobytes())
    meta = {'format': 'float32-le row-major', 'count': rows.shape[0], 'dims': rows.shape[1], 'model': MODEL_LABEL}
    path.with_suffix('.json').write_text(json.dumps({**meta, **header}, ensure_ascii=False) + '\n', encoding='utf-8')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', type=Path, required=True)
    parser.add_argument('--corpus', choices=['all', 'bfcl', 'agent'], default='all')
    parser.add_argument('--recipe', choices=RECIPES, default=DEFAULT_RECIPE)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ('bfcl', 'agent') if args.corpus == 'all' else (args.corpus,):
        tools, descriptions, questions = bfcl() if name == 'bfcl' else agent()
        started = time.perf_counter()
        tool_vectors = embed(tool_texts(tools, descriptions, args.recipe), 'document')
        query_vectors = embed([q.query for q in questions], 'query')
        write(args.out / f'{name}_tools', tool_vectors, {'recipe': args.recipe, 'order': [_key(t) for t in tools]})
        write(
            args.out / f'{name}_queries',
            query_vectors,
            {
                'recipe': 'query text as is',
                'order': [q.id for q in questions],
                'queries': [q.query for q in questions],
                'expected': [sorted(q.expected) for q in questions],
            },
        )
        print(
            f'{name}: {len(tools)} tools, {len(questions)} queries, {tool_vectors.shape[1]} dims, '
            f'{time.perf_counter() - started:.1f} s -> {args.out}/{name}_{{tools,queries}}.{{f32,json}}'
        )
    return 0


if __name__ == '__main__':
    sys.exit(main())
