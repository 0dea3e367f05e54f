"""The in-process tables `bench.perf` prints (ranking, index build, whole search calls, per-step CPU time,
interleaved tenants, request bytes; then the hybrid-search table), and how many queries and steps their rows
measure."""

from __future__ import annotations

from typing import Any

from bench.lib import tenant_runs
from bench.lib.tables import table

FEW = 3
"""Queries of each kind the pure-Python references run at 100,000 tools (one a13n question takes seconds)."""
SOME = 10
"""Queries of each kind the pure-Python references run at 10,000 tools (medians settle; all 50 took a minute)."""
PER_STEP = 5
"""Keyword queries and questions each searched as the only search of a step (a 100,000-tool step takes seconds)."""
TENANT_TOOLS, TENANTS, TENANT_SEARCHES = 3_000, 4, 24
"""Interleaved tenants (`bench/tenants.py`): tools a tenant, tenants, searches over all their runs."""


def print_tables(
    rank_rows: list[list[str]],
    build_rows: list[list[str]],
    call_rows: list[list[str]],
    step_rows: list[list[str]],
    bytes_rows: list[list[str]],
    extra: list[str],
    tenant_times: Any,
    repeat: int,
) -> None:
    """The in-process tables (all but the real-client and hybrid ones); `tenant_times` as
    `tenant_runs.interleaved_tenants` returns them, over `repeat` runs."""
    print('\n## Ranking plus first page, per query\n')
    print(
        table(
            ['tools', 'implementation', 'keyword query', 'natural-language question', 'ratio (kw)', 'ratio (NL)'],
            rank_rows,
        )
    )
    print(
        '\nRatios: reference median / toolproxy median (higher = toolproxy faster). The Pydantic AI and a13n '
        f'references run {SOME} queries of each kind at 10,000 tools and {FEW} at 100,000.'
    )
    print('\n## Index build, incremental update, memory\n')
    print(
        table(
            [
                'tools',
                'toolproxy build (from Python records)',
                'one tool changed (upsert)',
                'index RSS per tool',
                'bm25s index build',
            ],
            build_rows,
        )
    )
    print('\n## Whole `search_proxy_tools` call inside an agent step (page of 5 complete entries), median (p95)\n')
    print(
        table(
            ['tools', "a step's first search", 'further searches in the same step', 'index builds (2 runs)'], call_rows
        )
    )
    print(
        f'\nFirst searches: {2 * PER_STEP} steps with one search each ({PER_STEP} keyword queries, {PER_STEP} questions), '
        "each ranking right after its step's tool preparation, with cold CPU caches (the index is brought up to date "
        "while a step is prepared, in ToolProxy's own per-step work); further searches: one step with 50 (25 of "
        'each), run sequentially.'
    )
    if step_rows:
        print(
            '\n## Per-step CPU time with a `FunctionModel` (no request serialization): Pydantic AI alone vs. ToolProxy\n'
        )
        print(
            table(
                [
                    'tools',
                    'toolsets= (direct)',
                    'capabilities=[Toolset(..)]',
                    'ToolProxy',
                    'vs toolsets=',
                    'vs capabilities=',
                    "ToolProxy's own work",
                    'own work / toolsets= step',
                ],
                step_rows,
            )
        )
        print(
            '\nNot what a user pays (see the real-client table above for that): a `FunctionModel` never serializes tool '
            "definitions, so these steps leave out the request a provider client builds, and Pydantic AI's own per-tool "
            'copy of every capability-contributed tool (`CapabilityOwnedToolset`) dominates the difference between the '
            "columns. The table is kept so that a regression in ToolProxy's own per-step work still shows. "
            'A step = one model request (FunctionModel) + one trivial ungrouped tool call; CPU time of this process. '
            "ToolProxy's own work is timed inside proxy runs whose first call is a search: wrapping each source listing "
            'into members, merging, the directory, keeping the index in sync, hiding members from the request, the '
            'guidance instruction and the direct-call guard. The rest of '
            "the difference to `toolsets=` is Pydantic AI's handling of any capability-contributed toolset "
            '(`CapabilityOwnedToolset` copies each tool and its definition every listing, and one more `CombinedToolset` '
            'layer wraps them), which the `capabilities=[Toolset(..)]` column pays too.'
        )
    print('\n## Interleaved tenants: one proxy, a catalogue per tenant (per-deps source), concurrent runs\n')
    print(table(tenant_runs.HEADERS, [tenant_runs.row(TENANT_TOOLS, TENANTS, tenant_times)]))
    print(
        f'\nOne run per tenant, {TENANT_SEARCHES // TENANTS} steps of one search each (NL questions); wall time of all runs, '
        'one after another vs concurrent (each step yields first, so their steps interleave), median of '
        f'{repeat}, each from a fresh proxy: both pay one index build per tenant. Index changes: '
        '`ToolProxyCapability.index_builds` (builds and incremental syncs); one per tenant means no search re-indexed. '
        'Goal: interleaved within 1.2x of sequential.'
    )
    print('\n## Tool-definition bytes per model request\n')
    print(table(['tools', 'through the proxy', 'every tool direct', 'proxy / direct'], bytes_rows))
    print()
    for line in extra:
        print(line)


def print_hybrid(hybrid_rows: list[list[str]]) -> None:
    """The hybrid-search table (bench/lib/hybrid_perf.py)."""
    from bench.lib import hybrid_perf

    print('\n## Hybrid search (all-MiniLM-L6-v2 vectors, 384 dimensions), per query, median (p95)\n')
    print(
        table(
            [
                'tools',
                'keyword search, wall (same index)',
                f'hybrid search, weight {hybrid_perf.WEIGHT}, wall',
                'keyword, CPU time',
                'hybrid, CPU time',
                'set_vectors (all tools)',
                'vector RSS per tool',
                'restart: load every vector from the SQLite cache, median of 5 processes (target 1 s)',
            ],
            hybrid_rows,
        )
    )
    print(
        '\nRanking of the first 5 (100 queries: 50 keyword, 50 natural-language), query vectors computed beforehand: '
        "the embedder's own call is not included. Wall time and the calling thread's CPU time (what the ranking "
        'itself costs, whatever else runs on the machine). '
        + "Tool vectors: real embeddings of the BFCL functions; each replica gets its original's vector plus "
        'Gaussian noise (sigma 0.01 per dimension, then normalized). Restart: a file holding every tool vector under '
        'its text hash (warm OS page cache), loaded by 5 new processes, each timed from "the index records exist" to '
        '"every tool has its vector in the Rust index": ToolVectors.follow (texts, fingerprints), get_many of every '
        'fingerprint, the check and set_vector_rows (bench/embedding_cache.py, which prints the same alone).'
    )
