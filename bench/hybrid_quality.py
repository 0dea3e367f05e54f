"""The hybrid rows of the search-quality benchmark alone: this package with all-MiniLM-L6-v2 as its embedder.

Run alone (this package's keyword row, bm25s with the group text for the agent target, and the hybrid rows,
without the slower references of ``bench/quality.py``)::

    .venv-bench/bin/python -m bench.hybrid_quality [--corpus all|bfcl|agent]

The rows, the halves and the sign test are those of ``bench/lib/hybrid_rows.py``; exits 1 when a hybrid target
(issue 22) is missed.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.lib.hybrid_rows import (
    CHUNK,
    HYBRID_BFCL_TARGETS,
    NOTE,
    K,
    available,
    first_ranks,
    hybrid_rankings,
    hybrid_targets,
    metrics,
    report,
)
from bench.lib.metrics import AGENT_MARGIN
from bench.lib.rankers import Bm25sRanker, ToolProxySearchRanker
from bench.lib.sets import agent, bfcl


def main() -> int:
    """Run the hybrid tables on their own (see the module docstring); exit 1 when a hybrid target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--corpus', choices=['all', 'bfcl', 'agent'], default='all')
    args = parser.parse_args()
    missing = available()
    if missing is not None:
        print(f'Hybrid rows skipped: {missing}.')
        return 1
    print(NOTE)
    found: list[str] = []
    for name in ('agent', 'bfcl') if args.corpus == 'all' else (args.corpus,):
        tools, descriptions, questions = agent() if name == 'agent' else bfcl()
        started = time.perf_counter()
        keyword_ranker = ToolProxySearchRanker(tools, descriptions)
        keyword = []
        for start in range(0, len(questions), CHUNK):
            keyword += keyword_ranker.rank_many([q.query for q in questions[start : start + CHUNK]], K)
        ranked = hybrid_rankings(tools, descriptions, questions)
        if name == 'agent':
            styles = {
                q.id: 'task-shaped' if q.category.startswith('task/') else 'descriptor + action' for q in questions
            }
            rows = report('Agent queries', questions, keyword, ranked, styles)
            bm25s = Bm25sRanker(tools, descriptions)
            bm25s_r5 = metrics(first_ranks(questions, [bm25s.rank_keys(q.query, K) for q in questions]))[1]
            print(f'\nbm25s with the group text: Recall@5 {bm25s_r5:.3f}.')
            found += hybrid_targets('agent', rows, {'Recall@5': bm25s_r5 + AGENT_MARGIN})
        else:
            rows = report('BFCL', questions, keyword, ranked)
            found += hybrid_targets('BFCL', rows, HYBRID_BFCL_TARGETS)
        print(f'\n{time.perf_counter() - started:.0f} s for this corpus.')
    print(
        '\nHybrid targets (BFCL Recall@1 >= 0.70 and Recall@5 >= 0.90; agent Recall@5 >= bm25s with the group '
        f'text + {AGENT_MARGIN:.2f}; no set below the keyword ranking on Recall@1 or Recall@5): '
        + ('met.' if not found else 'NOT met: ' + '; '.join(found))
    )
    sys.stdout.flush()
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
