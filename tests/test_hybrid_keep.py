"""Issue 28, items 2-5, through real `Agent` runs with deterministic embedding models:

- a test model under `Embedder.override(model=...)` never writes under the configured model's cache key, and its
  query vectors are not used for the configured model's searches (cache poisoning);
- only the first search of a run (or its first after the run's tools gained texts without a vector) waits for
  missing vectors;
- vectors paid for are kept whichever loop asked: a run that ends mid-batch (`asyncio.run` per request), threads
  each calling `run_sync` on one agent; no text is embedded twice, a closing loop is not an embedder failure;
- `~` is expanded in every cache path.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from embedding_fixtures import BagOfWordsModel, DictStore
from pydantic_ai import Agent
from pydantic_ai.embeddings import Embedder
from pydantic_ai.embeddings.test import TestEmbeddingModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from support import SEARCH, Script, page_of, returns
from test_hybrid_search import SYNONYMS, UMBRELLA, names, pages, proxy

from pydantic_ai_toolproxy import SQLiteEmbeddingStore, ToolProxyCapability, ToolProxyConfig
from pydantic_ai_toolproxy.hybrid.store_io import open_store

LOGGER = 'pydantic_ai_toolproxy'
TOOLS = 7
"""Tools of `test_hybrid_search.catalogue()`: each has its own embedding text."""


def searches(capability: ToolProxyCapability[Any], *queries: str) -> list[dict[str, Any]]:
    """The pages of one real run (`asyncio.run`: its own loop) that searches each of `queries`, one per step."""
    script = Script([[(SEARCH, {'query': q})] for q in queries])
    result = asyncio.run(Agent(script.model, capabilities=[capability]).run('go'))
    return [page_of(p) for p in returns(result.all_messages()) if p.tool_name == SEARCH]


def wait_until(condition: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.01)


def search_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A stateless scripted model (safe to share between threads): one search, then 'done'."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': UMBRELLA})])
    return ModelResponse(parts=[TextPart('done')])


def collect() -> None:
    """Collect garbage now, so a task destroyed while pending is logged inside the test (asyncio logs it when the
    task is collected); the event loops `run_sync` leaves unclosed in finished threads are not this test's concern."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ResourceWarning)
        gc.collect()


# --- item 2: a test model must not poison the cache -------------------------------------------------------------


async def test_an_override_never_writes_under_the_configured_models_key() -> None:
    production = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS, name='prod')
    embedder = Embedder(production)
    store = DictStore()
    with embedder.override(model=TestEmbeddingModel(dimensions=64)):  # as Pydantic AI documents for tests
        [under_test] = await pages(proxy(embedder, embedding_cache=store), {'query': UMBRELLA})
    keys = {model for model, _ in store.data}
    assert keys == {'test:test:native'}, keys  # the override's vectors, under its own key only
    assert production.calls == []
    # A later production process (same store) embeds its tools itself and ranks by meaning.
    [later] = await pages(proxy(embedder, embedding_cache=store), {'query': UMBRELLA})
    assert names(later)[0] == 'weather.get_forecast'
    assert len(production.documents()) == TOOLS
    assert {model for model, _ in store.data} == {'test:test:native', 'bag:prod:native'}
    assert 'weather.get_forecast' not in names(under_test)[:1]  # every test vector is the same: no meaning there


async def test_one_capability_switches_with_the_override_and_keys_queries_by_model() -> None:
    """The same capability searched under an override, then without, then under it again: each search ranks with
    its own model's tool and query vectors; nothing is embedded twice by one model."""
    production = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS, name='prod')
    other = BagOfWordsModel(dimensions=32, name='other')  # no synonyms: umbrella is not near the forecast
    embedder = Embedder(production)
    capability = proxy(embedder)
    with embedder.override(model=other):
        [first] = await pages(capability, {'query': UMBRELLA})
    [second] = await pages(capability, {'query': UMBRELLA})
    with embedder.override(model=other):
        [third] = await pages(capability, {'query': UMBRELLA})
    assert 'weather.get_forecast' not in names(first)[:1]
    assert names(second)[0] == 'weather.get_forecast'  # the production query vector, not the override's
    assert names(third) == names(first)
    assert [kind for kind, _ in production.calls].count('query') == 1
    assert len(production.documents()) == TOOLS and len(other.documents()) == TOOLS  # kept across the switches
    assert [kind for kind, _ in other.calls].count('query') == 1  # its query vector was kept too


# --- item 3: only the first search of a run waits -----------------------------------------------------------------


def test_only_the_first_search_of_a_run_waits() -> None:
    model = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS, delay=1.5)  # one batch takes 1.5 s
    capability = proxy(model, embedding_wait=0.4)
    started = time.monotonic()
    first_run = searches(capability, UMBRELLA, 'email', 'file', 'air quality')
    elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 0.9, elapsed  # the first search waited 0.4 s, the three others not at all
    assert all(page['tools'] for page in first_run[1:])  # keyword pages meanwhile
    started = time.monotonic()
    searches(capability, 'email')  # another run: its first search waits again
    assert time.monotonic() - started >= 0.4
    wait_until(lambda: len(model.documents()) == TOOLS)


# --- item 4: vectors paid for are never thrown away ---------------------------------------------------------------


def test_a_run_ending_mid_batch_keeps_the_embedders_answer(caplog: pytest.LogCaptureFixture) -> None:
    """`asyncio.run(agent.run(...))` per request: the first request ends while its batch is in flight; the answer is
    kept (memory and store) and the next request ranks by meaning without sending a text again."""
    model = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS, delay=0.3)
    store = DictStore()
    capability = proxy(model, embedding_wait=0, embedding_cache=store)
    with caplog.at_level(logging.WARNING):
        [first] = asyncio.run(pages(capability, {'query': UMBRELLA}))
        assert 'weather.get_forecast' not in names(first)  # ended before the batch answered
        wait_until(lambda: len(store.data) == TOOLS)  # the answer arrived after the run's loop closed: stored
        [second] = asyncio.run(pages(capability, {'query': UMBRELLA}))
        collect()
    assert names(second)[0] == 'weather.get_forecast'
    assert sorted(model.documents()) == sorted(set(model.documents())) and len(model.documents()) == TOOLS
    # one line says why the first search ranked by keywords (issue 27: a silent fallback hid a cache miss)
    [fallback] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert fallback.startswith('hybrid search ranked by keywords only (no-vectors: ')
    assert f'{TOOLS} of {TOOLS} tools lack a vector' in fallback


def test_threads_running_one_agent_embed_each_text_once(caplog: pytest.LogCaptureFixture) -> None:
    """Three threads each calling `run_sync` on one agent (each thread's loop goes away with its run): one
    embedding for all, no 'Task was destroyed', no embedder warning, each text sent once."""
    model = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS, delay=0.3)
    store = DictStore()
    capability = proxy(model, embedding_wait=0.05, embedding_cache=store)
    agent = Agent(FunctionModel(search_once), capabilities=[capability])
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(3):  # each run ends before the batch answers
                agent.run_sync('go')
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:  # the thread's loop goes away with the thread (closed here, so no unclosed-socket noise later)
            asyncio.get_event_loop_policy().get_event_loop().close()

    with caplog.at_level(logging.WARNING):
        threads = [threading.Thread(target=run) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wait_until(lambda: len(store.data) == TOOLS)
        collect()
        [after] = searches(capability, UMBRELLA)
    assert errors == []
    assert len(model.documents()) == TOOLS == len(set(model.documents()))
    assert names(after)[0] == 'weather.get_forecast'
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any('destroyed' in m or 'could not embed' in m for m in messages), messages


# --- item 5: `~` is expanded everywhere a path is taken ---------------------------------------------------------


def test_a_tilde_cache_path_is_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work = tmp_path / 'home', tmp_path / 'work'
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.chdir(work)
    model = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS)
    capability = proxy(model, embedding_cache='~/vectors.sqlite3', embedding_wait=5.0)
    [page] = searches(capability, UMBRELLA)
    assert names(page)[0] == 'weather.get_forecast'
    assert (home / 'vectors.sqlite3').is_file()
    assert not (work / '~').exists()
    assert SQLiteEmbeddingStore('~/other.sqlite3').path == home / 'other.sqlite3'
    store = open_store(capability.config)
    assert isinstance(store, SQLiteEmbeddingStore) and store.path == home / 'vectors.sqlite3'
    with SQLiteEmbeddingStore(Path('~') / 'vectors.sqlite3') as again:  # path-like too; the vectors are there
        assert len(again.get_many('bag:bag:native', [bytes(16)])) == 0
        assert again.path == home / 'vectors.sqlite3'


async def test_a_cache_filled_for_other_texts_is_said_once_when_search_falls_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 27: `toolproxy embed` and the agent computed different tool texts (other group descriptions), so the
    cache holds none of the agent's vectors: the first search waits, ranks by keywords, and one host line says so
    with the count of tools without a vector; a later search that ranks by meaning clears it."""
    from test_hybrid_search import DESCRIPTIONS, catalogue

    from pydantic_ai_toolproxy import ToolProxyGroup

    store = DictStore()
    filled = proxy(BagOfWordsModel(dimensions=64, synonyms=SYNONYMS), embedding_cache=store)
    await pages(filled, {'query': UMBRELLA})  # what `toolproxy embed` stored, under the first descriptions
    assert len(store.data) == TOOLS
    sources = catalogue()
    slow = BagOfWordsModel(dimensions=64, synonyms=SYNONYMS, delay=0.5)
    other = ToolProxyCapability(
        groups={g: ToolProxyGroup(source=sources[g], description=DESCRIPTIONS[g] + ' (renamed)') for g in sources},
        config=ToolProxyConfig(embedder=slow, embedding_cache=store, embedding_wait=0.05),
    )
    with caplog.at_level(logging.WARNING, LOGGER):
        [first] = await pages(other, {'query': UMBRELLA})
    logged = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(logged) == 1, logged
    assert 'ranked by keywords only (no-vectors' in logged[0] and f'{TOOLS} of {TOOLS} tools lack a vector' in logged[0]
    assert 'other group descriptions' in logged[0]
    assert 'weather.get_forecast' not in names(first)  # ranked by keywords: nothing matches the umbrella
