"""Smoke test of an installed pydantic-ai-toolproxy: what every wheel and the sdist must pass on its own platform.

    python scripts/smoke.py [--expect-version X.Y.Z] [--installed]

Run from the repository root (it runs `examples/quickstart.py`) by the release workflow on each wheel in a clean
environment (Linux x86_64 and aarch64, manylinux and musllinux, macOS arm64 and x86_64, Windows x64), by the CI
workflow on macOS and Windows, and by `tests/test_release.py` on the sdist and the Linux wheel. Checks, each one line
on stdout:

1. the package imports, its `_core` is a compiled extension, `__version__` is `--expect-version` when given;
   with `--installed` the package must not be this checkout's `python/` folder (an editable install would hide a
   wheel that lacks a file);
2. `examples/quickstart.py` prints what the README shows;
3. a keyword search over 1,000 tools finds the one tool that matches, through a real agent run;
4. a hybrid search over the same 1,000 tools (a deterministic embedder, memory only) ranks the same tool first
   and gives the same page as the portable SIMD path (`TOOLPROXY_PORTABLE_SIMD=1` in a child process), so the
   vector kernels this CPU dispatches to agree with the portable ones;
5. the SQLite embedding cache works in a folder whose name has a space, named by a string with forward slashes
   (`C:/Users/...` on Windows: a path, not a URL), and the default cache folder is this platform's;
6. `toolproxy --version` (the console script installed beside the interpreter) prints the version.

Exit status 0 when all pass; otherwise the first failure is printed and the status is 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOOLS = 1_000
QUICKSTART_OUTPUT = [
    "the model is offered: ['search_proxy_tools', 'call_proxy_tool']",
    "search found: [('crm', 'customer_name')] total 1",
    'call returned: Ada',
    'Customer 42 is Ada.',
]
TOPICS = ['invoice', 'shipment', 'ticket', 'calendar', 'document', 'payment', 'device', 'account', 'report', 'alert']
VERBS = ['list', 'get', 'create', 'update', 'delete', 'archive', 'restore', 'export', 'import', 'count']


class Failure(Exception):
    """A smoke check failed (the message says which and why)."""


def check(ok: bool, message: str) -> None:
    if not ok:
        raise Failure(message)


def check_import(expect_version: str | None, installed: bool) -> str:
    import pydantic_ai_toolproxy
    from pydantic_ai_toolproxy import _core

    package = Path(pydantic_ai_toolproxy.__file__).resolve().parent
    core = Path(_core.__file__ or '').name
    suffixes = ('.abi3.so', '.pyd', '.so')
    check(core.endswith(suffixes), f'_core is not a compiled extension: {core}')
    if installed:
        check(not package.is_relative_to(ROOT / 'python'), f'the package is imported from the checkout ({package})')
    version = pydantic_ai_toolproxy.__version__
    if expect_version is not None:
        check(version == expect_version, f'__version__ is {version}, expected {expect_version}')
    return f'import: pydantic_ai_toolproxy {version} from {package} ({core})'


def check_quickstart() -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'examples' / 'quickstart.py')],
        capture_output=True,
        text=True,
        timeout=120,
        encoding='utf-8',
    )
    check(proc.returncode == 0, f'quickstart exited {proc.returncode}: {proc.stderr[-2000:]}')
    check(proc.stdout.splitlines() == QUICKSTART_OUTPUT, f'quickstart printed {proc.stdout!r}')
    return 'quickstart: prints what the README shows'


def _handler(verb: str, topic: str) -> Any:
    def run(**arguments: Any) -> str:
        return f'{verb} {topic}: {json.dumps(arguments, sort_keys=True)}'

    return run


def thousand_tools() -> Any:
    """1,000 tools in 10 groups, one of which (`refund_duplicate_charge`) is the only match of the query."""
    from pydantic_ai.tools import Tool
    from pydantic_ai.toolsets import FunctionToolset

    from pydantic_ai_toolproxy import ToolProxyGroup

    groups: dict[str, ToolProxyGroup] = {}
    for g, topic in enumerate(TOPICS):
        tools = []
        for i in range(TOOLS // len(TOPICS)):
            verb = VERBS[i % len(VERBS)]
            name = f'{verb}_{topic}_{i:03d}'
            description = f'{verb.capitalize()} one {topic} record of region {i % 7} (batch {i // 10}).'
            if g == 5 and i == 42:
                name, verb = 'refund_duplicate_charge', 'refund'
                description = 'Refund a customer charge that was billed twice by mistake.'
            schema = {
                'type': 'object',
                'properties': {'record_id': {'type': 'integer', 'description': f'the {topic} id'}},
                'required': ['record_id'],
            }
            tools.append(
                Tool.from_schema(_handler(verb, topic), name=name, description=description, json_schema=schema)
            )
        groups[topic] = ToolProxyGroup(source=FunctionToolset(tools), description=f'{topic.capitalize()} records')
    return groups


class BagOfWords:
    """Deterministic 64-dimension vectors: each word adds 1 to the coordinate its hash picks (built lazily, since
    the class derives from Pydantic AI's `EmbeddingModel`)."""

    @staticmethod
    def make() -> Any:
        from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult

        class Model(EmbeddingModel):
            @property
            def model_name(self) -> str:
                return 'smoke-bag-v1'

            @property
            def system(self) -> str:
                return 'smoke'

            async def embed(self, inputs: Any, *, input_type: Any, settings: Any = None) -> EmbeddingResult:
                texts = [inputs] if isinstance(inputs, str) else list(inputs)
                vectors = []
                for text in texts:
                    vector = [0.0] * 64
                    for word in re.findall(r'[a-z0-9]+', text.lower()):
                        vector[hashlib.blake2b(word.encode(), digest_size=8).digest()[0] % 64] += 1.0
                    vectors.append(vector)
                return EmbeddingResult(
                    vectors, inputs=texts, input_type=input_type, model_name='smoke-bag-v1', provider_name='smoke'
                )

        return Model()


def search_page(query: str, hybrid: bool) -> dict[str, Any]:
    """The first search page of a real agent run over the 1,000 tools (keyword, or hybrid with `BagOfWords`)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig

    pages: list[dict[str, Any]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': query, 'limit': 5})])
        pages.append(messages[-1].parts[-1].content)  # type: ignore[union-attr]
        return ModelResponse(parts=[TextPart('done')])

    if hybrid:
        config = ToolProxyConfig(embedder=BagOfWords.make(), embedding_cache=None, embedding_wait=60.0)
    else:
        config = ToolProxyConfig()
    agent = Agent(FunctionModel(model), capabilities=[ToolProxyCapability(groups=thousand_tools(), config=config)])
    agent.run_sync('find the tool')
    check(len(pages) == 1, f'the run made {len(pages)} searches')
    return pages[0]


def check_keyword_search() -> str:
    page = search_page('refund a charge billed twice', hybrid=False)
    names = [(t['group'], t['tool']) for t in page['tools']]
    check(bool(names) and names[0] == ('payment', 'refund_duplicate_charge'), f'keyword search found {names}')
    return f'keyword search over {TOOLS:,} tools: {names[0][0]}/{names[0][1]} first of {page["total"]}'


def hybrid_names(portable: bool) -> list[list[str]]:
    if not portable:
        page = search_page('refund a charge billed twice', hybrid=True)
        return [[t['group'], t['tool']] for t in page['tools']]
    env = {**os.environ, 'TOOLPROXY_PORTABLE_SIMD': '1'}
    proc = subprocess.run(
        [sys.executable, __file__, '--hybrid-page'], capture_output=True, text=True, timeout=300, env=env
    )
    check(proc.returncode == 0, f'the portable hybrid search failed: {proc.stderr[-2000:]}')
    names: list[list[str]] = json.loads(proc.stdout)
    return names


def check_hybrid_search() -> str:
    dispatched = hybrid_names(portable=False)
    check(bool(dispatched) and dispatched[0] == ['payment', 'refund_duplicate_charge'], f'hybrid found {dispatched}')
    portable = hybrid_names(portable=True)
    check(dispatched == portable, f'SIMD and portable hybrid pages differ: {dispatched} vs {portable}')
    return f"hybrid search over {TOOLS:,} tools: the same {len(dispatched)} tools with this CPU's kernels and the portable ones"


def check_cache_file() -> str:
    from pydantic_ai_toolproxy import SQLiteEmbeddingStore, ToolProxyConfig, default_embedding_cache_path

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        text = (Path(tmp).resolve() / 'a cache folder' / 'embeddings.sqlite3').as_posix()
        ToolProxyConfig(embedding_cache=text)  # a path with a drive letter is never refused as a URL
        with SQLiteEmbeddingStore(text) as store:
            store.put_many('smoke:bag:2', {b'h' * 16: bytes(8)})
            check(not store.fell_back, f'the cache file fell back to memory: {store.fault}')
        with SQLiteEmbeddingStore(text) as again:
            check(again.get_many('smoke:bag:2', [b'h' * 16]) == {b'h' * 16: bytes(8)}, 'the cache file lost a vector')
            check(not again.fell_back, f'the cache file fell back to memory: {again.fault}')
    default = default_embedding_cache_path()
    return f'cache file: {text} written and read back; default cache {default}'


def check_cli(expect_version: str | None) -> str:
    scripts = Path(sysconfig.get_path('scripts'))
    exe = scripts / ('toolproxy.exe' if os.name == 'nt' else 'toolproxy')
    check(exe.exists(), f'no toolproxy command beside the interpreter ({exe})')
    proc = subprocess.run([str(exe), '--version'], capture_output=True, text=True, timeout=120)
    check(proc.returncode == 0, f'toolproxy --version exited {proc.returncode}: {proc.stderr[-2000:]}')
    printed = proc.stdout.strip()
    check(re.fullmatch(r'toolproxy \S+', printed) is not None, f'toolproxy --version printed {printed!r}')
    if expect_version is not None:
        check(printed == f'toolproxy {expect_version}', f'toolproxy --version printed {printed!r}')
    return f'cli: {printed}'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--expect-version', help='the version the package must report')
    parser.add_argument('--installed', action='store_true', help='fail when the package is imported from python/')
    parser.add_argument('--hybrid-page', action='store_true', help=argparse.SUPPRESS)  # the portable child
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a Windows console's code page cannot show every path
        stream.reconfigure(errors='backslashreplace')  # type: ignore[union-attr]
    if args.hybrid_page:
        print(json.dumps(hybrid_names(portable=False)))
        return 0
    steps = [
        lambda: check_import(args.expect_version, args.installed),
        check_quickstart,
        check_keyword_search,
        check_hybrid_search,
        check_cache_file,
        lambda: check_cli(args.expect_version),
    ]
    for step in steps:
        try:
            print(f'smoke: {step()}', flush=True)
        except Failure as exc:
            print(f'smoke: FAILED: {exc}', file=sys.stderr)
            return 1
    print(f'smoke: all passed on {sysconfig.get_platform()}, CPython {sys.version.split()[0]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
