"""The corpus of the performance benchmarks: the real BFCL functions replicated to any size, and its queries.

`corpus(n, base)` gives `n` tools: the BFCL functions of `examples/bfcl_tools.py`, then replicas named `{name}_r{k}`
with the same schema and description; `records` builds their index records as the proxy does. Used by `bench.perf`,
`bench.tenants`, `bench.profile_step`, `bench.export_records` and the query-length experiment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from examples.bfcl_tools import BfclFunction, load_bfcl_questions
from pydantic_ai_toolproxy.grouping.directory import IndexRecord, index_record
from pydantic_ai_toolproxy.grouping.names import canonical_name


@dataclass(frozen=True)
class Fn:
    name: str
    group: str
    description: str
    parameters: dict[str, Any]


def corpus(n: int, base: Sequence[BfclFunction]) -> list[Fn]:
    """`n` tools: the BFCL functions, then replicas named `{name}_r{k}` (same schema and description)."""
    out: list[Fn] = []
    k = 0
    while len(out) < n:
        for f in base:
            if len(out) >= n:
                break
            suffix = '' if k == 0 else f'_r{k}'
            out.append(Fn(f.name[: 64 - len(suffix)] + suffix, f.domain, f.description, f.parameters))
        k += 1
    return out


def keyword_queries(base: Sequence[BfclFunction], n: int = 50) -> list[str]:
    """Short keyword queries: the words of evenly spaced BFCL function names (e.g. 'math factorial')."""
    step = max(1, len(base) // n)
    return [' '.join(base[i].name.replace('_', ' ').split()[:3]) for i in range(0, step * n, step)][:n]


def nl_questions(n: int = 50) -> list[str]:
    qs = load_bfcl_questions()
    step = max(1, len(qs) // n)
    return [q.question for q in qs[::step][:n]]


def records(fns: Sequence[Fn]) -> list[IndexRecord]:
    """The index records of `fns`, built as the proxy builds them (`grouping.directory.index_record`)."""
    return [index_record(canonical_name(f.group, f.name), f.group, f.description, f.parameters) for f in fns]
