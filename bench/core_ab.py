"""The Rust core of two builds side by side: both extensions loaded in one process, the same BFCL-replica index built
in each, every query timed with one build then the other (CPU time), so the machine's load hits both alike. Prints
the median per query and the median of the per-query ratios (second / first) for `search`, the strategy's one
call (`rank`, or `search_exact` in builds before it) and `explain` of the top 5; the rankings must be equal.

    cp python/pydantic_ai_toolproxy/_core.abi3.so /tmp/before.so    # before the change; rebuild, then:
    .venv/bin/python -m bench.core_ab /tmp/before.so python/pydantic_ai_toolproxy/_core.abi3.so
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.lib.replicas import corpus, keyword_queries, nl_questions, records
from examples.bfcl_tools import load_bfcl_functions


def load(name: str, path: Path) -> ModuleType:
    """The extension at `path` as the module `{name}._core` (its init function is `PyInit__core` either way)."""
    spec = importlib.util.spec_from_file_location(f'{name}._core', path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def calls(index: Any) -> dict[str, Callable[[str], Any]]:
    """What is timed, over `index` of one build: a search, the strategy's one call per query (`rank`, or
    `search_exact` in builds before it), explain of the top 5."""
    if hasattr(index, 'rank'):
        strategy = lambda q: index.rank(q, None, None, 0, 5, 0.0)[:3]  # noqa: E731
    else:
        strategy = lambda q: index.search_exact(q, None, None, 0, 5, 0.0)  # noqa: E731
    return {
        'search (window of 5)': lambda q: index.search(q, None, 0, 5),
        "the strategy's call": strategy,
        'explain of the top 5': lambda q: [index.explain(q, None, k) for k in index.search(q, None, 0, 5)[1]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('first', type=Path, help='the extension before (a _core.abi3.so)')
    parser.add_argument('second', type=Path, help='the extension after')
    parser.add_argument('--sizes', default='1600,8000')
    parser.add_argument('--passes', type=int, default=15)
    args = parser.parse_args()
    first, second = load('first', args.first), load('second', args.second)
    base = load_bfcl_functions()
    queries = keyword_queries(base) + nl_questions()
    for n in (int(s) for s in args.sizes.split(',')):
        rows = records(corpus(n, base))
        a, b = first.SearchIndex(), second.SearchIndex()
        a.upsert(rows)
        b.upsert(rows)
        for q in queries:
            assert a.search(q, None, 0, 10) == b.search(q, None, 0, 10), q
        ca, cb = calls(a), calls(b)
        for name in ca:
            fa, fb = ca[name], cb[name]
            ta: list[float] = []
            tb: list[float] = []
            gc.disable()
            for i in range(args.passes):
                for q in queries:
                    for f, out in ((fa, ta), (fb, tb)) if i % 2 == 0 else ((fb, tb), (fa, ta)):
                        t = time.process_time_ns()
                        f(q)
                        out.append((time.process_time_ns() - t) / 1e3)
            gc.enable()
            ratio = statistics.median(y / x for x, y in zip(ta, tb, strict=True) if x > 0)
            print(
                f'{n:>6,} tools, {name}: {statistics.median(ta):.1f} us -> {statistics.median(tb):.1f} us '
                f'(median per query; per-query ratio {ratio:.3f})',
                flush=True,
            )


if __name__ == '__main__':
    main()
