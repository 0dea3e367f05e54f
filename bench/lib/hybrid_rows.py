"""The hybrid rows of the search-quality benchmark: this package with all-MiniLM-L6-v2 as its embedder.

``bench/quality.py`` calls :func:`hybrid_rankings` after its keyword tables (so the model is loaded only in the
main process, after every worker pool is gone) and :func:`report` prints, per corpus:

* the rows: this package's keyword ranking (the row of the keyword table), **MiniLM alone**
  (``semantic_weight=1.0``: the cosine ranking, exact names still first) and the **hybrid** with the package's
  defaults (``ToolProxyConfig(embedder=<MiniLM>)``, nothing else set), each measured black-box through real
  ``search_proxy_tools`` calls of a real agent run (``rankers.ToolProxySearchRanker``);
* each row on the whole set and on its two halves: the **development** half (queries at even positions,
  0-based, in file order), on which ``bench/experiments/fusion_prototype.py`` chose the defaults, and the **held-out** half
  (odd positions), never used for a choice;
* per query, wins and losses against the keyword ranking (a win: the first relevant result ranks higher; not
  in the first 10 counts as rank 11) and the two-sided exact sign test over them.

The embedder is Pydantic AI's ``SentenceTransformerEmbeddingModel`` over the extracted offline model
(``bench/lib/embedder.py``); tool vectors persist in ``.models/embeddings.sqlite3`` (a ``SQLiteEmbeddingStore``:
the first run embeds every tool, later runs read the file). ``embedding_wait`` and ``query_timeout`` are raised to
600 s, so that the first search waits for every tool vector and no search falls back to keywords because the
CPU model is slow on a busy machine (one agent step runs 50 searches, whose 50 query embeddings share the CPU;
with the default 5 s some of them timed out here): the rows measure the ranking, not this machine's speed.

``bench/hybrid_quality.py`` runs them alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb

from bench.lib.corpus import Question, Tool
from bench.lib.embedder import MODEL_DIR, MODEL_LABEL, load_model, local_model
from bench.lib.rankers import ToolProxySearchRanker

CACHE = MODEL_DIR.parent / 'embeddings.sqlite3'
"""The benchmark's persistent embedding cache (gitignored with `.models/`)."""

K = 10
CHUNK = 50
"""Queries per agent run."""

NOTE = (
    "Rows: this package's keyword ranking (the last row of the table above); MiniLM alone (semantic_weight=1.0: "
    'the cosine ranking, exact names still first); the hybrid with the package defaults (ToolProxyConfig(embedder='
    '<all-MiniLM-L6-v2>), nothing else set). Each on all queries, the development half (even positions, 0-based, '
    'where bench/experiments/fusion_prototype.py chose the defaults) and the held-out half (odd positions). Wins / losses: '
    'queries whose first relevant tool ranks higher / lower than with the keyword ranking (not in the first 10 = '
    'rank 11); p: two-sided exact sign test.'
)

HYBRID = 'hybrid (ToolProxyConfig(embedder=MiniLM), the default semantic_weight)'
ALONE = 'MiniLM alone (semantic_weight=1.0)'


def available() -> str | None:
    """None when the offline model and sentence-transformers are installed, else why the rows are skipped."""
    if not (MODEL_DIR / 'model.safetensors').is_file():
        return f'no model in {MODEL_DIR} (bash scripts/bench-setup installs it)'
    if local_model():
        return None
    try:
        import pydantic_ai.embeddings.sentence_transformers  # noqa: F401
    except ImportError as error:
        return f'sentence-transformers is not installed ({error})'
    return None


def rankers(tools: Sequence[Tool], descriptions: Mapping[str, str]) -> list[ToolProxySearchRanker]:
    """The MiniLM-alone and hybrid rankers over the corpus, in that order."""
    model = load_model()
    common: dict[str, object] = {
        'embedder': model,
        'embedding_cache': str(CACHE),
        'embedding_wait': 600.0,
        'query_timeout': 600.0,
    }
    return [
        ToolProxySearchRanker(tools, descriptions, label=ALONE, semantic_weight=1.0, **common),
        ToolProxySearchRanker(tools, descriptions, label=HYBRID, **common),
    ]


def hybrid_rankings(
    tools: Sequence[Tool], descriptions: Mapping[str, str], questions: Sequence[Question]
) -> dict[str, list[list[str]]]:
    """Label -> the first `K` canonical names of every question, per ranker of `rankers`."""
    out: dict[str, list[list[str]]] = {}
    for ranker in rankers(tools, descriptions):
        ranked: list[list[str]] = []
        queries = [q.query for q in questions]
        for start in range(0, len(queries), CHUNK):
            ranked += ranker.rank_many(queries[start : start + CHUNK], K)
        if ranker.failures:
            print(f'{len(ranker.failures)} searches of {ranker.label} returned no page, e.g. {ranker.failures[0]}')
        out[ranker.label] = ranked
    return out


def first_ranks(questions: Sequence[Question], rankings: Sequence[list[str]]) -> list[int]:
    """The rank of each question's first relevant tool in its first `K` results, `K` + 1 when none is."""
    out = []
    for question, ranked in zip(questions, rankings):
        out.append(next((r for r, key in enumerate(ranked[:K], 1) if key in question.expected), K + 1))
    return out


def metrics(ranks: Sequence[int]) -> tuple[float, float, float, float]:
    """(Recall@1, Recall@5, Recall@10, MRR@10) of first ranks (`K` + 1 = not found)."""
    n = len(ranks) or 1
    return (
        sum(r <= 1 for r in ranks) / n,
        sum(r <= 5 for r in ranks) / n,
        sum(r <= K for r in ranks) / n,
        sum(1 / r for r in ranks if r <= K) / n,
    )


def sign_test(base: Sequence[int], other: Sequence[int]) -> tuple[int, int, float]:
    """(wins, losses, two-sided exact sign-test p) of `other` against `base` (first ranks; lower is better)."""
    wins = sum(b < a for a, b in zip(base, other))
    losses = sum(b > a for a, b in zip(base, other))
    n, k = wins + losses, min(wins, losses)
    return wins, losses, (min(1.0, 2 * sum(comb(n, j) for j in range(k + 1)) / 2**n) if n else 1.0)


HALVES = ('all', 'development half (even positions)', 'held-out half (odd positions)')


def _half(values: Sequence[int], half: str) -> list[int]:
    if half.startswith('development'):
        return list(values[0::2])
    if half.startswith('held-out'):
        return list(values[1::2])
    return list(values)


def report(
    name: str,
    questions: Sequence[Question],
    keyword: Sequence[list[str]],
    hybrid: Mapping[str, list[list[str]]],
    styles: Mapping[str, str] | None = None,
) -> dict[str, dict[str, tuple[float, float, float, float]]]:
    """Print the hybrid tables of corpus `name` (`styles`: question id -> style, for a per-style table); return
    row label -> half -> metrics."""
    rows = {'this package, keyword (the row above)': first_ranks(questions, keyword)}
    rows |= {label: first_ranks(questions, ranked) for label, ranked in hybrid.items()}
    from pydantic_ai_toolproxy import ToolProxyConfig

    weight = ToolProxyConfig().semantic_weight
    base = rows['this package, keyword (the row above)']
    print(f'\n### {name}: hybrid search with {MODEL_LABEL}\n')
    print('| ranker | set | queries | Recall@1 | Recall@5 | Recall@10 | MRR@10 | vs keyword: wins / losses (p) |')
    print('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    out: dict[str, dict[str, tuple[float, float, float, float]]] = {}
    for half in HALVES:
        for label, ranks in rows.items():
            mine, theirs = _half(ranks, half), _half(base, half)
            m = out.setdefault(label, {})[half] = metrics(mine)
            versus = '' if ranks is base else '+{} / -{} ({:.2g})'.format(*sign_test(theirs, mine))
            cells = ' | '.join(f'{v:.3f}' for v in m)
            shown = label.replace('the default semantic_weight', f'semantic_weight={weight}')
            print(f'| {shown} | {half} | {len(mine)} | {cells} | {versus} |')
    if styles is not None:
        names = list(dict.fromkeys(styles[q.id] for q in questions))
        print('\nPer query style, Recall@1 / Recall@5 / Recall@10 / MRR@10:\n')
        counts = {s: sum(styles[q.id] == s for q in questions) for s in names}
        print('| ranker | ' + ' | '.join(f'{s} ({counts[s]})' for s in names) + ' |')
        print('| --- | ' + ' | '.join('---' for _ in names) + ' |')
        for label, ranks in rows.items():
            cells = []
            for s in names:
                m = metrics([r for q, r in zip(questions, ranks) if styles[q.id] == s])
                cells.append(' / '.join(f'{v:.3f}' for v in m))
            print(
                f'| {label.replace("the default semantic_weight", f"semantic_weight={weight}")} | '
                + ' | '.join(cells)
                + ' |'
            )
    return out


HYBRID_BFCL_TARGETS = {'Recall@1': 0.70, 'Recall@5': 0.90}
"""Issue 22: BFCL figures of the hybrid with all-MiniLM-L6-v2."""


def hybrid_targets(
    name: str, rows: dict[str, dict[str, tuple[float, float, float, float]]], targets: dict[str, float]
) -> list[str]:
    """The hybrid targets `name` misses: `targets` (metric -> least value, on all queries) and, on all queries and
    on the held-out half, no Recall@1 or Recall@5 below the keyword ranking."""
    keyword, hybrid = rows['this package, keyword (the row above)'], rows[HYBRID]
    index = {'Recall@1': 0, 'Recall@5': 1}
    found = [
        f'{name} hybrid {metric} {hybrid["all"][index[metric]]:.3f} < {least:.3f}'
        for metric, least in targets.items()
        if hybrid['all'][index[metric]] < least - 1e-12
    ]
    for half in ('all', HALVES[2]):
        found += [
            f'{name} hybrid {metric} on {half.split(" (")[0]} {hybrid[half][i]:.3f} below keyword {keyword[half][i]:.3f}'
            for metric, i in index.items()
            if hybrid[half][i] < keyword[half][i]
        ]
    return found
