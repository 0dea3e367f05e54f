"""A fleet of workers sharing one store (issue 31): what the embedder is paid, and the PostgreSQL store's speed.

Three tables, measured in one run against a throwaway PostgreSQL server this module starts (`postgres_server`,
a unix socket; PostgreSQL 15 from Debian's `postgresql-15`), with the SQLite file as the reference:

1. **Embedder calls of a fleet**: `--workers` processes (`fleet_worker`: each a real `Agent` run with hybrid search
   over the same `--tools` new tools, an embedder of `--delay` seconds per call) started together over memory-only
   caches (the reference: each pays for every text), one SQLite file, one PostgreSQL database; then one more worker
   started after them. Texts embedded in all (the target: `--tools`, once), by the late worker (target 0), whether
   every worker got the same page, and the wall time until every worker had every vector.
2. **Restart from PostgreSQL**: 100,000 cached vectors of 384 dimensions to the Rust index in new processes, end to
   end (`vector_cache.restart_loads`, target 1.5 s), beside the same from SQLite.
3. **Writing 100,000 vectors** with one `put_many` (target 5 s), PostgreSQL and SQLite.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.lib import vector_cache
from bench.lib.postgres_server import start_postgres

ROOT = Path(__file__).resolve().parents[2]
LOAD_TARGET_S = 1.5
WRITE_TARGET_S = 5.0


def _workers(store: str, count: int, tools: int, delay: float, go: Path) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [
                sys.executable,
                '-m',
                'bench.lib.fleet_worker',
                store,
                str(go),
                '--tools',
                str(tools),
                '--delay',
                str(delay),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]


def _reports(procs: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        if proc.returncode:
            raise SystemExit(f'fleet worker failed:\n{stderr[-3000:]}')
        out.append(json.loads(stdout))
    return out


def fleet_row(name: str, store: str, workers: int, tools: int, delay: float) -> list[str]:
    """One row of table 1 for `store` (`memory`, a SQLite path or a URL)."""
    with tempfile.TemporaryDirectory() as tmp:
        go = Path(tmp) / 'go'
        procs = _workers(store, workers, tools, delay, go)
        time.sleep(1.5)  # every worker imported and waiting
        started = time.perf_counter()
        go.touch()
        reports = _reports(procs)
        wall = time.perf_counter() - started
        late = _reports(_workers(store, 1, tools, delay, go))[0]
    pages = [r['page'] for r in reports] + [late['page']]
    same = all(p == pages[0] for p in pages)
    return [
        name,
        f'{sum(r["embedded"] for r in reports):,}',
        ' + '.join(str(r['embedded']) for r in reports),
        f'{late["embedded"]:,}',
        'yes' if same else 'NO',
        f'{wall:.2f} s',
    ]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(row) + ' |' for row in rows]
    return '\n'.join(lines)


def write_times(place: str, tools: int, dimensions: int, repeat: int) -> list[float]:
    """Seconds of one `put_many` of `tools` new vectors into a fresh model of the store at `place`, `repeat` times."""
    items = vector_cache.vectors(tools, dimensions)
    times = []
    for run in range(repeat):
        model = f'{vector_cache.MODEL}:write{run}:{dimensions}'
        with vector_cache.open_place(place) as store:
            started = time.perf_counter()
            store.put_many(model, items)
            times.append(time.perf_counter() - started)
            if getattr(store, 'fault', None):
                raise SystemExit(f'write failed: {store.fault}')
    return times


def report(argv: list[str] | None = None) -> None:
    """Print the three tables (see the module docstring). `argv`: `--workers`, `--tools`, `--delay`, `--vectors`,
    `--repeat`, `--quick`."""
    import argparse

    parser = argparse.ArgumentParser(prog='python -m bench.fleet_store', description=__doc__.split('\n\n')[0])
    parser.add_argument('--workers', type=int, default=4)
    parser.add_argument('--tools', type=int, default=640)
    parser.add_argument('--delay', type=float, default=0.05, help='seconds per embed_documents call')
    parser.add_argument('--vectors', type=int, default=100_000, help='cached vectors of the restart and write tables')
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--quick', action='store_true', help='2 repeats')
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else args.repeat
    load = os.getloadavg()
    print(f'\n## A fleet of workers sharing one store (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})\n')
    server = start_postgres()
    try:
        server.psql('CREATE DATABASE fleet')
        server.psql('CREATE DATABASE restart')
        with tempfile.TemporaryDirectory() as tmp:
            rows = [
                fleet_row('memory only (reference)', 'memory', args.workers, args.tools, args.delay),
                fleet_row('one SQLite file', str(Path(tmp) / 'fleet.sqlite3'), args.workers, args.tools, args.delay),
                fleet_row('PostgreSQL', server.url('fleet'), args.workers, args.tools, args.delay),
            ]
            print(
                f'{args.workers} workers started together over {args.tools:,} new tools, then one more '
                f'(embedder: {args.delay:g} s a call of up to 64 texts; target: {args.tools:,} in all, 0 for the late '
                'worker)\n'
            )
            print(
                _table(
                    ['store', 'texts embedded', 'per worker', 'late worker', 'same pages', 'until every vector'],
                    rows,
                )
            )
            records, descriptions = vector_cache.corpus_records(args.vectors)
            hashes = vector_cache.text_hashes(records, descriptions)
            block, size = vector_cache.vector_block(384), 384 * 4

            def row(i: int) -> bytes:
                return block[(i % 64) * size : (i % 64 + 1) * size]

            sqlite = Path(tmp) / 'restart.sqlite3'
            vector_cache.write_cache(sqlite, hashes, row)
            vector_cache.write_cache(server.url('restart'), hashes, row)
            print(f'\nRestart: {args.vectors:,} cached vectors (384 dimensions) to the Rust index, new processes\n')
            for name, place, target in (
                ('PostgreSQL', server.url('restart'), LOAD_TARGET_S),
                ('SQLite (reference)', str(sqlite), 1.0),
            ):
                figures = vector_cache.summary(vector_cache.restart_loads(place, args.vectors, repeat))
                print(f'- {name}: ' + vector_cache.describe(figures, args.vectors, repeat, target, 'restart'))
            print(f'\nWriting {args.vectors:,} vectors (384 dimensions) with one put_many, {repeat} runs\n')
            pg = write_times(server.url('restart'), args.vectors, 384, repeat)
            lite = write_times(str(Path(tmp) / 'write.sqlite3'), args.vectors, 384, repeat)
            pg_median, lite_median = statistics.median(pg), statistics.median(lite)
            met = 'met' if pg_median <= WRITE_TARGET_S else 'NOT met'
            print(
                f'- PostgreSQL: median {pg_median:.2f} s, worst {max(pg):.2f} s (target {WRITE_TARGET_S:g} s: {met}); '
                f'SQLite: median {lite_median:.2f} s (PostgreSQL / SQLite {pg_median / lite_median:.2f}x)'
            )
    finally:
        server.stop()
