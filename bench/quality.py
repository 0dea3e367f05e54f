"""Search quality on the BFCL corpus: this package's ranking against the reference rankers (issue 5).

    bash scripts/bench-quality                 # sets up .venv-bench, then runs this
    .venv-bench/bin/python bench/quality.py [--jobs N] [--check]

Every ranker of ``bench/rankers.py`` is built over the 1,582 tools of ``bench/corpus.py`` and asked, for
each of the 2,501 questions, for its first 10 results with the user's question as the query. A question
counts as found at rank r when r is the best rank of any of its expected tools (most questions expect
one tool; ``parallel_multiple`` ones expect several). Metrics, overall (all questions alike) and per
BFCL category:

* Recall@k: share of questions found at rank <= k;
* MRR@10: mean of 1 / rank, 0 for a question not found in the first 10.

Prints Markdown tables; ``--check`` exits 1 unless this package reaches Recall@1 >= 0.63,
Recall@5 >= 0.86 and MRR@10 >= 0.75 and beats every reference row on all three overall.
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import CATEGORIES, Question, load_questions, load_tools  # noqa: E402
from rankers import Ranker, all_rankers  # noqa: E402

K = 10
TARGETS = {'Recall@1': 0.63, 'Recall@5': 0.86, 'MRR@10': 0.75}


@dataclass(frozen=True)
class Scores:
    """Metrics over a set of questions (all in 0..1)."""

    count: int
    recall_1: float
    recall_5: float
    mrr_10: float

    def as_dict(self) -> dict[str, float]:
        """Metric name -> value, named as in `TARGETS`."""
        return {'Recall@1': self.recall_1, 'Recall@5': self.recall_5, 'MRR@10': self.mrr_10}


def first_rank(question: Question, ranked: list[str]) -> int | None:
    """1-based rank of the first expected tool in the first `K` results, or None."""
    for position, name in enumerate(ranked[:K], 1):
        if name in question.expected:
            return position
    return None


def scores(ranks: list[int | None]) -> Scores:
    """Recall@1, Recall@5 and MRR@10 of the given first ranks (None = not found in the first `K`)."""
    n = len(ranks)
    if n == 0:
        return Scores(0, 0.0, 0.0, 0.0)
    found = [r for r in ranks if r is not None]
    return Scores(
        count=n,
        recall_1=sum(r <= 1 for r in found) / n,
        recall_5=sum(r <= 5 for r in found) / n,
        mrr_10=sum(1 / r for r in found) / n,
    )


# Worker state for the process pool (rankers are built once per process, after fork or in the initializer).
_RANKERS: list[Ranker] = []


def _init_worker() -> None:
    global _RANKERS
    if not _RANKERS:
        _RANKERS = all_rankers(load_tools())


def _rank_chunk(chunk: list[tuple[int, str]]) -> list[tuple[int, list[list[str]], list[float]]]:
    """Rank each `(index, query)` with every ranker; return per question the rankings and seconds per ranker."""
    out = []
    for index, query in chunk:
        rankings, seconds = [], []
        for ranker in _RANKERS:
            started = time.perf_counter()
            rankings.append(ranker.rank(query, K))
            seconds.append(time.perf_counter() - started)
        out.append((index, rankings, seconds))
    return out


def run(questions: list[Question], jobs: int) -> tuple[list[str], list[list[list[str]]], list[float]]:
    """Rank every question with every ranker. Returns labels, rankings[question][ranker], seconds per ranker."""
    _init_worker()
    labels = [ranker.label for ranker in _RANKERS]
    items = [(i, q.query) for i, q in enumerate(questions)]
    chunks = [items[start : start + 50] for start in range(0, len(items), 50)]
    if jobs > 1:
        with multiprocessing.get_context('fork').Pool(jobs, initializer=_init_worker) as pool:
            results = [row for part in pool.imap_unordered(_rank_chunk, chunks) for row in part]
    else:
        results = [row for chunk in chunks for row in _rank_chunk(chunk)]
    results.sort(key=lambda row: row[0])
    totals = [sum(row[2][r] for row in results) for r in range(len(labels))]
    return labels, [row[1] for row in results], totals


def _fmt(value: float) -> str:
    return f'{value:.3f}'


def _versions() -> str:
    names = ['a13n-harness', 'pydantic-ai-slim', 'bm25s', 'bfcl-eval', 'pydantic-ai-toolproxy']
    found = []
    for name in names:
        try:
            found.append(f'{name} {metadata.version(name)}')
        except metadata.PackageNotFoundError:
            found.append(f'{name} (not installed)')
    return ', '.join(found) + f'; CPython {platform.python_version()}'


def main() -> int:
    """Run the benchmark and print its tables; return the exit status (1 only with `--check` and a miss)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--jobs', type=int, default=2, help='worker processes (default 2)')
    parser.add_argument('--check', action='store_true', help='exit 1 unless the targets and every reference are beaten')
    args = parser.parse_args()

    started = time.perf_counter()
    tools, questions = load_tools(), load_questions()
    groups = sorted({tool.group for tool in tools})
    print(f'BFCL corpus: {len(tools)} unique tools in {len(groups)} groups (the demo\'s), {len(questions)} questions '
          f'from {len(CATEGORIES)} categories; query = the user\'s question; first {K} results.')
    print(f'Packages: {_versions()}')
    labels, rankings, seconds = run(questions, max(1, args.jobs))

    per_ranker: list[dict[str, list[int | None]]] = []
    for r in range(len(labels)):
        by_category: dict[str, list[int | None]] = defaultdict(list)
        for question, ranked in zip(questions, rankings):
            by_category[question.category].append(first_rank(question, ranked[r]))
        per_ranker.append(by_category)

    overall = [scores([rank for ranks in by.values() for rank in ranks]) for by in per_ranker]
    print()
    print('| ranker | Recall@1 | Recall@5 | MRR@10 | ms / query (Python call, all workers busy) |')
    print('| --- | ---: | ---: | ---: | ---: |')
    for label, result, total in zip(labels, overall, seconds):
        print(f'| {label} | {_fmt(result.recall_1)} | {_fmt(result.recall_5)} | {_fmt(result.mrr_10)} | '
              f'{1000 * total / len(questions):.3f} |')

    print()
    print('Per BFCL category, Recall@1 / Recall@5 / MRR@10:')
    print()
    short = ['a13n ToolSearch', 'Pydantic AI keywords', 'bm25s', 'toolproxy']
    print('| category | questions | ' + ' | '.join(short[: len(labels)]) + ' |')
    print('| --- | ---: | ' + ' | '.join('---' for _ in labels) + ' |')
    for category in CATEGORIES:
        cells = []
        for by in per_ranker:
            s = scores(by[category])
            cells.append(f'{_fmt(s.recall_1)} / {_fmt(s.recall_5)} / {_fmt(s.mrr_10)}')
        print(f'| {category} | {len(per_ranker[0][category])} | ' + ' | '.join(cells) + ' |')
    print(f'\n{time.perf_counter() - started:.0f} s in all ({max(1, args.jobs)} worker processes).')

    ours, references = overall[-1].as_dict(), [o.as_dict() for o in overall[:-1]]
    problems = [f'{metric} {ours[metric]:.3f} < target {target}' for metric, target in TARGETS.items() if ours[metric] < target]
    for label, reference in zip(labels, references):
        problems += [
            f'{metric} {ours[metric]:.3f} does not beat {label} ({value:.3f})'
            for metric, value in reference.items()
            if ours[metric] <= value
        ]
    print('Targets (Recall@1 >= 0.63, Recall@5 >= 0.86, MRR@10 >= 0.75, above every reference): '
          + ('met.' if not problems else 'NOT met: ' + '; '.join(problems)))
    return 1 if problems and args.check else 0


if __name__ == '__main__':
    sys.exit(main())
