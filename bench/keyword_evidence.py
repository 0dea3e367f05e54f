"""Hybrid quality with deterministic vectors: how the keyword share's evidence scale (issue 28) was chosen.

    .venv/bin/python -m bench.keyword_evidence [--corpus all|bfcl|agent] [--weight 0.35] [--json OUT]
    PYTHONPATH=python .venv/bin/python -m bench.keyword_evidence --minilm   # the real model too, and the rule variants

No model is needed: each tool's text (``embedding_text``, as the package embeds it) and each query are embedded by two
deterministic models written here, so the figures are reproducible on any machine, bit for bit:

* **bag**: the hashed bag of words (lower-cased ``[a-z0-9]+`` words, each adding 1 to one of 256 coordinates chosen
  by blake2b), the model of the test suite's ``BagOfWordsModel``;
* **trigram**: the hashed bag of character trigrams of each word padded with spaces (``" an"``, ``"an "``), 256
  coordinates: it relates word forms (``forecast`` / ``forecasts``) that the bag keeps apart.

With ``--minilm`` a third model joins them, the real all-MiniLM-L6-v2 run by the package's ``LocalEmbeddingModel``
(``bench/lib/embedder.py``, vectors cached under ``.models/vectors``), and each set is ranked under variants of the
rule (``--variants``, below) as well as under the rule built into the core.

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
import math
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
VARIANTS = ('built', 'none', 'r=0.2', 'r=0.5')
"""The evidence rules compared with ``--minilm``: the core's (``e = min(1, matched idf / idf of a word held by 10% of
the tools)``), none (``e = 1``, the rule before issue 28), and the same rule with ``r`` = 20% and 50%. The core has
one rule built in; a variant's ranking is the core's at another weight (``variant_weight``: ``e`` scales the keyword
share of every tool of a query alike, so a query ranked with evidence ``e'`` is the query ranked with ``e`` at the
weight that gives the two shares the same ratio), or, where the core's ``e`` is 0 and the variant's is not, the
fused scores recomputed from ``explain_hybrid`` over the first 50 of the keyword and the hybrid rankings. Smaller
``r`` would need the matched idf past ``e = 1``, which the core does not report."""


def _lucene_idf(live: int, df: int) -> float:
    """The core's idf (Lucene's BM25 idf, `bm25f::lucene_idf`) of a word held by `df` of `live` documents."""
    return math.log(1.0 + (live - df + 0.5) / (df + 0.5))


def variant_evidence(variant: str, built: float, live: int) -> float:
    """The evidence `e'` of `variant` for a query whose evidence under the core's rule is `built` (0 to 1)."""
    if variant == 'built':
        return built
    if variant == 'none':
        return 1.0
    if built >= 1.0:  # matched at least the idf of a word held by 10%: at least that of one held by r > 10% too
        return 1.0
    share = float(variant.removeprefix('r='))
    matched = built * _lucene_idf(live, math.ceil(0.1 * live))
    return min(1.0, matched / _lucene_idf(live, math.ceil(share * live)))


def variant_weight(weight: float, built: float, wanted: float) -> float:
    """The weight at which the core's ranking (keyword share scaled by `built`) orders a query as `weight` with the
    keyword share scaled by `wanted` does: `(1 - w') built / w' = (1 - w) wanted / w` (`built` > 0)."""
    return weight * built / (weight * built + (1 - weight) * wanted)


def _rerank(index: _core.SearchIndex, query: str, vector: bytes, weight: float, wanted: float) -> list[str]:
    """The first 10 of `query`'s hybrid ranking with evidence `wanted`, from `explain_hybrid`'s parts, over the first
    50 of the keyword ranking and of the core's hybrid ranking (exact names first, the fused score, the keyword
    score, then the core's order)."""
    _, by_keyword = index.search(query, None, 0, 50)
    _, by_hybrid = index.search_hybrid(query, vector, None, 0, 50, weight)
    candidates = list(dict.fromkeys([*by_hybrid, *by_keyword]))
    parts = {key: index.explain_hybrid(query, vector, None, key, weight) for key in candidates}
    best = max((p[1] for p in parts.values() if p is not None), default=0.0)
    order = {key: at for at, key in enumerate(candidates)}

    def sort_key(key: str) -> tuple[bool, float, float, int]:
        exact, keyword_score, _, _, semantic_share, _, _ = parts[key] or (False, 0.0, 0.0, None, 0.0, 0.0, 0.0)
        fused = (1 - weight) * wanted * (keyword_score / best if best > 0 else 0.0) + semantic_share
        return (not exact, -fused, -keyword_score, order[key])

    return sorted(candidates, key=sort_key)[:10]


def measure(
    corpus: str, model: str, weight: float, variants: tuple[str, ...] = ('built',)
) -> dict[str, dict[str, dict[str, float]]]:
    """Variant -> half -> R@1 and R@5 of the hybrid ranking on the development and held-out halves of `corpus`
    with `model`'s vectors."""
    tools, descriptions, questions = {'bfcl': bfcl, 'agent': agent}[corpus]()
    index = _core.SearchIndex()
    for group, description in descriptions.items():
        index.set_group_description(group, description)
    index.upsert([index_record(_key(tool), tool.group, tool.description, tool.parameters) for tool in tools])
    keys = [_key(tool) for tool in tools]
    texts = [
        embedding_text(tool.group, tool.name, tool.description, descriptions.get(tool.group, '')) for tool in tools
    ]
    if model == 'minilm':
        from bench.lib.embedder import embed_cached

        rows_matrix = embed_cached(texts, 'document')
        index.set_vectors(keys, rows_matrix.astype('<f4').tobytes(), rows_matrix.shape[1])
        query_rows = embed_cached([q.query for q in questions], 'query')
        query_vectors = [row.astype('<f4').tobytes() for row in query_rows]
    else:
        embed = MODELS[model]
        rows = array('f')
        for text in texts:
            rows.extend(embed(text))
        index.set_vectors(keys, rows.tobytes(), DIMENSIONS)
        query_vectors = [array('f', embed(q.query)).tobytes() for q in questions]
    live = len(tools)
    halves: dict[str, dict[str, list[int | None]]] = {v: {'dev': [], 'held-out': []} for v in variants}
    partial = 0  # queries whose evidence under the core's rule is below 1
    moved = dict.fromkeys(variants, 0)  # queries whose first 10 under a variant differ from the core's
    for position, (question, vector) in enumerate(zip(questions, query_vectors)):
        half = 'dev' if position % 2 == 0 else 'held-out'
        try:
            _, ranked = index.search_hybrid(question.query, vector, None, 0, 10, weight)
            _, top = index.search(question.query, None, 0, 1)
            parts = index.explain_hybrid(question.query, vector, None, top[0], weight) if top else None
        except ValueError:  # a query over the core's size bound: not found, as in bench/quality.py
            for variant in variants:
                halves[variant][half].append(None)
            continue
        built = parts[2] / (1 - weight) if parts is not None and parts[1] > 0 and weight < 1 else 1.0
        partial += built < 1.0 - 1e-6
        for variant in variants:
            wanted = variant_evidence(variant, built, live)
            if wanted == built or parts is None or parts[1] <= 0:
                this = list(ranked)
            elif built > 0:
                w = variant_weight(weight, built, wanted)
                this = list(index.search_hybrid(question.query, vector, None, 0, 10, w)[1])
            else:
                this = _rerank(index, question.query, vector, weight, wanted)
            halves[variant][half].append(first_rank(question, this))
            moved[variant] += this != list(ranked)
    return {
        variant: {
            half: {
                'R@1': sum(1 for r in ranks if r is not None and r <= 1) / len(ranks),
                'R@5': sum(1 for r in ranks if r is not None and r <= 5) / len(ranks),
                'queries': len(ranks),
            }
            for half, ranks in by_half.items()
        }
        | {'queries': {'partial evidence': partial, 'first 10 moved': moved[variant]}}
        for variant, by_half in halves.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--corpus', choices=('all', 'bfcl', 'agent'), default='all')
    parser.add_argument('--weight', type=float, default=0.35)
    parser.add_argument('--json', type=Path, help='also write the figures to this file')
    parser.add_argument('--minilm', action='store_true', help='all-MiniLM-L6-v2 (LocalEmbeddingModel) too')
    parser.add_argument('--variants', action='store_true', help='every rule of VARIANTS, not only the built one')
    args = parser.parse_args()
    corpora = ('agent', 'bfcl') if args.corpus == 'all' else (args.corpus,)
    models = [*MODELS, 'minilm'] if args.minilm else list(MODELS)
    variants = VARIANTS if args.variants or args.minilm else ('built',)
    results: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    print(
        f'| set | vectors | rule | development R@1 / R@5 | held-out R@1 / R@5 | queries with e < 1, first 10 moved |'
        f'  (weight {args.weight})'
    )
    print('| --- | --- | --- | --- | --- | --- |')
    for corpus in corpora:
        for model in models:
            figures = measure(corpus, model, args.weight, variants)
            results[f'{corpus}/{model}'] = figures
            for variant, by_half in figures.items():
                dev, held, counts = by_half['dev'], by_half['held-out'], by_half['queries']
                print(
                    f'| {corpus} | {model} | {variant} | {dev["R@1"]:.3f} / {dev["R@5"]:.3f} | '
                    f'{held["R@1"]:.3f} / {held["R@5"]:.3f} | '
                    f'{counts["partial evidence"]:g}, {counts["first 10 moved"]:g} |',
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
