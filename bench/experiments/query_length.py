"""Query cost against query length: the Rust core's ranking with 1,000 / 10,000 / 100,000 distinct query tokens.

The search control refuses queries over `_core.MAX_QUERY_BYTES` (4 KiB) from a model; the core itself must still
rank any query in time linear in its distinct tokens (a query is never a way to stall the event loop for
seconds). This prints, over an index of 10,000 BFCL tools (`bench/lib/replicas.py`, the corpus of `bench.perf`), the median time of one
`SearchIndex.search` per query length and the time per 1,000 tokens: linear growth keeps that last column
flat. Half the query's tokens are indexed words (so they find documents), half are words the index lacks.

Run: `.venv/bin/python -m bench.experiments.query_length` (after `bash scripts/bootstrap`), or with `--repeat N`.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.lib.replicas import corpus, records
from examples.bfcl_tools import load_bfcl_functions
from pydantic_ai_toolproxy import _core

LENGTHS = (1_000, 10_000, 100_000)


def vocabulary(fns: list) -> list[str]:
    """Distinct lower-case words of the corpus's names and descriptions, in first-seen order."""
    seen: dict[str, None] = {}
    for f in fns:
        for word in f'{f.name.replace("_", " ")} {f.description}'.lower().split():
            word = ''.join(c for c in word if c.isalnum())
            if word and not word.isdigit():
                seen.setdefault(word, None)
    return list(seen)


def query_of(tokens: int, words: list[str]) -> str:
    """`tokens` distinct tokens: indexed words (cycled with a numbered suffix once used up) and unknown words."""
    half = tokens // 2
    known = [words[i % len(words)] + ('' if i < len(words) else f'x{i}') for i in range(half)]
    unknown = [f'zq{i}w' for i in range(tokens - half)]
    mixed = [w for pair in zip(known, unknown) for w in pair]
    return ' '.join(mixed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tools', type=int, default=10_000)
    parser.add_argument('--repeat', type=int, default=5)
    args = parser.parse_args()
    fns = corpus(args.tools, load_bfcl_functions())
    index = _core.SearchIndex()
    index.upsert(records(fns))
    words = vocabulary(fns)
    print(f'Query cost by length: {args.tools:,} tools, median of {args.repeat} searches per row (limit 5).\n')
    print('| distinct query tokens | query bytes | median search | per 1,000 tokens |')
    print('|---:|---:|---:|---:|')
    for length in LENGTHS:
        query = query_of(length, words)
        samples = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            index.search(query, None, 0, 5)
            samples.append(time.perf_counter() - t)
        median = statistics.median(samples)
        print(f'| {length:,} | {len(query.encode()):,} | {median * 1000:.1f} ms | {median * 1e6 / length:.1f} µs |')


if __name__ == '__main__':
    main()
