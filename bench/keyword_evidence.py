"""Hybrid quality with deterministic vectors: how the keyword share's evidence scale (issue 28) was chosen.

    .venv/bin/python -m bench.keyword_evidence [--corpus all|bfcl|agent] [--weight 0.35] [--json OUT]

No model is needed: each tool's text (``embedding_text``, as the package embeds it) and each query are embedded by two
deterministic models written here, so the figures are reproducible on any machine, bit for bit:

* **bag**: the hashed bag of words (lower-cased ``[a-z0-9]+`` words, each adding 1 to one of 256 coordinates chosen
  by blake2b), the model of the test suite's ``BagOfWordsModel``;
* **trigram**: the hashed bag of character trigrams of each word padded with spaces (``" an"``, ``"an "``), 256
  coordinates: it relates word forms (``forecast`` / ``forecasts``) that the bag keeps apart.

The vectors go into the core (``SearchIndex.set_vectors``) and every query runs through ``SearchIndex.search_hybrid``
at the default ``semantic_weight`` (0.35), over every tool of the set, as the package's ``search_proxy_tools`` ranks
them. Each set is split as ``bench/hybrid_quality.py`` splits it: the **development** half (queries at even
positions, 0-based, in file order), on which the rule was chosen, and the **held-out** half (odd positions). Run it
with one build, then another, and compare the printed tables (or ``--json`` files). The keyword-only ranking is
not touched by the fusion: ``bench/dump_rankings.py`` checks that.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from array import array
from pathlib import Path

from bench.lib.metrics import first_rank
from bench.lib.rankers import _key
from bench.lib.sets import agent, bfcl
from pydantic_ai_toolproxy import _core
from pydantic_ai_toolproxy.grouping.directory import index_record
from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text

DIMENSIONS = 256
_WORD = re.compile(r'[a-z0-9]+')


def _slot(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), 'little') % DIMENSIONS


def bag(text: str) -> list[float]:
    """The hashed bag of `text`'s words (256 float32 coordinates)."""
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        vector[_slot(word)] += 1.0
    return vector


def trigram(text: str) -> list[float]:
    """The hashed bag of `text`'s words' character trigrams, each word padded with one space on each side."""
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        padded = f' {word} '
        for at in range(len(padded) - 2):
            vector[_slot(padded[at : at + 3])] += 1.0
    return vector


MODELS = {'bag': bag, 'trigram': trigram}


def measure(corpus: str, model: str, weight: float) -> dict[str, dict[str, float]]:
    """R@1 and R@5 of the hybrid ranking on the development and held-out halves of `corpus` with `model`'s vectors."""
    tools, descriptions, questions = {'bfcl': bfcl, 'agent': agent}[corpus]()
    embed = MODELS[model]
    index = _core.SearchIndex()
    for group, description in descriptions.items():
        index.set_group_description(group, description)
    index.upsert([index_record(_key(tool), tool.group, tool.description, tool.parameters) for tool in tools])
    keys = [_key(tool) for tool in tools]
    rows = array('f')
    for tool in tools:
        rows.extend(embed(embedding_text(tool.group, tool.name, tool.description, descriptions.get(tool.group, ''))))
    index.set_vectors(keys, rows.tobytes(), DIMENSIONS)
    halves: dict[str, list[int | None]] = {'dev': [], 'held-out': []}
    for position, question in enumerate(questions):
        vector = array('f', embed(question.query)).tobytes()
        try:
            _, ranked = index.search_hybrid(question.query, vector, None, 0, 10, weight)
        except ValueError:  # a query over the core's size bound: not found, as in bench/quality.py
            ranked = []
        halves['dev' if position % 2 == 0 else 'held-out'].append(first_rank(question, list(ranked)))
    return {
        half: {
            'R@1': sum(1 for r in ranks if r is not None and r <= 1) / len(ranks),
            'R@5': sum(1 for r in ranks if r is not None and r <= 5) / len(ranks),
            'queries': len(ranks),
        }
        for half, ranks in halves.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--corpus', choices=('all', 'bfcl', 'agent'), default='all')
    parser.add_argument('--weight', type=float, default=0.35)
    parser.add_argument('--json', type=Path, help='also write the figures to this file')
    args = parser.parse_args()
    corpora = ('agent', 'bfcl') if args.corpus == 'all' else (args.corpus,)
    results: dict[str, dict[str, dict[str, float]]] = {}
    print(f'| set | vectors | development R@1 / R@5 | held-out R@1 / R@5 |  (weight {args.weight})')
    print('| --- | --- | --- | --- |')
    for corpus in corpora:
        for model in MODELS:
            figures = measure(corpus, model, args.weight)
            results[f'{corpus}/{model}'] = figures
            dev, held = figures['dev'], figures['held-out']
            print(
                f'| {corpus} | {model} | {dev["R@1"]:.3f} / {dev["R@5"]:.3f} | {held["R@1"]:.3f} / {held["R@5"]:.3f} |',
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
