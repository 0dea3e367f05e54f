"""Offline prototype of the hybrid fusion (keyword core + all-MiniLM-L6-v2 cosines), to choose its defaults.

    .venv-bench/bin/python -m bench.experiments.fusion_prototype [--corpus all|bfcl|agent] [--int8]

Reimplements, in numpy over the core's own keyword results, the fusion the Rust core ranks by
(``SearchIndex.search_hybrid``; docs/architecture.md):

* S = every tool (no group filter here), each with a vector; cos(t) = cosine of the query and tool vectors
  (``--int8``: tool vectors quantized as the core stores them, int8 codes with one f32 scale per vector);
* c1 = the best cosine, cF = the F-th best; sem(t) = clip((cos(t) - cF) / (c1 - cF), 0, 1);
* kw(t) = the core's keyword score (``SearchIndex.explain``) / the query's best keyword score, 0 for a non-match;
* fused(t) = (1 - w) * kw(t) + w * sem(t); exact-name matches first, then fused descending, then
  the keyword score, then (group, tool) byte order; ranked: the keyword matches and the tools with sem > 0 (w = 0: the keyword matches
  only, the keyword search itself). Only the keyword top (10 + F) and the tools with sem > 0 can reach the first
  10.

Grid: the three tool-text recipes of ``bench/lib/tool_texts.py``, F in ``FS``, w in ``WEIGHTS``. The defaults are
chosen on the **development half** of each set (queries at even positions, 0-based, in file order), by the mean
over the sets of (Recall@1 + Recall@5) / 2, and reported unchanged on the **held-out half** (odd positions).
Per query, a win is a first relevant rank that got better than the keyword ranking's (not in the first 10 = 11),
a loss one that got worse; the p value is the two-sided exact sign test over wins and losses. A query the search
control refuses (one BFCL question is over MAX_QUERY_BYTES) counts as not found in every row. The w = 0 row is
checked to be the keyword ranking itself. Vectors are embedded once and kept under ``.models/vectors/``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

import numpy as np

from bench.lib.corpus import Question, Tool
from bench.lib.embedder import embed_cached
from bench.lib.metrics import K, first_rank, scores
from bench.lib.rankers import ToolProxyRanker, _key
from bench.lib.sets import agent, bfcl
from bench.lib.tool_texts import RECIPES, tool_texts
from pydantic_ai_toolproxy import _core

FS = (10, 20, 50, 100)
WEIGHTS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 1.0)


@dataclass
class Corpus:
    """One set with its keyword results: per query the keyword top `depth` keys, and (exact, score) per key
    explained so far."""

    name: str
    tools: list[Tool]
    descriptions: dict[str, str]
    questions: list[Question]
    index: _core.SearchIndex
    keys: list[str]
    tie: np.ndarray
    """Position of each tool (in `keys` order) in (group, tool) byte order."""
    refused: set[int]
    keyword: list[list[str]]
    explained: list[dict[str, tuple[bool, float]]]

    def explain(self, i: int, key: str) -> tuple[bool, float]:
        found = self.explained[i].get(key)
        if found is None:
            result = self.index.explain(self.questions[i].query, None, key)
            assert result is not None, key
            found = self.explained[i][key] = (bool(result[0]), float(result[1]))
        return found


def load(name: str, depth: int) -> Corpus:
    tools, descriptions, questions = bfcl() if name == 'bfcl' else agent()
    ranker = ToolProxyRanker(tools, descriptions)
    index = ranker._index
    keys = [_key(tool) for tool in tools]
    order = sorted(range(len(tools)), key=lambda j: (tools[j].group.encode(), tools[j].name.encode()))
    tie = np.empty(len(tools), dtype=np.int64)
    tie[order] = np.arange(len(tools))
    refused = {
        i for i, q in enumerate(questions) if len(q.query.encode('utf-8', 'surrogatepass')) > _core.MAX_QUERY_BYTES
    }
    keyword = [[] if i in refused else list(index.search(q.query, None, 0, depth)[1]) for i, q in enumerate(questions)]
    corpus = Corpus(name, tools, descriptions, questions, index, keys, tie, refused, keyword, [{} for _ in questions])
    for i, ranked in enumerate(keyword):
        for key in ranked:
            corpus.explain(i, key)
    return corpus


def cosines(corpus: Corpus, recipe: str, int8: bool) -> np.ndarray:
    """Queries x tools cosines under `recipe` (tool vectors int8-quantized when `int8`)."""
    tool_vectors = embed_cached(tool_texts(corpus.tools, corpus.descriptions, recipe), 'document')
    if int8:
        scale = np.abs(tool_vectors).max(axis=1, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        tool_vectors = np.round(tool_vectors / scale) * scale
        norms = np.linalg.norm(tool_vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        tool_vectors = tool_vectors / norms
    query_vectors = embed_cached([q.query for q in corpus.questions], 'query')
    return (query_vectors @ tool_vectors.T).astype(np.float32)


def fuse(corpus: Corpus, cos: np.ndarray, f: int, weights: Sequence[float]) -> dict[float, list[list[str]]]:
    """The first `K` keys of every query under the fusion with `f` and each weight."""
    out: dict[float, list[list[str]]] = {w: [] for w in weights}
    position = {key: j for j, key in enumerate(corpus.keys)}
    n = len(corpus.keys)
    for i in range(len(corpus.questions)):
        if i in corpus.refused:
            for w in weights:
                out[w].append([])
            continue
        row = cos[i]
        ff = min(f, n)
        c_f = np.partition(row, n - ff)[n - ff]
        c_1 = row.max()
        near = np.flatnonzero(row > c_f) if c_1 > c_f else np.empty(0, dtype=np.int64)
        candidates = list(dict.fromkeys([*corpus.keyword[i][: K + f], *(corpus.keys[j] for j in near)]))
        idx = np.array([position[key] for key in candidates], dtype=np.int64)
        info = [corpus.explain(i, key) for key in candidates]
        exact = np.array([e for e, _ in info], dtype=bool)
        score = np.array([s for _, s in info], dtype=np.float64)
        best = max((s for key, (_e, s) in corpus.explained[i].items()), default=0.0)
        kw = score / best if best > 0 else np.zeros_like(score)
        sem = np.clip((row[idx] - c_f) / (c_1 - c_f), 0.0, 1.0) if c_1 > c_f else np.zeros(len(idx))
        kw_rank = {key: r for r, key in enumerate(corpus.keyword[i])}
        matched = (score > 0) | exact | (sem > 0) | np.array([key in kw_rank for key in candidates], dtype=bool)
        exact_rank = np.array([kw_rank.get(key, 10**9) if e else 0 for key, e in zip(candidates, exact)])
        keyword_match = matched & ((score > 0) | exact | np.array([key in kw_rank for key in candidates], dtype=bool))
        for w in weights:
            fused = (1 - w) * kw + w * sem
            order = np.lexsort((corpus.tie[idx], -score, -fused, exact_rank, ~exact))
            ranked = matched if w > 0 else keyword_match  # weight 0 is the keyword search itself
            out[w].append([candidates[j] for j in order if ranked[j]][:K])
    return out


def ranks(questions: Sequence[Question], rankings: Sequence[list[str]]) -> list[int]:
    """First relevant rank per query, 11 for not in the first `K`."""
    return [first_rank(q, r) or K + 1 for q, r in zip(questions, rankings)]


def metrics(rs: Sequence[int]) -> tuple[float, float, float, float]:
    """(R@1, R@5, R@10, MRR@10) of first ranks (11 = not found)."""
    s = scores([r if r <= K else None for r in rs])
    return s.recall_1, s.recall_5, s.recall_10, s.mrr_10


def sign_test(base: Sequence[int], other: Sequence[int]) -> tuple[int, int, float]:
    """(wins, losses, two-sided exact sign-test p) of `other` against `base` (first ranks, lower is better)."""
    wins = sum(b < a for a, b in zip(base, other))
    losses = sum(b > a for a, b in zip(base, other))
    n, k = wins + losses, min(wins, losses)
    p = min(1.0, 2 * sum(comb(n, j) for j in range(k + 1)) / 2**n) if n else 1.0
    return wins, losses, p


def objective(rs: Sequence[int]) -> float:
    r1, r5, _r10, _mrr = metrics(rs)
    return (r1 + r5) / 2


def row(label: str, rs: Sequence[int], base: Sequence[int] | None) -> str:
    r1, r5, r10, mrr = metrics(rs)
    cells = f'| {label} | {r1:.3f} | {r5:.3f} | {r10:.3f} | {mrr:.3f} |'
    if base is None:
        return cells + ' |'
    wins, losses, p = sign_test(base, rs)
    return cells + f' +{wins} / -{losses} (p = {p:.2g}) |'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--corpus', choices=['all', 'bfcl', 'agent'], default='all')
    parser.add_argument('--int8', action='store_true', help='quantize the tool vectors as the core stores them')
    parser.add_argument('--recipes', default=','.join(RECIPES), help='comma-separated recipes of the grid')
    parser.add_argument('--fs', default=','.join(map(str, FS)), help='comma-separated values of F of the grid')
    args = parser.parse_args()
    names = ('bfcl', 'agent') if args.corpus == 'all' else (args.corpus,)
    recipes = tuple(args.recipes.split(','))
    fs = tuple(int(f) for f in args.fs.split(','))
    if not set(recipes) <= set(RECIPES):
        parser.error(f'--recipes: choose among {RECIPES}')

    started = time.perf_counter()
    corpora = {name: load(name, K + max(fs)) for name in names}
    print(f'Keyword results and scores: {time.perf_counter() - started:.0f} s')
    halves: dict[str, dict[str, list[int]]] = {}
    for name, c in corpora.items():
        n = len(c.questions)
        halves[name] = {'dev': list(range(0, n, 2)), 'held-out': list(range(1, n, 2)), 'all': list(range(n))}

    # grid[(recipe, f, w)][corpus] = first ranks of every query
    grid: dict[tuple[str, int, float], dict[str, list[int]]] = {}
    keyword: dict[str, list[int]] = {}
    alone: dict[tuple[str, str], list[int]] = {}
    for name, c in corpora.items():
        keyword[name] = ranks(c.questions, c.keyword)
        for recipe in recipes:
            started = time.perf_counter()
            cos = cosines(c, recipe, args.int8)
            top = np.argsort(-cos, axis=1, kind='stable')[:, :K]
            alone[(recipe, name)] = ranks(
                c.questions, [[] if i in c.refused else [c.keys[j] for j in top[i]] for i in range(len(top))]
            )
            for f in fs:
                for w, rankings in fuse(c, cos, f, WEIGHTS).items():
                    grid.setdefault((recipe, f, w), {})[name] = ranks(c.questions, rankings)
            print(f'{name} {recipe}: {time.perf_counter() - started:.0f} s', file=sys.stderr)
        for f in fs:
            assert grid[(recipes[0], f, 0.0)][name] == keyword[name], f'w = 0 is not the keyword ranking ({name})'

    def on(rs: list[int], name: str, half: str) -> list[int]:
        return [rs[i] for i in halves[name][half]]

    def dev_score(config: tuple[str, int, float]) -> float:
        return sum(objective(on(grid[config][n], n, 'dev')) for n in names) / len(names)

    chosen = max(grid, key=lambda config: (round(dev_score(config), 6), -abs(config[2] - 0.4), -config[1]))
    recipe, f, w = chosen
    print(
        f'\nChosen on the development halves: recipe {recipe}, F = {f}, w = {w} (dev objective {dev_score(chosen):.4f})'
    )
    if args.int8:
        print('(tool vectors int8-quantized as the core stores them)')

    for name in names:
        for half in ('held-out', 'dev', 'all'):
            base = on(keyword[name], name, half)
            print(f'\n### {name}, {half} half ({len(base)} queries)\n' if half != 'all' else f'\n### {name}, all\n')
            print('| row | R@1 | R@5 | R@10 | MRR@10 | per query vs keyword: wins / losses (sign test) |')
            print('| --- | ---: | ---: | ---: | ---: | ---: |')
            print(row('keyword (the core today)', base, None))
            print(row(f'MiniLM alone ({recipe})', on(alone[(recipe, name)], name, half), base))
            print(row(f'hybrid, {recipe}, F = {f}, w = {w}', on(grid[chosen][name], name, half), base))

    print('\n### Grid on the development halves: objective (mean over sets of (R@1 + R@5) / 2) per recipe and F\n')
    print('| recipe | F | best w | objective at best w | at w = 0.4 |')
    print('| --- | ---: | ---: | ---: | ---: |')
    for r in recipes:
        for ff in fs:
            best = max(WEIGHTS, key=lambda ww: (round(dev_score((r, ff, ww)), 6), -abs(ww - 0.4)))
            print(f'| {r} | {ff} | {best} | {dev_score((r, ff, best)):.4f} | {dev_score((r, ff, 0.4)):.4f} |')

    for name in names:
        print(f'\n### {name}: R@1 / R@5 per weight (recipe {recipe}, F = {f}), development | held-out half\n')
        print('| w | dev R@1 | dev R@5 | held-out R@1 | held-out R@5 |')
        print('| ---: | ---: | ---: | ---: | ---: |')
        for ww in WEIGHTS:
            d, h = (
                metrics(on(grid[(recipe, f, ww)][name], name, 'dev')),
                metrics(on(grid[(recipe, f, ww)][name], name, 'held-out')),
            )
            print(f'| {ww} | {d[0]:.3f} | {d[1]:.3f} | {h[0]:.3f} | {h[1]:.3f} |')
        print(f'\n### {name}: held-out R@1 / R@5 per F and recipe at w = {w}\n')
        print('| recipe | ' + ' | '.join(f'F = {ff}' for ff in fs) + ' |')
        print('| --- | ' + ' | '.join('---:' for _ in fs) + ' |')
        for r in recipes:
            cells = []
            for ff in fs:
                m = metrics(on(grid[(r, ff, w)][name], name, 'held-out'))
                cells.append(f'{m[0]:.3f} / {m[1]:.3f}')
            print(f'| {r} | ' + ' | '.join(cells) + ' |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
