"""Speed, memory and context benchmark of pydantic-ai-toolproxy against the reference implementations.

Everything is measured in this one process run, on corpora of 1,000 / 10,000 / 100,000 tools made from the
real BFCL function schemas (replicated with name suffixes past their 1,853), with 50 keyword queries and 50
natural-language BFCL questions:

- toolproxy: the Rust core (`_core.SearchIndex` ranking + `_core.plan_page` for the first page of 5), the whole
  `search_proxy_tools` call inside a real agent step, index build and incremental update, per-step overhead
  against Pydantic AI's own per-step tool preparation, index memory, GIL release, request bytes;
- a13n-harness 0.21 ToolSearch ranking (`a13n_harness.toolsets.tool_search._search_matches`, which rebuilds
  its directory and re-tokenizes every definition per search);
- Pydantic AI's local tool-search fallback (`pydantic_ai.capabilities.keywords_search`);
- bm25s (BM25 over name + description + parameter names);
- interleaved tenants (`bench/tenants.py`): one proxy over a per-deps source (3,000 tools a tenant), concurrent runs
  against the same runs one after another, with the index changes each made;
- what a user pays per step with a real provider client (`bench/lib/real_client.py`, issue 15): Pydantic AI's
  `OpenAIChatModel` (and `AnthropicModel` up to 10,000 tools) over real HTTP against the scripted loopback server
  of `bench/lib/loopback_llm.py`, for every tool direct, Pydantic AI's `ToolSearch` and ToolProxy;
- hybrid search (`bench/lib/hybrid_perf.py`): `search_hybrid` with real all-MiniLM-L6-v2 vectors at 10,000 and
  100,000 tools beside keyword search on the same index, the vectors' memory, and loading every vector from
  the persistent SQLite cache.

Here: the options and the measurements, table by table; the implementations timed are in
`bench/lib/perf_references.py`, the timing helpers in `bench/lib/perf_timing.py`, the printed in-process and hybrid
tables in `bench/lib/perf_tables.py`.

Run with `bash scripts/bench-perf` (`.venv-bench/bin/python -m bench.perf` in the CPython 3.13 bench venv, see
`scripts/bench-setup`). Prints Markdown tables of medians, p95s and ratios. Timings are wall-clock on a shared
machine: read medians and ratios, not absolutes.
Options: `--sizes 1000,10000`, `--quick` (fewer repetitions), `--skip-steps` (skip the FunctionModel per-step
timing), `--only real-client` (only the real-client table), `--skip-real-client`, `--only hybrid` (only the
hybrid-search table: all-MiniLM-L6-v2 vectors at `--hybrid-sizes`, default 10,000 and 100,000; bench/lib/hybrid_perf.py),
`--only mcp` (many MCP servers: time to the first model request, starts and memory, bench/mcp_servers.py; also printed
at the end of a full run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from pydantic_ai.toolsets import FunctionToolset

from bench.lib import real_client, tenant_runs
from bench.lib.agent_steps import (
    capability_agents,
    own_work_per_step,
    request_bytes,
    search_call_times,
    step_times,
    toolsets,
)
from bench.lib.loopback_llm import LoopbackServer
from bench.lib.perf_references import CoreSearch, a13n_reference, bm25s_reference, numeric_setup, pydantic_ai_reference
from bench.lib.perf_tables import (
    FEW,
    PER_STEP,
    SOME,
    TENANT_SEARCHES,
    TENANT_TOOLS,
    TENANTS,
    print_hybrid,
    print_tables,
)
from bench.lib.perf_timing import fmt, per_query, settled_rss, stats, timed
from bench.lib.replicas import Fn, corpus, keyword_queries, nl_questions
from bench.lib.tables import table
from examples.bfcl_tools import load_bfcl_functions
from pydantic_ai_toolproxy.grouping.directory import index_record
from pydantic_ai_toolproxy.grouping.names import canonical_name

ANTHROPIC_UP_TO = 10_000
"""Largest corpus the real-client table also measures with `AnthropicModel` (its direct steps take seconds beyond)."""


def real_client_plan(n: int, quick: bool, provider: str) -> dict[str, Any]:
    """Runs of each real-client row at `n` tools (see REAL_CLIENT_PLAN): every direct step carries all `n` definitions,
    which at 100,000 tools takes many seconds of CPU."""
    if n <= 1_000:
        return {'runs': 2 if quick else 5}
    if n <= 10_000:
        return {'runs': 1 if quick or provider == 'anthropic' else 2}
    return {'runs': 1, 'warm_up': [real_client.PROXY], 'text_only': [real_client.DIRECT, real_client.TOOL_SEARCH]}


REAL_CLIENT_PLAN = (
    'Runs: 5 at 1,000 tools (2 with --quick); at 10,000, 2 for OpenAI and 1 for Anthropic (1 with --quick); at '
    '100,000 one each: the direct and ToolSearch rows run a single text step (no tool called, no warm-up '
    'run; every step of theirs carries the same definitions), so their per-task figures are missing (—) or '
    'estimated (≈: two direct steps); ToolProxy runs one task after a warm-up run that builds its index.'
)


# --------------------------------------------------------------------------- report


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', default='1000,10000,100000')
    parser.add_argument('--quick', action='store_true', help='fewer repetitions')
    parser.add_argument(
        '--skip-steps', action='store_true', help='skip the FunctionModel per-step overhead measurement'
    )
    parser.add_argument(
        '--only',
        choices=['real-client', 'hybrid', 'mcp', 'fleet'],
        help='measure and print only this table (hybrid: its sizes; mcp: many MCP servers, bench/mcp_servers.py; '
        'fleet: workers sharing a store, bench/fleet_store.py)',
    )
    parser.add_argument('--skip-real-client', action='store_true', help='skip the real-client step table')
    parser.add_argument(
        '--hybrid-sizes',
        default='10000,100000',
        help='sizes with hybrid-search timings (all-MiniLM-L6-v2 vectors, bench/lib/hybrid_perf.py); empty to skip',
    )
    args = parser.parse_args()
    if args.only == 'mcp':
        from bench.lib import mcp_startup

        await mcp_startup.report(['--runs', '1' if args.quick else '3'])
        return
    if args.only == 'fleet':
        from bench.lib import fleet

        await asyncio.to_thread(fleet.report, ['--quick'] if args.quick else [])
        return
    only_real = args.only == 'real-client'
    only_hybrid = args.only == 'hybrid'
    if only_real and args.skip_real_client:
        parser.error('--only real-client and --skip-real-client exclude each other')
    sizes = [int(s) for s in args.sizes.split(',')]
    if only_hybrid:
        sizes = [n for n in sizes if n in {int(s) for s in args.hybrid_sizes.split(',') if s.strip()}]
    repeat = 1 if args.quick else 3
    started = time.perf_counter()

    def progress(what: str) -> None:
        print(f'- {what} ({time.perf_counter() - started:.0f} s)', flush=True)

    base = load_bfcl_functions()
    kw = keyword_queries(base)
    nl = nl_questions()
    print(
        f'# pydantic-ai-toolproxy performance benchmark\n\nPython {sys.version.split()[0]}, '
        f'{len(base)} BFCL functions replicated to {", ".join(f"{s:,}" for s in sizes)} tools; '
        f'{len(kw)} keyword queries, {len(nl)} natural-language questions. Medians (p95) per query.\n',
        flush=True,
    )
    print(numeric_setup() + '\n', flush=True)

    rank_rows: list[list[str]] = []
    build_rows: list[list[str]] = []
    call_rows: list[list[str]] = []
    step_rows: list[list[str]] = []
    bytes_rows: list[list[str]] = []
    real_rows: dict[str, list[list[str]]] = {provider: [] for provider in real_client.PROVIDERS}
    extra: list[str] = []
    hybrid_rows: list[list[str]] = []
    hybrid_sizes = {int(s) for s in args.hybrid_sizes.split(',') if s.strip()}
    hybrid_vectors = None
    if hybrid_sizes & set(sizes) and not only_real:
        from bench.lib import hybrid_perf
        from bench.lib.embedder import embed_cached
        from examples.bfcl_tools import GROUP_DESCRIPTIONS

        hybrid_vectors = hybrid_perf.base_vectors(base, dict(GROUP_DESCRIPTIONS))
        hybrid_queries = kw + nl
        hybrid_query_vectors = embed_cached(hybrid_queries, 'query')
        progress('embedded the BFCL functions and the queries (all-MiniLM-L6-v2, or its cache)')

    def measure_hybrid(n: int, fns: Sequence[Fn], core: CoreSearch) -> list[str]:
        """The hybrid table's row at `n` tools (bench/lib/hybrid_perf.py): vectors attached to `core`'s index."""
        keys = [canonical_name(f.group, f.name) for f in fns]
        vectors = hybrid_perf.corpus_vectors(n, hybrid_vectors)
        h = hybrid_perf.measure(
            core.index, keys, vectors, hybrid_queries, hybrid_query_vectors, per_query, settled_rss, repeat * 3
        )
        row = [
            f'{n:,}',
            f'{fmt(h["keyword"][0])} ({fmt(h["keyword"][1])})',
            f'{fmt(h["hybrid"][0])} ({fmt(h["hybrid"][1])})',
            f'{fmt(h["keyword_cpu"][0])} ({fmt(h["keyword_cpu"][1])})',
            f'{fmt(h["hybrid_cpu"][0])} ({fmt(h["hybrid_cpu"][1])})',
            fmt(h['set_s'] * 1000),
            f'{h["per_tool"]:,.0f} B',
            '',
        ]
        if n == max(hybrid_sizes & set(sizes)):
            c = hybrid_perf.cache_load(keys, vectors)
            met = 'met' if c['total_s'] <= 1.0 else 'NOT met'
            row[-1] = (
                f'{fmt(c["total_s"] * 1000)}, worst {fmt(c["worst_s"] * 1000)} (target 1 s: {met}; '
                f'{fmt(c["follow_s"] * 1000)} follow + {fmt(c["get_s"] * 1000)} get_many + '
                f'{fmt(c["attach_s"] * 1000)} check and set_vector_rows; file {c["bytes"] / 1e6:.1f} MB)'
            )
        return row

    for n in sizes:
        fns = corpus(n, base)

        async def measure_real_client(sets: dict[str, FunctionToolset[Any]]) -> None:
            with LoopbackServer() as server:
                for provider in real_client.PROVIDERS:
                    if provider == 'anthropic' and n > ANTHROPIC_UP_TO:
                        continue
                    samples = await real_client.measure(
                        fns,
                        server,
                        provider=provider,
                        sets=sets,
                        **real_client_plan(n, args.quick, provider),
                        progress=progress if n > 10_000 else None,
                    )
                    real_rows[provider] += real_client.table_rows(n, samples)
                    progress(f'measured real-client steps ({provider}) at {n:,} tools')

        if only_real:
            await measure_real_client(toolsets(fns))
            continue
        core = CoreSearch(fns)
        index_rss = core.rss
        core.warm(kw + nl)
        if only_hybrid:
            hybrid_rows.append(measure_hybrid(n, fns, core))
            progress(f'measured hybrid search at {n:,} tools')
            del core
            continue
        results: dict[str, dict[str, tuple[float, float]]] = {
            'toolproxy (Rust core)': {'kw': per_query(core, kw, repeat * 3), 'nl': per_query(core, nl, repeat * 3)}
        }
        bm = bm25s_reference(fns)
        if bm is not None:
            results['bm25s'] = {'kw': per_query(bm[0], kw, repeat), 'nl': per_query(bm[0], nl, repeat)}
        pa = pydantic_ai_reference(fns)
        few = len(kw) if n <= 1_000 else SOME if n <= 10_000 else FEW
        few_kw, few_nl = kw[:few], nl[:few]
        results['Pydantic AI keyword fallback'] = {'kw': per_query(pa, few_kw), 'nl': per_query(pa, few_nl)}
        a13n = a13n_reference(fns)
        if a13n is not None:
            results['a13n-harness 0.21 ToolSearch'] = {'kw': per_query(a13n, few_kw), 'nl': per_query(a13n, few_nl)}
        ours = results['toolproxy (Rust core)']
        for name, r in results.items():
            ratio_kw = r['kw'][0] / ours['kw'][0]
            ratio_nl = r['nl'][0] / ours['nl'][0]
            rank_rows.append(
                [
                    f'{n:,}',
                    name,
                    f'{fmt(r["kw"][0])} ({fmt(r["kw"][1])})',
                    f'{fmt(r["nl"][0])} ({fmt(r["nl"][1])})',
                    f'{ratio_kw:,.1f}x' if name != 'toolproxy (Rust core)' else '1x',
                    f'{ratio_nl:,.1f}x' if name != 'toolproxy (Rust core)' else '1x',
                ]
            )
        # incremental update: one tool changed
        changed = fns[len(fns) // 2]
        key = canonical_name(changed.group, changed.name)
        upd = [
            timed(
                lambda: core.index.upsert(
                    [index_record(key, changed.group, changed.description + f' v{i}', changed.parameters)]
                )
            )
            for i in range(20)
        ]
        build_rows.append(
            [
                f'{n:,}',
                fmt(core.build_s * 1000),
                fmt(statistics.median(upd)),
                f'{index_rss / n:,.0f} B' if index_rss > 0 else 'n/a',
                fmt(bm[1] * 1000) if bm is not None else 'n/a',
            ]
        )
        progress(f'measured ranking and build at {n:,} tools')
        # threads: GIL released while ranking
        if n == sizes[-1]:

            def spin(results_: list[int], stop: float) -> None:
                count = 0
                while time.perf_counter() < stop:
                    core.index.search(nl[count % len(nl)], None, 0, 5)
                    count += 1
                results_.append(count)

            one: list[int] = []
            spin(one, time.perf_counter() + 1.0)
            two: list[int] = []
            stop = time.perf_counter() + 1.0
            threads = [threading.Thread(target=spin, args=(two, stop)) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            extra.append(
                f'GIL: at {n:,} tools, 1 thread ranked {one[0]:,} NL questions/s; 2 threads ranked {two[0]:,} + {two[1]:,} = '
                f'{sum(two):,}/s ({sum(two) / one[0]:.2f}x): both threads make progress while ranking.'
            )
        if hybrid_vectors is not None and n in hybrid_sizes:
            hybrid_rows.append(measure_hybrid(n, fns, core))
            progress(f'measured hybrid search at {n:,} tools')
        del core
        sets = toolsets(fns)
        calls = await search_call_times(sets, kw[:PER_STEP] + nl[:PER_STEP], kw[:25] + nl[:25])
        first, later = stats(calls.first_in_step), stats(calls.later_in_step)
        call_rows.append(
            [f'{n:,}', f'{fmt(first[0])} ({fmt(first[1])})', f'{fmt(later[0])} ({fmt(later[1])})', str(calls.builds)]
        )
        progress(f'measured search_proxy_tools calls at {n:,} tools')
        proxy_bytes, direct_bytes = await request_bytes(sets)
        bytes_rows.append(
            [f'{n:,}', f'{proxy_bytes:,} B', f'{direct_bytes:,} B', f'{100 * proxy_bytes / direct_bytes:.3f}%']
        )
        if not args.skip_steps:
            steps = 3
            # A 10,000-tool step takes a second of CPU and a 100,000-tool one about ten: fewer runs there.
            runs = repeat + 2 if n <= 1_000 else repeat if n <= 10_000 else 1
            d, c, p = await step_times(capability_agents(sets, steps), steps, runs)
            own = await own_work_per_step(sets, steps, runs if n <= 10_000 else 1)  # its own code only: steadier
            step_rows.append(
                [
                    f'{n:,}',
                    fmt(d),
                    fmt(c),
                    fmt(p),
                    f'{100 * (p - d) / d:+.1f}%',
                    f'{100 * (p - c) / c:+.1f}%',
                    fmt(own),
                    f'{100 * own / d:.1f}%',
                ]
            )
            progress(f'measured agent steps at {n:,} tools')
        if not args.skip_real_client:
            await measure_real_client(sets)  # last: the other measurements above run as before it existed
        del sets

    if not args.skip_real_client and not only_hybrid:
        print('\n## What a user pays per step: a real provider client against a loopback server\n')
        for provider, rows in real_rows.items():
            if rows:
                print(f'### {real_client.PROVIDER_LABELS[provider]}\n')
                print(table(real_client.HEADERS, rows))
                print()
        print(real_client.NOTE.format(anthropic_up_to=f'{ANTHROPIC_UP_TO:,}', plan=REAL_CLIENT_PLAN))
    if only_real:
        return
    if not only_hybrid:
        progress('measuring interleaved tenants')
        tenant_times = await tenant_runs.interleaved_tenants(
            tenant_runs.tenant_catalogues(corpus(TENANT_TOOLS * TENANTS, base), TENANTS, TENANT_TOOLS),
            nl[:TENANT_SEARCHES],
            TENANT_SEARCHES,
            repeat,
        )
        print_tables(rank_rows, build_rows, call_rows, step_rows, bytes_rows, extra, tenant_times, repeat)
    if hybrid_rows:
        print_hybrid(hybrid_rows)
    if not only_hybrid:
        progress('measuring many MCP servers')
        from bench.lib import mcp_startup

        await mcp_startup.report(['--runs', '1' if args.quick else '3'])
        progress('measuring a fleet of workers sharing one store')
        from bench.lib import fleet

        await asyncio.to_thread(fleet.report, ['--quick'] if args.quick else [])


if __name__ == '__main__':
    asyncio.run(main())
