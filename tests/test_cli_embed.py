"""The hybrid-search parts of the `toolproxy` command line, run as a subprocess (as tests/test_cli.py does):
`--embedder` (a model name or a module:attribute), the config file's embedder keys, `toolproxy embed` (fills the
embedding cache, prints counts, time and usage), `toolproxy inspect` (how many tools have a vector) and
`toolproxy search` with an embedder. The embedder is `tests/cli_embedders.py`'s deterministic bag-of-words model,
so every vector the CLI stores can be recomputed here and compared byte for byte.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_embedders import DIMENSIONS, SYNONYMS, TOOLS, tool_groups
from embedding_fixtures import BagOfWordsModel, bag_vector
from pydantic_ai import Agent
from support import SEARCH, Script, json_of, last_return
from support import toolproxy as run_toolproxy

from pydantic_ai_toolproxy import SQLiteEmbeddingStore, ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy.hybrid.embedder import vector_bytes
from pydantic_ai_toolproxy.hybrid.embedding_text import embedding_text, text_hash

ROOT = Path(__file__).resolve().parent.parent
EMBEDDERS = 'tests/cli_embedders.py'
SOURCES = ['-s', f'{EMBEDDERS}:tool_groups']
BAG = ['--embedder', f'{EMBEDDERS}:bag']
KEY = 'bag:cli-bag:native'


def texts() -> dict[bytes, str]:
    """Every tool text of `tool_groups()` by hash, computed here from the documented recipe."""
    out = {}
    for group, (description, functions) in TOOLS.items():
        for function in functions:
            text = embedding_text(group, function.__name__, (function.__doc__ or '').strip(), description)
            out[text_hash(text)] = text
    return out


def words(text: str) -> int:
    return len(text.replace(':', ' ').replace('.', ' ').split())


def toolproxy(
    *args: str, cache: Path | None = None, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """`support.toolproxy`, with the default cache file `cache` (never ~/.cache; 'off' without one)."""
    cache_env = {'TOOLPROXY_EMBEDDING_CACHE': str(cache) if cache is not None else 'off'}
    return run_toolproxy(*args, env={**cache_env, **(env or {})}, cwd=cwd)


def embed_config(folder: Path, embedder: str, discovery: str) -> Path:
    """Write `folder/toolproxy.toml`: the tools of `tool_groups()`, proxied, with `[discovery]`'s `embedder` the
    attribute `embedder` of tests/cli_embedders.py (named relative to the file, as the config file's paths are)
    followed by the TOML lines `discovery`; returns the file's path."""
    config = folder / 'toolproxy.toml'
    source = os.path.relpath(ROOT / EMBEDDERS, folder)
    config.write_text(
        f'[sources.tools]\nmodule = "{source}:tool_groups"\n'
        '[[tool_sources]]\nsource_id = "tools"\npresentation = "proxy"\n'
        f'[discovery]\nembedder = "{source}:{embedder}"\n{discovery}'
    )
    return config


def stored(path: Path) -> dict[bytes, bytes]:
    with SQLiteEmbeddingStore(path) as store:
        found = store.get_many(KEY, list(texts()))
        assert not store.fell_back
    return found


def expected_vectors() -> dict[bytes, bytes]:
    return {h: vector_bytes(bag_vector(t, DIMENSIONS, SYNONYMS)) for h, t in texts().items()}


# --- embed -----------------------------------------------------------------------------------------


def test_embed_fills_the_cache_with_the_vectors_a_run_uses_then_finds_them_all(tmp_path: Path) -> None:
    cache = tmp_path / 'cache' / 'vectors.sqlite3'
    first = toolproxy(*BAG, *SOURCES, 'embed', '--json', cache=cache)
    assert first.returncode == 0, first.stderr
    doc = json_of(first)
    n = len(texts())
    assert n == 7
    assert doc['embedder'] == 'bag:cli-bag' and doc['store_key'] == KEY and doc['dimensions'] == DIMENSIONS
    assert doc['cache'] == {'kind': 'file', 'path': str(cache), 'vectors': n, 'fell_back': False, 'fault': None}
    assert (doc['tools'], doc['embedded'], doc['cached'], doc['cut'], doc['failed']) == (n, n, 0, 0, 0)
    assert doc['usage'] == {'input_tokens': sum(words(t) for t in texts().values())}
    assert doc['error'] is None and 0 < doc['seconds'] < 60
    assert stored(cache) == expected_vectors()  # the texts' vectors, under the key a run looks them up by

    again = toolproxy(*BAG, *SOURCES, 'embed', '--json', cache=cache)
    doc = json_of(again)
    assert (doc['embedded'], doc['cached'], doc['usage']) == (0, n, {})  # nothing paid twice

    plain = toolproxy(*BAG, *SOURCES, 'embed', cache=cache)
    assert plain.returncode == 0 and plain.stderr == '' and '\x1b' not in plain.stdout
    lines = plain.stdout.splitlines()
    assert lines[0] == 'embedder  bag:cli-bag, 256 dimensions'
    assert lines[1] == f'cache     {cache} (7 vectors of this embedder)'
    assert lines[2] == 'tools     7 tool texts: 0 embedded, 7 from the cache, 0 cut to the input limit, 0 failed'
    assert lines[3].startswith('time      ') and lines[3].endswith(' s')
    assert lines[4] == 'usage     none reported'


def test_embed_takes_the_config_after_the_command_and_only_new_texts_are_embedded(tmp_path: Path) -> None:
    cache = tmp_path / 'c.sqlite3'
    config = embed_config(tmp_path, 'bag', 'embedding_cache = "c.sqlite3"\nsemantic_weight = 0.25\n')
    one = dict(list(expected_vectors().items())[:3])
    with SQLiteEmbeddingStore(cache) as store:
        store.put_many(KEY, one)
    doc = json_of(toolproxy('embed', '--config', str(config), '--json'))
    assert (doc['embedded'], doc['cached']) == (4, 3)
    assert doc['cache']['path'] == str(cache) and stored(cache) == expected_vectors()
    inspect = json_of(toolproxy('--config', str(config), 'inspect', '--json'))
    assert inspect['hybrid']['semantic_weight'] == 0.25
    overridden = json_of(toolproxy('--config', str(config), '--semantic-weight', '0.5', 'inspect', '--json'))
    assert overridden['hybrid']['semantic_weight'] == 0.5  # the command line wins over the file

    memory = tmp_path / 'memory.toml'
    memory.write_text(config.read_text().replace('embedding_cache = "c.sqlite3"', 'embedding_cache = false'))
    doc = json_of(toolproxy('--config', str(memory), 'embed', '--json'))
    assert doc['cache'] == {'kind': 'memory'} and doc['embedded'] == 7  # false: no file at all


def test_embed_counts_texts_cut_to_the_input_limit(tmp_path: Path) -> None:
    doc = json_of(toolproxy('--embedder', f'{EMBEDDERS}:short', *SOURCES, 'embed', '--json', cache=tmp_path / 'c'))
    # `short` answers max_input_tokens 6 and counts words: a text of 6 words or more is cut (6 may already be).
    assert doc['cut'] == sum(words(t) >= 6 for t in texts().values()) > 0
    assert doc['embedded'] == 7 and doc['failed'] == 0
    assert doc['usage']['input_tokens'] <= 7 * 6  # the cut texts are what was sent


def test_embed_with_a_failing_embedder_exits_1_and_names_the_error(tmp_path: Path) -> None:
    cache = tmp_path / 'c.sqlite3'
    proc = toolproxy('--embedder', f'{EMBEDDERS}:failing', *SOURCES, 'embed', cache=cache)
    assert proc.returncode == 1
    assert 'tools     7 tool texts: 0 embedded, 0 from the cache, 0 cut to the input limit, 7 failed' in proc.stdout
    assert proc.stderr.endswith(
        "toolproxy: error: the embedder failed, 7 tools left without a vector: RuntimeError('embedding quota exceeded')\n"
    )
    doc = json_of(toolproxy('--embedder', f'{EMBEDDERS}:failing', *SOURCES, 'embed', '--json', cache=cache))
    assert doc['failed'] == 7 and doc['error'] == "RuntimeError('embedding quota exceeded')"


def test_embed_into_a_cache_that_cannot_be_used_warns_once_and_exits_1(tmp_path: Path) -> None:
    cache = tmp_path / 'c.sqlite3'
    cache.write_bytes(b'not a database, a text file that happens to sit there\n' * 200)
    proc = toolproxy(*BAG, *SOURCES, 'embed', cache=cache)
    assert proc.returncode == 1
    warnings = [line for line in proc.stderr.splitlines() if line.startswith('toolproxy: warning: ')]
    assert warnings == [
        f'toolproxy: warning: embedding cache {cache} cannot be used (file is not a database): tool vectors are '
        'kept in memory for this process'
    ]
    assert proc.stderr.splitlines()[-1] == (
        f'toolproxy: error: the embedding cache {cache} cannot be used (file is not a database): no vector was saved'
    )
    assert 'tools     7 tool texts: 7 embedded' in proc.stdout  # the run itself went on
    assert cache.read_bytes().startswith(b'not a database')  # and left the file alone


def test_embed_without_an_embedder_exits_2(tmp_path: Path) -> None:
    proc = toolproxy(*SOURCES, 'embed')
    assert proc.returncode == 2 and proc.stdout == ''
    assert proc.stderr.startswith('toolproxy: error: toolproxy embed needs an embedder: --embedder MODEL')


@pytest.mark.parametrize(
    'embedder,needle',
    [
        (f'{EMBEDDERS}:not_an_embedder', 'is a str; expected a pydantic_ai EmbeddingModel or Embedder'),
        (f'{EMBEDDERS}:missing', "has no attribute 'missing'"),
        ('tests/no_such_file.py:bag', 'no such file'),
        ('nope:some-model', "--embedder: cannot use the embedding model 'nope:some-model'"),
        ('just-a-word', "names no provider; write 'provider:model'"),
        ('', 'the embedder is empty'),
    ],
)
def test_bad_embedders_exit_2_naming_the_problem(embedder: str, needle: str) -> None:
    proc = toolproxy('--embedder', embedder, *SOURCES, 'inspect')
    assert proc.returncode == 2 and proc.stdout == ''
    assert proc.stderr.startswith('toolproxy: error: ') and needle in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr


def test_a_one_word_module_that_reads_as_a_provider_gets_the_file_form(tmp_path: Path) -> None:
    """`--embedder myembed:ok` with ./myembed.py beside it reads as provider 'myembed': the error says how to
    name the file instead (`./myembed.py:ok`), which then loads."""
    (tmp_path / 'myembed.py').write_text(
        f'import sys\nsys.path.insert(0, {str(ROOT / "tests")!r})\nfrom cli_embedders import bag as ok\n'
    )
    sources = ['-s', f'{ROOT / EMBEDDERS}:tool_groups']
    proc = toolproxy('--embedder', 'myembed:ok', *sources, 'inspect', cwd=tmp_path)
    assert proc.returncode == 2 and 'to load myembed.py, write ./myembed.py:ok' in proc.stderr, proc.stderr
    fixed = toolproxy('--embedder', './myembed.py:ok', *sources, 'inspect', cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr


def test_a_factory_and_a_dotted_module_load_like_sources(tmp_path: Path) -> None:
    factory = json_of(
        toolproxy('--embedder', f'{EMBEDDERS}:make_bag', *SOURCES, 'embed', '--json', cache=tmp_path / 'a')
    )
    assert factory['embedder'] == 'bag:cli-bag' and factory['embedded'] == 7
    package = tmp_path / 'pkg'
    package.mkdir()
    (package / '__init__.py').write_text('')
    (package / 'models.py').write_text(
        f'import sys\nsys.path.insert(0, {str(ROOT / "tests")!r})\nfrom cli_embedders import bag\n'
    )
    dotted = toolproxy(
        '--embedder',
        'pkg.models:bag',
        *SOURCES,
        'embed',
        '--json',
        cache=tmp_path / 'b',
        env={'PYTHONPATH': f'{tmp_path}{os.pathsep}{os.environ.get("PYTHONPATH", "")}'},
    )
    assert json_of(dotted)['embedder'] == 'bag:cli-bag'


# --- inspect ---------------------------------------------------------------------------------------


def test_inspect_counts_the_tools_with_a_vector_without_calling_the_embedder(tmp_path: Path) -> None:
    cache = tmp_path / 'c.sqlite3'
    # `failing` has the same identity as `bag` but raises on every call: inspect must not call it.
    failing = ['--embedder', f'{EMBEDDERS}:failing']
    before = toolproxy(*failing, *SOURCES, 'inspect', '--json', cache=cache)
    assert before.returncode == 0 and before.stderr == ''
    hybrid = json_of(before)['hybrid']
    assert hybrid == {
        'embedder': 'bag:cli-bag',
        'store_key': KEY,
        'semantic_weight': ToolProxyConfig().semantic_weight,
        'cache': {'kind': 'file', 'path': str(cache), 'vectors': 0, 'fell_back': False, 'fault': None},
        'tools': 7,
        'with_vectors': 0,
    }
    with SQLiteEmbeddingStore(cache) as store:
        store.put_many(KEY, dict(list(expected_vectors().items())[:5]))
    after = toolproxy(*failing, *SOURCES, 'inspect', cache=cache)
    assert after.returncode == 0 and after.stderr == ''
    lines = after.stdout.splitlines()
    assert lines[2] == (
        f'hybrid search with bag:cli-bag, semantic_weight {ToolProxyConfig().semantic_weight:g}: 5 of 7 tools have a vector '
        '(`toolproxy embed` embeds the other 2)'
    )
    assert lines[3] == f'embedding cache {cache} (5 vectors of this embedder)'
    assert json_of(toolproxy(*SOURCES, 'inspect', '--json'))['hybrid'] is None  # no embedder: keyword search
    plain = toolproxy(*SOURCES, 'inspect').stdout.splitlines()
    assert not any(line.startswith(('hybrid', 'embedding cache')) for line in plain)


def test_damaged_cache_rows_count_as_missing_and_embed_replaces_them(tmp_path: Path) -> None:
    """Rows whose vector is not float32 bytes (written by a broken tool, or cut short on disk) are no vectors:
    inspect does not count them, and `embed` embeds those texts again (one warning) and stores good vectors."""
    cache = tmp_path / 'c.sqlite3'
    assert toolproxy(*BAG, *SOURCES, 'embed', cache=cache).returncode == 0
    damaged = list(texts())[:3]
    with sqlite3.connect(cache) as db:
        db.executemany('UPDATE vectors SET vector = ? WHERE hash = ?', [(b'\x00\x00\x80', h) for h in damaged])
    db.close()
    inspect = toolproxy('--embedder', f'{EMBEDDERS}:failing', *SOURCES, 'inspect', '--json', cache=cache)
    assert json_of(inspect)['hybrid']['with_vectors'] == 4
    embed = toolproxy(*BAG, *SOURCES, 'embed', '--json', cache=cache)
    doc = json_of(embed)
    assert (doc['embedded'], doc['cached'], doc['failed']) == (3, 4, 0)
    assert embed.stderr.count('unusable vector') == 1
    assert stored(cache) == expected_vectors()


def test_inspect_with_the_cache_off_and_the_default_path(tmp_path: Path) -> None:
    off = json_of(toolproxy(*BAG, '--embedding-cache', 'off', *SOURCES, 'inspect', '--json'))
    assert off['hybrid']['cache'] == {'kind': 'memory'}
    default = tmp_path / 'xdg'
    doc = json_of(
        toolproxy(
            *BAG, *SOURCES, 'inspect', '--json', env={'TOOLPROXY_EMBEDDING_CACHE': '', 'XDG_CACHE_HOME': str(default)}
        )
    )
    assert doc['hybrid']['cache']['path'] == str(default / 'pydantic-ai-toolproxy' / 'embeddings.sqlite3')
    anywhere = ['--embedder', f'{ROOT / EMBEDDERS}:bag', '-s', f'{ROOT / EMBEDDERS}:tool_groups']
    relative = json_of(toolproxy(*anywhere, '--embedding-cache', 'sub/v.sqlite3', 'inspect', '--json', cwd=tmp_path))
    assert relative['hybrid']['cache']['path'] == str(tmp_path / 'sub' / 'v.sqlite3')  # the working directory's


# --- search ----------------------------------------------------------------------------------------

UMBRELLA = 'should I bring an umbrella'


async def agent_search(cache: Path, args: dict[str, Any]) -> tuple[str, BagOfWordsModel]:
    """The page a real agent run gets for `args`, with the bag model and `cache`; and the model (its calls)."""
    model = BagOfWordsModel(dimensions=DIMENSIONS, synonyms=SYNONYMS, name='cli-bag')
    proxy = ToolProxyCapability(
        groups={name: ToolProxyGroup(source=ts, description=d) for name, (ts, d) in tool_groups().items()},
        config=ToolProxyConfig(embedder=model, embedding_cache=str(cache), embedding_wait=60),
    )
    script = Script([[(SEARCH, args)], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    return last_return(result.all_messages(), SEARCH).model_response_str(), model


async def test_search_with_an_embedder_is_the_page_a_run_gets_and_fills_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / 'c.sqlite3'
    keyword = json_of(toolproxy(*SOURCES, 'search', UMBRELLA, '--json'))
    assert 'get_forecast' not in [t['tool'] for t in keyword['tools']]  # no word of the query is in its text
    proc = toolproxy(*BAG, *SOURCES, 'search', UMBRELLA, '--limit', '3', '--json', cache=cache)
    assert proc.returncode == 0 and proc.stderr == '', proc.stderr
    page = json.loads(proc.stdout)
    assert page['tools'][0]['tool'] == 'get_forecast' and page['total'] >= 1
    assert stored(cache) == expected_vectors()  # search embedded every tool first, into the cache

    expected, model = await agent_search(cache, {'query': UMBRELLA, 'limit': 3})
    assert proc.stdout.rstrip('\n') == expected  # what the model gets in a run whose vectors are ready
    assert model.documents() == []  # and that run found every tool vector in the cache the CLI filled

    grouped = json_of(toolproxy(*BAG, *SOURCES, 'search', UMBRELLA, '--group', 'travel', '--json', cache=cache))
    assert {t['group'] for t in grouped['tools']} <= {'travel'}  # group= restricts both signals


def test_search_explain_shows_the_hybrid_shares(tmp_path: Path) -> None:
    proc = toolproxy(*BAG, *SOURCES, 'search', UMBRELLA, '--limit', '2', '--explain', cache=tmp_path / 'c')
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith('1. weather/get_forecast: '))
    hybrid = lines[first + 1]
    w = ToolProxyConfig().semantic_weight  # the default weight; the keywords match nothing, the cosine is the best
    assert hybrid.startswith(f'   hybrid: fused {w:.3f} = keyword share 0.000 + semantic share {w:.3f} (weight {w:g}; ')
    assert hybrid.endswith(')') and 'semantic 1.00, cosine 0.' in hybrid
    doc = json_of(
        toolproxy(*BAG, *SOURCES, 'search', UMBRELLA, '--limit', '2', '--explain', '--json', cache=tmp_path / 'c')
    )
    why = doc['explain'][0]
    assert (why['tool'], why['keyword_share'], why['semantic']) == ('get_forecast', 0.0, 1.0)
    assert why['weight'] == pytest.approx(w)  # the core's float32
    assert why['semantic_share'] == why['fused'] == pytest.approx(w) and 0 < why['cosine'] <= 1


def test_search_with_a_failing_embedder_warns_and_searches_by_keywords(tmp_path: Path) -> None:
    proc = toolproxy('--embedder', f'{EMBEDDERS}:failing', *SOURCES, 'search', 'note', '--json', cache=tmp_path / 'c')
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == json_of(toolproxy(*SOURCES, 'search', 'note', '--json'))  # keyword page
    warnings = [line for line in proc.stderr.splitlines() if line.startswith('toolproxy: warning: ')]
    assert warnings[0] == (
        'toolproxy: warning: the embedder failed, 7 of 7 tools rank by keywords alone: '
        "RuntimeError('embedding quota exceeded')"
    )
    assert any('query embedding with bag:cli-bag failed' in w for w in warnings[1:])


# --- on a terminal ---------------------------------------------------------------------------------


def test_embed_on_a_terminal_shows_a_bar_then_exactly_the_piped_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_cli_terminal import assert_clean, on_terminal, piped
    from test_cli_terminal import words as cells

    args = ['--embedder', f'{EMBEDDERS}:slow_bag', *SOURCES, 'embed']
    monkeypatch.setenv('TOOLPROXY_EMBEDDING_CACHE', str(tmp_path / 'terminal.sqlite3'))
    screen = on_terminal(*args)
    monkeypatch.setenv('TOOLPROXY_EMBEDDING_CACHE', str(tmp_path / 'piped.sqlite3'))
    plain = piped(*args)
    assert screen.status == 0 and plain.returncode == 0, plain.stderr
    raw = screen.raw.decode()
    assert 'embedding tool texts with bag:cli-bag' in raw  # the counted step was shown while it ran,
    assert '7/7' in raw and '━' in raw  # with its bar and count,
    assert_clean(screen)  # then erased
    assert plain.stderr == ''  # and never drawn when stderr is piped
    not_time = [w for w in cells(screen.lines) if w[0] != 'time']
    assert not_time == [
        w if w[0] != 'cache' else ['cache', str(tmp_path / 'terminal.sqlite3'), *w[2:]]
        for w in cells(plain.stdout.splitlines())
        if w[0] != 'time'
    ]
    assert screen.lines[2] == 'tools     7 tool texts: 7 embedded, 0 from the cache, 0 cut to the input limit, 0 failed'


def test_a_cache_warning_on_a_terminal_stays_above_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_cli_terminal import assert_clean, on_terminal

    cache = tmp_path / 'c.sqlite3'
    cache.write_bytes(b'garbage ' * 1000)
    monkeypatch.setenv('TOOLPROXY_EMBEDDING_CACHE', str(cache))
    screen = on_terminal(*BAG, *SOURCES, 'embed')
    assert screen.status == 1
    assert_clean(screen)
    text = ' '.join(' '.join(screen.lines).split())
    warning = f'toolproxy: warning: embedding cache {cache} cannot be used (file is not a database)'
    assert text.count(warning) == 1 and text.index(warning) < text.index('embedder bag:cli-bag')
    assert text.endswith(
        f'toolproxy: error: the embedding cache {cache} cannot be used (file is not a database): no vector was saved'
    )


def test_embed_and_inspect_with_a_postgres_url(postgres_db: str) -> None:
    """`--embedding-cache postgresql://...`: embed fills the database, a second embed pays nothing, inspect shows
    the database (no password) and how many vectors it holds; a database that is down: exit 1, one warning."""
    first = run_toolproxy(*BAG, *SOURCES, '--embedding-cache', postgres_db, 'embed', '--json')
    assert first.returncode == 0, first.stderr
    doc = json_of(first)
    assert doc['cache']['kind'] == 'postgres' and doc['cache']['vectors'] == 7 and doc['embedded'] == 7
    again = json_of(run_toolproxy(*BAG, *SOURCES, '--embedding-cache', postgres_db, 'embed', '--json'))
    assert (again['embedded'], again['cached']) == (0, 7)
    shown = run_toolproxy(*BAG, *SOURCES, '--embedding-cache', postgres_db, 'inspect')
    assert shown.returncode == 0, shown.stderr
    assert '(7 vectors of this embedder)' in shown.stdout and 'postgresql://postgres@' in shown.stdout
    down = 'postgresql://fleet:topsecret@127.0.0.1:1/agents'
    failed = run_toolproxy(*BAG, *SOURCES, '--embedding-cache', down, 'embed')
    assert failed.returncode in (0, 1), failed.stderr
    assert failed.stderr.count('cannot be used') == 1 and 'topsecret' not in failed.stderr + failed.stdout
