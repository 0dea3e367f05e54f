"""A fleet of worker processes sharing one store pays the embedder once per text (issue: fleet store).

Real processes (`bench.lib.fleet_worker`), each a real `Agent` run with hybrid search over the same 640 tools, over a
SQLite file and over a PostgreSQL database (the server the `postgres` fixture starts): started together they embed
640 texts in all, not 4 x 640; a worker started after them embeds none and its page equals theirs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def start(store: str, go: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, '-m', 'bench.lib.fleet_worker', store, str(go), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def report(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


@pytest.mark.parametrize('kind', ['sqlite', 'postgres'])
def test_four_workers_started_together_embed_each_text_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = str(tmp_path / 'v.sqlite3') if kind == 'sqlite' else request.getfixturevalue('postgres_db')
    go = tmp_path / 'go'
    workers = [start(store, go) for _ in range(4)]
    time.sleep(1.0)  # every worker imported and waiting
    go.touch()
    reports = [report(w) for w in workers]
    assert [r['pending'] for r in reports] == [0, 0, 0, 0]
    assert sum(r['embedded'] for r in reports) == 640, [r['embedded'] for r in reports]
    assert sum(r['documents'] for r in reports) == 640
    assert all(r['warnings'] == [] for r in reports), [r['warnings'] for r in reports]
    pages = [r['page'] for r in reports]
    assert all(p == pages[0] for p in pages) and pages[0]['tools']
    later = report(start(store, go))
    assert later['embedded'] == 0 and later['documents'] == 0
    assert later['page'] == pages[0]


def test_without_claims_each_worker_would_pay(tmp_path: Path) -> None:
    """The reference: workers with memory-only caches each embed all 640 texts."""
    go = tmp_path / 'go'
    workers = [start('memory', go) for _ in range(2)]
    time.sleep(1.0)
    go.touch()
    assert [report(w)['embedded'] for w in workers] == [640, 640]


async def test_a_run_over_an_unreachable_database_ranks_by_meaning_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from embedding_fixtures import BagOfWordsModel
    from test_hybrid_search import SYNONYMS, UMBRELLA, names, pages, proxy

    url = 'postgresql://fleet:topsecret@127.0.0.1:1/agents'
    with caplog.at_level(logging.WARNING, logger='pydantic_ai_toolproxy'):
        got = await pages(
            proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS), embedding_cache=url), {'query': UMBRELLA}
        )
    assert names(got[0])[0] == 'weather.get_forecast'  # by meaning, vectors in memory
    warnings = [r.getMessage() for r in caplog.records if r.name == 'pydantic_ai_toolproxy']
    assert len(warnings) == 1 and 'postgresql://fleet@127.0.0.1:1/agents' in warnings[0], warnings
    assert 'topsecret' not in warnings[0]


async def test_a_database_that_goes_away_between_runs_fails_no_run(postgres: Any, postgres_db: str) -> None:
    from embedding_fixtures import BagOfWordsModel
    from test_hybrid_search import SYNONYMS, UMBRELLA, names, pages, proxy

    from pydantic_ai_toolproxy.stores.postgres import PostgresEmbeddingStore

    store = PostgresEmbeddingStore(postgres_db, retry_after=0.2, connect_timeout=2)
    capability = proxy(BagOfWordsModel(dimensions=256, synonyms=SYNONYMS), embedding_cache=store)
    first = await pages(capability, {'query': UMBRELLA})
    postgres.stop_server()
    try:
        second = await pages(capability, {'query': UMBRELLA}, {'query': 'send a letter'})
    finally:
        postgres.start_server()
    assert names(first[0]) == names(second[0]) and names(second[1])[0] == 'mail.send_email'
    store.close()
