"""Experiment: does a static-embedding signal (WordLlama) fused with this package's lexical ranking earn its place?

    # one-off set-up, outside the repo (wordllama is not a dependency of anything here):
    # CPython 3.13, as .venv-bench (python3.13, or $(pyenv root)/versions/3.13.0/bin/python3); a path of your own:
    python3.13 -m venv /tmp/semvenv && /tmp/semvenv/bin/pip install wordllama==0.4.0.post1
    # run with the bench venv (its in-tree extension, bfcl-eval data, pydantic-ai); wordllama and its two
    # extra dependencies (safetensors, toml) are found in SEMANTIC_SITE, a site directory added *after* .venv-bench's:
    SEMANTIC_SITE=/tmp/semvenv/lib/python3.13/site-packages .venv-bench/bin/python -m bench.experiments.semantic_fusion
        [--corpus all|agent|bfcl] [--depth 50] [--score-fusion]

Nothing is downloaded: WordLlama's wheel ships its 256-dimension ``l2_supercat`` model (a float16 safetensors
file) and its tokenizer; it is loaded with ``cache_dir`` = the package directory and ``disable_download=True``
(wordllama 0.4.0.post1 looks for the bundled tokenizer under ``tokenizer/`` while the wheel puts it under
``tokenizers/``, so the default ``load()`` would try the hub).

* **Lexical**: ``bench/lib/rankers.py``'s ``ToolProxyRanker`` (``_core.SearchIndex`` fed ``grouping.directory.index_record``
  records, with the group descriptions), first ``--depth`` results. A query over ``MAX_QUERY_BYTES`` counts as
  not found for every row (the control refuses it).
* **Semantic**: cosine of L2-normalized WordLlama embeddings of the query and of each tool's text: ``tool`` =
  name with ``_`` as spaces + description; ``tool+group`` = that + group name + group description. First
  ``--depth`` by cosine.
* **RRF**: score = (1-w)/(k + rank_lex) + w/(k + rank_sem), k = 10, absent from a list = no term; ties by
  lexical rank, then semantic rank. Exact-name matches (the core's rule: the trimmed query equals a tool's local
  or canonical name, ignoring case; confirmed with ``SearchIndex.explain``) stay first, in lexical order.
* **Score fusion** (``--score-fusion``): lexical score / the query's best lexical score (``explain``'s score,
  0 outside the lexical list) + w * cosine, over the union of both lists; exact names first as above.

Weights are chosen on the agent-query development set (best MRR@10), and BFCL is reported at that weight;
a 2-fold split of the agent set (odd / even query lines: choose on one half, report on the other) shows how
much of the dev-set gain is the choice itself. R@1 flips are tested with a two-sided exact sign test.

Result as first measured (wordllama 0.4.0.post1, l2_supercat 256-d; lexical w = 0 equal to bench/quality.py's
rows): RRF at the dev-chosen weight (0.35 tool text, 0.25 with group text) gains about 2 points R@1 and MRR@10 on
the agent set but loses 2-2.5 points R@1 on BFCL (sign test p < 0.001), so it does not pass "better on the dev set
without losing on BFCL". Score fusion (tool text, w = 2.0 chosen on the agent set) gains R@1 +2.8 / MRR +0.027 on
the agent set and R@1 +0.7 / R@5 +1.2 / MRR +0.009 on BFCL, neither R@1 change significant (p 0.06 and 0.30).
Re-run after numbers and `you` / contraction pieces became optional query words (BFCL keyword row 0.700 / 0.884 /
0.778): score fusion at w = 2.0 gives agent R@1 +3.0 (p 0.044), BFCL R@1 +0.0 (104 / 104 flips), R@5 +0.7.
"""

from __future__ import annotations

import argparse
import os
import site
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.lib.corpus import Question, Tool
from bench.lib.metrics import first_rank, scores
from bench.lib.rankers import ToolProxyRanker
from bench.lib.sets import agent, bfcl
from pydantic_ai_toolproxy import _core

K_RRF = 10
WEIGHTS = (0.0, 0.1, 0.15, 0.25, 0.35, 0.5, 0.75)
SCORE_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
LEXICAL = {
    'agent': {'R@1': 0.614, 'R@5': 0.836, 'R@10': 0.908, 'MRR@10': 0.710},
    'bfcl': {'R@1': 0.700, 'R@5': 0.884},
}
"""The keyword figures last measured (bench/quality.py): the w = 0 row is checked against them."""


def semantic_rankings(cosines: Any, too_long: set[int], tool_keys: Sequence[str], depth: int) -> list[list[str]]:
    """Per query (a row of `cosines`, queries x tools): the `depth` tool keys of highest cosine, best first (ties in
    tool order); none for a query the control refuses (`too_long`)."""
    rankings: list[list[str]] = []
    for i, row in enumerate(cosines):
        if i in too_long:
            rankings.append([])
            continue
        top = np.argpartition(-row, depth)[:depth]
        rankings.append([tool_keys[j] for j in top[np.argsort(-row[top], kind='stable')]])
    return rankings


def load_model() -> object:
    """WordLlama's bundled 256-d l2_supercat model, offline."""
    folder = os.environ.get('SEMANTIC_SITE', '/tmp/semvenv/lib/python3.13/site-packages')
    if Path(folder).is_dir():
        # a site directory after .venv-bench's: only what it lacks (wordllama, safetensors, toml) comes from here
        site.addsitedir(folder)
    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def tool_texts(tools: Sequence[Tool], descriptions: dict[str, str], with_group: bool) -> list[str]:
    texts = [f'{tool.name.replace("_", " ")}. {tool.description}' for tool in tools]
    if with_group:
        texts = [
            f'{text} {tool.group.replace("_", " ")}: {descriptions.get(tool.group, "")}'
            for text, tool in zip(texts, tools)
        ]
    return texts


def embed(model: object, texts: list[str]) -> np.ndarray:
    return np.asarray(model.embed(texts, norm=True), dtype=np.float32)  # type: ignore[attr-defined]


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per vector: (codes, scale) with vector ~= codes * scale."""
    scale = np.abs(vectors).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    return np.round(vectors / scale).astype(np.int8), scale.astype(np.float32)


class Lexical:
    """The core's ranking (ToolProxyRanker's path), deep, with exact-name detection and optional scores."""

    def __init__(self, tools: Sequence[Tool], descriptions: dict[str, str]) -> None:
        self.ranker = ToolProxyRanker(tools, descriptions)
        self.index = self.ranker._index
        self.names = {tool.name.lower() for tool in tools} | {k.lower() for k in self.index.keys()}  # noqa: SIM118 (not a dict)

    def rank(self, query: str, depth: int) -> tuple[list[str], int]:
        """(keys, how many of the first keys are exact-name matches)."""
        if len(query.encode('utf-8', 'surrogatepass')) > _core.MAX_QUERY_BYTES:
            return [], 0
        keys = self.ranker.rank_keys(query, depth)
        exact = 0
        if query.strip().lower() in self.names:
            while exact < len(keys) and self.index.explain(query, None, keys[exact])[0]:
                exact += 1
        return keys, exact

    def score(self, query: str, key: str) -> float:
        return float(self.index.explain(query, None, key)[1])


def rrf(lex: list[str], exact: int, sem: list[str], w: float) -> list[str]:
    if not lex and not sem:
        return []
    lex_rank = {key: r for r, key in enumerate(lex, 1)}
    sem_rank = {key: r for r, key in enumerate(sem, 1)}
    big = 10**9
    fused = {}
    for key in lex_rank.keys() | sem_rank.keys():
        s = 0.0
        if key in lex_rank:
            s += (1 - w) / (K_RRF + lex_rank[key])
        if key in sem_rank:
            s += w / (K_RRF + sem_rank[key])
        if s > 0:
            fused[key] = s
    pinned = lex[:exact]
    rest = sorted(
        (key for key in fused if key not in pinned),
        key=lambda key: (-fused[key], lex_rank.get(key, big), sem_rank.get(key, big)),
    )
    return pinned + rest


def score_fusion(
    lex: list[str], exact: int, lex_scores: list[float], sem: list[str], cos: dict[str, float], w: float
) -> list[str]:
    top = max(lex_scores, default=0.0) or 1.0
    lex_norm = {key: s / top for key, s in zip(lex, lex_scores)}
    lex_rank = {key: r for r, key in enumerate(lex, 1)}
    pinned = lex[:exact]
    keys = (lex_norm.keys() | set(sem if w > 0 else [])) - set(pinned)
    fused = {key: lex_norm.get(key, 0.0) + w * cos[key] for key in keys}
    return pinned + sorted(fused, key=lambda key: (-fused[key], lex_rank.get(key, 10**9)))


def metrics(questions: Sequence[Question], rankings: Sequence[list[str]]) -> dict[str, float]:
    s = scores([first_rank(q, r) for q, r in zip(questions, rankings)])
    return {'R@1': s.recall_1, 'R@5': s.recall_5, 'R@10': s.recall_10, 'MRR@10': s.mrr_10}


def wins_losses(questions: Sequence[Question], base: Sequence[list[str]], other: Sequence[list[str]]) -> str:
    """Queries whose first relevant rank got better / worse (not found = 11)."""
    better = worse = 0
    for q, a, b in zip(questions, base, other):
        ra, rb = first_rank(q, a) or 11, first_rank(q, b) or 11
        better += rb < ra
        worse += rb > ra
    return f'+{better} / -{worse}'


def table(title: str, rows: list[tuple[str, dict[str, float], str]]) -> None:
    print(f'\n{title}\n')
    print('| row | R@1 | R@5 | R@10 | MRR@10 | queries better / worse than w=0 |')
    print('| --- | ---: | ---: | ---: | ---: | ---: |')
    for label, m, wl in rows:
        print(f'| {label} | {m["R@1"]:.3f} | {m["R@5"]:.3f} | {m["R@10"]:.3f} | {m["MRR@10"]:.3f} | {wl} |')


def run_corpus(name: str, model: object, depth: int, with_score_fusion: bool) -> dict[str, object]:
    tools, descriptions, questions = agent() if name == 'agent' else bfcl()
    lexical = Lexical(tools, descriptions)
    keys = list(lexical.index.keys())
    order = {key: i for i, key in enumerate(keys)}
    from bench.lib.rankers import _key

    tool_keys = [_key(tool) for tool in tools]
    position = {key: j for j, key in enumerate(tool_keys)}
    assert set(tool_keys) == set(order), 'records and tools differ'

    started = time.perf_counter()
    lex = [lexical.rank(q.query, depth) for q in questions]
    lex_seconds = (time.perf_counter() - started) / len(questions)

    queries = [q.query for q in questions]
    too_long = {i for i, q in enumerate(queries) if len(q.encode('utf-8', 'surrogatepass')) > _core.MAX_QUERY_BYTES}
    q_vecs = embed(model, queries)

    print(f'\n## {name}: {len(tools)} tools, {len(questions)} queries; lexical depth {depth}, RRF k = {K_RRF}')
    if too_long:
        print(f'({len(too_long)} query over MAX_QUERY_BYTES = {_core.MAX_QUERY_BYTES}: not found in every row)')
    lex_rankings = [keys_ for keys_, _exact in lex]
    base = metrics(questions, lex_rankings)
    print(
        "\nw = 0 check against bench/quality.py's keyword figures: "
        + ', '.join(f'{m} {base[m]:.3f} (expected {v:.3f})' for m, v in LEXICAL[name].items())
        + f'; exact-name queries: {sum(e > 0 for _k, e in lex)}; lexical search {1000 * lex_seconds:.2f} ms/query'
    )

    exact_check(lexical, model, tools, tool_keys, depth)

    result: dict[str, object] = {'base': base}
    for variant in ('tool', 'tool+group'):
        texts = tool_texts(tools, descriptions, with_group=variant == 'tool+group')
        t_vecs = embed(model, texts)
        cos_all = q_vecs @ t_vecs.T
        sem = semantic_rankings(cos_all, too_long, tool_keys, depth)
        sem_only = metrics(questions, sem)
        rows = [(f'semantic only ({variant})', sem_only, wins_losses(questions, lex_rankings, sem))]
        per_w: dict[float, list[list[str]]] = {}
        for w in WEIGHTS:
            fused = [rrf(lk, e, s, w) for (lk, e), s in zip(lex, sem)]
            per_w[w] = fused
            rows.append((f'RRF w={w}', metrics(questions, fused), wins_losses(questions, lex_rankings, fused)))
        table(f'### {name}, semantic text = {variant}: RRF', rows)
        result[variant] = {'rrf': {w: metrics(questions, f) for w, f in per_w.items()}, 'questions': questions}
        result[variant]['rrf_rankings'] = per_w  # type: ignore[index]

        # int8: same rankings?
        codes, scale = quantize(t_vecs)
        cos_q = q_vecs @ (codes.astype(np.float32) * scale).T
        same = sum(
            list(np.argsort(-cos_q[i], kind='stable')[:10]) == list(np.argsort(-cos_all[i], kind='stable')[:10])
            for i in range(len(questions))
        )
        sem8 = semantic_rankings(cos_q, too_long, tool_keys, depth)
        int8_rrf = {w: metrics(questions, [rrf(lk, e, s, w) for (lk, e), s in zip(lex, sem8)]) for w in WEIGHTS[1:]}
        print(
            f'\nint8 tool vectors (per-vector scale): semantic top 10 in the same order for {same} / '
            f'{len(questions)} queries; RRF with int8, R@1 / MRR@10 per w: '
            + ', '.join(f'{w}: {m["R@1"]:.3f} / {m["MRR@10"]:.3f}' for w, m in int8_rrf.items())
        )

        if with_score_fusion:
            started = time.perf_counter()
            lex_scores = [[lexical.score(q.query, key) for key in lk] for q, (lk, _e) in zip(questions, lex)]
            explain_s = time.perf_counter() - started
            rows = []
            sf: dict[float, dict[str, float]] = {}
            for w in SCORE_WEIGHTS:
                fused = []
                for i, ((lk, e), ls, s) in enumerate(zip(lex, lex_scores, sem)):
                    cos = {key: float(cos_all[i, position[key]]) for key in set(lk) | set(s)}
                    fused.append(score_fusion(lk, e, ls, s, cos, w) if i not in too_long else [])
                sf[w] = metrics(questions, fused)
                result[variant].setdefault('score_rankings', {})[w] = fused  # type: ignore[union-attr]
                rows.append((f'score w={w}', sf[w], wins_losses(questions, lex_rankings, fused)))
            table(
                f'### {name}, semantic text = {variant}: lexical score / best + w * cosine '
                f'(explain for scores: {explain_s:.0f} s)',
                rows,
            )
            result[variant]['score'] = sf  # type: ignore[index]
    result['timing'] = timings(model, tools, descriptions, queries)
    return result


def exact_check(lexical: Lexical, model: object, tools: Sequence[Tool], tool_keys: list[str], depth: int) -> None:
    """Neither corpus has a query that is a tool name, so check the pinning on the tools' own names (up to 300)
    at the largest weight: the fused first result must be the lexical first result."""
    names = [tool.name for tool in tools[:300]]
    t_vecs = embed(model, tool_texts(tools, {}, with_group=False))
    cos = embed(model, names) @ t_vecs.T
    kept = pinned = 0
    for i, name in enumerate(names):
        lk, e = lexical.rank(name, depth)
        sem = [tool_keys[j] for j in np.argsort(-cos[i], kind='stable')[:depth]]
        pinned += e > 0
        kept += bool(lk) and rrf(lk, e, sem, WEIGHTS[-1])[0] == lk[0]
    assert kept == len(names), (kept, len(names))
    print(
        f'Exact names: {len(names)} tool names as queries, {pinned} found as exact names, all keep the lexical '
        f'first result at w = {WEIGHTS[-1]}.'
    )


def sign_test(questions: Sequence[Question], base: Sequence[list[str]], other: Sequence[list[str]]) -> str:
    """Queries whose rank-1 hit flipped (gained / lost) and the two-sided exact sign-test p."""
    from math import comb

    gained = lost = 0
    for q, a, b in zip(questions, base, other):
        ha, hb = first_rank(q, a) == 1, first_rank(q, b) == 1
        gained += hb and not ha
        lost += ha and not hb
    n, k = gained + lost, min(gained, lost)
    p = min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0
    return f'R@1 flips +{gained} / -{lost} (sign test p = {p:.3f})'


def timings(model: object, tools: Sequence[Tool], descriptions: dict[str, str], queries: list[str]) -> dict[str, float]:
    texts = tool_texts(tools, descriptions, with_group=True)
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        embed(model, texts)
        runs.append(time.perf_counter() - started)
    one = []
    for query in queries[:300]:
        started = time.perf_counter()
        embed(model, [query])
        one.append(time.perf_counter() - started)
    dim = embed(model, texts[:1]).shape[1]
    t = {'tools_s': statistics.median(runs), 'query_ms': 1000 * statistics.median(one), 'dim': dim}
    print(
        f'\nTimings: embedding all {len(tools)} tool texts (with group text) {t["tools_s"]:.3f} s (median of 3, '
        f'{1e6 * t["tools_s"] / len(tools):.0f} us/tool); one query {t["query_ms"]:.3f} ms (median of '
        f'{len(one)}). int8 vector: {dim} bytes + 4-byte scale = {dim + 4} bytes/tool '
        f'({(dim + 4) * len(tools) / 1024:.0f} KiB for this corpus; float32 {4 * dim} bytes/tool).'
    )
    return t


def choose(res: dict[str, object], variant: str, kind: str, subset: list[int] | None = None) -> float:
    rankings = res[variant][f'{kind}_rankings']  # type: ignore[index]
    questions = res[variant]['questions']  # type: ignore[index]
    idx = subset if subset is not None else list(range(len(questions)))
    best = max(
        rankings,
        key=lambda w: (metrics([questions[i] for i in idx], [rankings[w][i] for i in idx])['MRR@10'], -w),
    )
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--corpus', choices=['all', 'agent', 'bfcl'], default='all')
    parser.add_argument('--depth', type=int, default=50, help='results taken from each ranking before fusion')
    parser.add_argument('--score-fusion', action='store_true', help='also normalized lexical score + w * cosine')
    args = parser.parse_args()

    import importlib.metadata as md

    started = time.perf_counter()
    rss0 = _rss_kib()
    model = load_model()
    load_s = time.perf_counter() - started
    import wordllama

    weights = next((Path(wordllama.__file__).parent / 'weights').glob('*.safetensors'))
    versions = ', '.join(f'{p} {md.version(p)}' for p in ('wordllama', 'numpy', 'tokenizers', 'safetensors'))
    print(
        f'Packages: {versions}; model {weights.name} ({weights.stat().st_size:,} bytes on disk), '
        f'embedding matrix {model.embedding.shape} {model.embedding.dtype}; '  # type: ignore[attr-defined]
        f'load {load_s:.2f} s, resident +{(_rss_kib() - rss0) / 1024:.0f} MiB'
    )

    results = {}
    for name in ('agent', 'bfcl') if args.corpus == 'all' else (args.corpus,):
        results[name] = run_corpus(name, model, args.depth, args.score_fusion)

    if 'agent' in results:
        print('\n## Weight chosen on the agent dev set (best MRR@10), then applied elsewhere\n')
        agent_res = results['agent']
        n = len(agent_res['tool']['questions'])  # type: ignore[index]
        odd, even = list(range(0, n, 2)), list(range(1, n, 2))
        for variant, kind in [(v, k) for v in ('tool', 'tool+group') for k in ('rrf', 'score')]:
            if f'{kind}_rankings' not in agent_res[variant]:  # type: ignore[operator]
                continue
            w = choose(agent_res, variant, kind)
            line = f'- {variant}, {kind}: w = {w}; agent {_fmt(agent_res[variant][kind][w])}'  # type: ignore[index]
            line += ', ' + _flips(agent_res, variant, kind, w)
            if 'bfcl' in results:
                line += f'; BFCL {_fmt(results["bfcl"][variant][kind][w])}'  # type: ignore[index]
                line += ', ' + _flips(results['bfcl'], variant, kind, w)
            folds = []
            for pick, report in ((odd, even), (even, odd)):
                wf = choose(agent_res, variant, kind, pick)
                qs = agent_res[variant]['questions']  # type: ignore[index]
                fused = [agent_res[variant][f'{kind}_rankings'][wf][i] for i in report]  # type: ignore[index]
                base = [agent_res[variant][f'{kind}_rankings'][0.0][i] for i in report]  # type: ignore[index]
                m, b = metrics([qs[i] for i in report], fused), metrics([qs[i] for i in report], base)
                folds.append(
                    f'w={wf}: MRR {b["MRR@10"]:.3f} -> {m["MRR@10"]:.3f}, R@1 {b["R@1"]:.3f} -> {m["R@1"]:.3f}'
                )
            print(line + '; agent 2-fold (choose on odd/even lines, report the other half): ' + ' | '.join(folds))
    return 0


def _flips(res: dict[str, object], variant: str, kind: str, w: float) -> str:
    rankings = res[variant][f'{kind}_rankings']  # type: ignore[index]
    return sign_test(res[variant]['questions'], rankings[0.0], rankings[w])  # type: ignore[index]


def _fmt(m: dict[str, float]) -> str:
    return ' '.join(f'{k} {v:.3f}' for k, v in m.items())


def _rss_kib() -> int:
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    return 0


if __name__ == '__main__':
    sys.exit(main())
