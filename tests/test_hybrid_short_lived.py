"""Short-lived processes (scripts, the CLI, serverless handlers) over one SQLite embedding cache, with default settings:
each ends normally right after one search, and between them every tool text gets its vector, no claim is left
behind, and a search waits only when waiting can pay off (`hybrid.fill.worth_waiting`)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from short_lived_worker import NAME, TOOLS, tool_texts

import pydantic_ai_toolproxy
from pydantic_ai_toolproxy.hybrid.batches import BATCH_INPUTS
from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text, text_hash
from pydantic_ai_toolproxy.hybrid.fill import (
    BATCH_SECONDS,
    EXIT_WAIT,
    FIRST_CLAIM,
    MIN_CLAIM,
    Fill,
    wait_budget,
    worth_waiting,
)

TESTS = Path(__file__).resolve().parent
KEY = f'bag:{NAME}:native'


def run_worker(cache: Path, per_text: float, *extra: str) -> tuple[dict[str, float], float]:
    """One process (tests/short_lived_worker.py, importing the package this test imports): its JSON line and its wall
    time."""
    package = Path(pydantic_ai_toolproxy.__file__).resolve().parent.parent
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(package), os.environ.get('PYTHONPATH', '')])}
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(TESTS / 'short_lived_worker.py'), str(cache), str(per_text), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), time.monotonic() - began


def stored_and_claimed(cache: Path) -> tuple[set[bytes], int]:
    """The hashes with a vector under the workers' model, and how many claims rows the file holds."""
    with sqlite3.connect(cache) as db:
        hashes = {
            h
            for (h,) in db.execute(
                'SELECT v.hash FROM vectors v JOIN models m ON m.id = v.model WHERE m.name = ?', (KEY,)
            )
        }
        claims = db.execute('SELECT COUNT(*) FROM claims').fetchone()[0]
    return hashes, claims


def expected_hashes() -> set[bytes]:
    return {
        text_hash(embedding_text('ledger', name, description, 'Ledger records')) for name, description in tool_texts()
    }


def test_four_short_lived_processes_leave_every_vector_stored_and_no_claim(tmp_path: Path) -> None:
    """120 new tools, 0.05 s per text (all 120 take 6 s, longer than the 5 s `embedding_wait`): the first process's
    search learns the pace from its first claimed batch (`FIRST_CLAIM` texts, 0.8 s) and stops waiting, since the
    rest cannot arrive within its wait; its exit stores the batch in flight (sized to `BATCH_SECONDS`) and releases
    the claims. The second process's search may wait the share of the wait that is still missing (`wait_budget`);
    the third and fourth wait at most their small share, and the fourth's exit leaves every vector stored. Without the exit hook, the claims of the first process's batch in flight would hold
    those texts for 2 x `embedding_timeout` + 10 s and the fourth process would end without them."""
    cache = tmp_path / 'cache.sqlite3'
    searches = []
    for _ in range(4):
        out, _ = run_worker(cache, 0.05)
        searches.append(out['search'])
    hashes, claims = stored_and_claimed(cache)
    assert len(expected_hashes()) == TOOLS
    assert hashes == expected_hashes()
    assert claims == 0
    assert searches[0] < 2.5, searches  # the pace, not the whole wait
    assert searches[2] < 1.0 and searches[3] < 1.0, searches


def test_a_process_ending_with_a_batch_that_never_answers_releases_its_claims(tmp_path: Path) -> None:
    """The embedder never answers: the process still ends (its exit waits `EXIT_WAIT` for the batch in flight, then
    gives it up) and releases its claims, so the next process embeds those texts at once, not after they expire
    (2 x `embedding_timeout` + 10 s)."""
    cache = tmp_path / 'cache.sqlite3'
    out, took = run_worker(cache, 0.0, 'hang')
    assert out['search'] >= 4.5  # nothing arrived: the search waited for the first batch, all of embedding_wait
    assert took < out['search'] + EXIT_WAIT + 10
    hashes, claims = stored_and_claimed(cache)
    assert hashes == set() and claims == 0
    out, _ = run_worker(cache, 0.0)
    assert out['search'] < 4.5
    assert stored_and_claimed(cache) == (expected_hashes(), 0)


def test_a_search_waits_only_while_waiting_can_pay_off() -> None:
    assert worth_waiting(arrived=0, left_now=120, waited=3.0, wait_left=2.0)  # pace unknown yet: wait
    assert worth_waiting(arrived=64, left_now=56, waited=1.0, wait_left=4.0)  # 56 more at 64/s: 0.9 s
    assert not worth_waiting(arrived=64, left_now=56, waited=3.0, wait_left=2.0)  # 2.6 s more: past the wait
    assert not worth_waiting(arrived=64, left_now=9_936, waited=2.0, wait_left=3.0)  # a long backlog: no wait
    assert not worth_waiting(arrived=120, left_now=0, waited=1.0, wait_left=4.0)  # nothing left
    assert not worth_waiting(arrived=0, left_now=120, waited=1.0, wait_left=0.0)  # the budget is spent


def test_the_wait_is_the_share_of_the_wait_that_is_missing() -> None:
    """`wait_budget`: the whole `embedding_wait` when no tool has a vector, a tenth of it when a tenth misses one."""
    assert wait_budget(5.0, 1.0) == 5.0
    assert wait_budget(5.0, 0.1) == pytest.approx(0.5)
    assert wait_budget(5.0, 0.0) == 0.0
    assert wait_budget(5.0, 1.5) == 5.0 and wait_budget(5.0, -1.0) == 0.0


def test_a_process_that_finds_most_vectors_stored_waits_a_share_of_the_wait(tmp_path: Path) -> None:
    """A cache that already holds 108 of the 120 vectors (a tenth missing) and a slow embedder (0.2 s a text: the
    12 texts take 2.4 s): the search waits about a tenth of `embedding_wait` (0.5 s), not until the batch arrives,
    and the process's exit still stores that batch (within `EXIT_WAIT`) and leaves no claim."""
    cache = tmp_path / 'cache.sqlite3'
    run_worker(cache, 0.0)
    texts = sorted(expected_hashes())
    with sqlite3.connect(cache) as db:
        db.executemany('DELETE FROM vectors WHERE hash = ?', [(h,) for h in texts[:12]])
    assert len(stored_and_claimed(cache)[0]) == 108
    out, _ = run_worker(cache, 0.2)
    assert out['search'] < 1.5, out  # 0.5 s of budget, plus the query and the run's own steps
    hashes, claims = stored_and_claimed(cache)
    assert hashes == expected_hashes() and claims == 0


def test_claimed_batches_follow_the_embedders_pace() -> None:
    """`FIRST_CLAIM` texts first; then what the embedder does in `BATCH_SECONDS`, between `MIN_CLAIM` and
    `BATCH_INPUTS` (a provider: full batches; a slow CPU model: short ones, stored before a process ends)."""
    fill = Fill.__new__(Fill)  # only the pace is used here
    fill._pace = None
    assert fill._claim_limit() == FIRST_CLAIM
    fill._note_pace(1.6, 16)  # 0.1 s a text: 2 s is 20 texts
    assert fill._claim_limit() == int(BATCH_SECONDS / 0.1)
    fill._note_pace(0.3, 1)  # the mean of 0.1 and 0.3: 0.2 s a text
    assert fill._claim_limit() == int(BATCH_SECONDS / 0.2)
    fill._pace = 0.001
    assert fill._claim_limit() == BATCH_INPUTS
    fill._pace = 30.0
    assert fill._claim_limit() == MIN_CLAIM
