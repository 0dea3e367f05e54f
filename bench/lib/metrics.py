"""The search-quality metrics: first ranks, Recall@k and MRR@10 over a set of questions, and the targets shared by
`bench.quality` and `bench.hybrid_quality`."""

from __future__ import annotations

from dataclasses import dataclass

from bench.lib.corpus import Question

K = 10
AGENT_MARGIN = 0.10
"""Issue 14: Recall@5 of this package at least this much above bm25s with the group text."""


@dataclass(frozen=True)
class Scores:
    """Metrics over a set of questions (all in 0..1)."""

    count: int
    recall_1: float
    recall_5: float
    mrr_10: float
    recall_10: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """Metric name -> value, named as in `bench.quality.TARGETS`."""
        return {'Recall@1': self.recall_1, 'Recall@5': self.recall_5, 'MRR@10': self.mrr_10}


def first_rank(question: Question, ranked: list[str]) -> int | None:
    """1-based rank of the first expected tool in the first `K` results, or None."""
    for position, name in enumerate(ranked[:K], 1):
        if name in question.expected:
            return position
    return None


def scores(ranks: list[int | None]) -> Scores:
    """Recall@1, @5, @10 and MRR@10 of the given first ranks (None = not found in the first `K`)."""
    n = len(ranks)
    if n == 0:
        return Scores(0, 0.0, 0.0, 0.0)
    found = [r for r in ranks if r is not None]
    return Scores(
        count=n,
        recall_1=sum(r <= 1 for r in found) / n,
        recall_5=sum(r <= 5 for r in found) / n,
        mrr_10=sum(1 / r for r in found) / n,
        recall_10=sum(r <= 10 for r in found) / n,
    )
