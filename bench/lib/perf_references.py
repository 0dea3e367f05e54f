"""The implementations `bench.perf` times per query: this package's Rust core (`CoreSearch`: ranking plus the first
page of 5) and the references (a13n-harness ToolSearch, Pydantic AI's keyword fallback, bm25s), each built over
the same replicated BFCL functions."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from bench.lib.perf_timing import settled_rss
from bench.lib.replicas import Fn, records
from pydantic_ai_toolproxy import _core
from pydantic_ai_toolproxy.controls.search import entry_size
from pydantic_ai_toolproxy.grouping.names import canonical_name


class CoreSearch:
    """The Rust core: ranking plus planning of the first page of 5 (entry sizes measured lazily and cached)."""

    def __init__(self, fns: Sequence[Fn]) -> None:
        self.by_key = {canonical_name(f.group, f.name): f for f in fns}
        built = records(fns)  # the Python records exist before the index, as a proxy's tool definitions do
        before = settled_rss()
        self.index = _core.SearchIndex()
        t = time.perf_counter()
        self.index.upsert(built)
        self.build_s = time.perf_counter() - t
        del built
        self.rss = settled_rss() - before
        """RSS the index holds beyond the records Python already had (measured around the build)."""
        self._sizes: dict[str, int] = {}

    def size(self, key: str) -> int:
        size = self._sizes.get(key)
        if size is None:
            f = self.by_key[key]
            entry = {
                'group': f.group,
                'tool': f.name,
                'description': f.description,
                'parameters_json_schema': f.parameters,
                'return_schema': None,
                'instructions': [],
                'codeact_eligible': False,
            }
            size = self._sizes[key] = entry_size(entry)
        return size

    def warm(self, queries: Sequence[str]) -> None:
        for q in queries:
            for key in self.index.search(q, None, 0, 5)[1]:
                self.size(key)

    def __call__(self, query: str) -> Any:
        total, keys = self.index.search(query, None, 0, 5)
        return _core.plan_page([self._sizes[k] for k in keys], total, 0, 32_768)


def a13n_reference(fns: Sequence[Fn]) -> Callable[[str], Any] | None:
    try:
        from a13n_harness.tools.tool_search import (
            PROXY_MEMBERSHIP_KEY,
            ToolSearchMembership,
            grouped_tool_name,
            proxy_directory,
        )
        from a13n_harness.toolsets.tool_search import _search_matches  # pyright: ignore[reportPrivateUsage]
    except ImportError:
        return None
    from pydantic_ai.toolsets.abstract import ToolsetTool

    holder = FunctionToolset[Any]()
    tools: dict[str, Any] = {}
    fields = (
        set(ToolSearchMembership.__dataclass_fields__)
        if hasattr(ToolSearchMembership, '__dataclass_fields__')
        else set()
    )
    for f in fns:
        kwargs: dict[str, Any] = {'group': f.group, 'tool': f.name}
        if 'description' in fields:
            kwargs['description'] = f'{f.group} tools'
        for extra in fields - {'group', 'tool', 'description'}:
            kwargs.setdefault(extra, None)
        name = grouped_tool_name(f.group, f.name)
        tool_def = ToolDefinition(
            name=name,
            description=f.description,
            parameters_json_schema=f.parameters,
            metadata={PROXY_MEMBERSHIP_KEY: ToolSearchMembership(**kwargs)},
        )
        tools[name] = ToolsetTool(toolset=holder, tool_def=tool_def, max_retries=1, args_validator=None)  # type: ignore[arg-type]

    def search(query: str) -> Any:
        return _search_matches(tools, proxy_directory(tools), query, None)[0][:10]

    return search


def pydantic_ai_reference(fns: Sequence[Fn]) -> Callable[[str], Any]:
    from pydantic_ai_toolproxy._private import keywords_search

    defs = [
        ToolDefinition(
            name=canonical_name(f.group, f.name), description=f.description, parameters_json_schema=f.parameters
        )
        for f in fns
    ]

    def search(query: str) -> Any:
        return keywords_search(None, [query], defs)[:10]  # type: ignore[arg-type]

    return search


def numeric_setup() -> str:
    """The numeric stack the bm25s reference runs on (its query time depends on it), as one sentence."""
    try:
        from importlib.metadata import version

        import numpy

        blas = numpy.__config__.CONFIG.get('Build Dependencies', {}).get('blas', {})
        config = str(blas.get('openblas configuration') or f'{blas.get("name")} {blas.get("version")}')
        return (
            f'bm25s {version("bm25s")} (numpy backend) on numpy {numpy.__version__} with {config}; '
            f'OPENBLAS_NUM_THREADS={os.environ.get("OPENBLAS_NUM_THREADS", "unset")}, {os.cpu_count()} CPUs.'
        )
    except Exception as error:  # a missing or unusual numpy: say so rather than stop the benchmark
        return f'bm25s numeric setup unknown ({type(error).__name__}: {error}).'


def bm25s_reference(fns: Sequence[Fn]) -> tuple[Callable[[str], Any], float] | None:
    try:
        import bm25s
    except ImportError:
        return None
    texts = [
        f'{f.name.replace("_", " ")} {f.description} {" ".join(f.parameters.get("properties", {}) or {})}' for f in fns
    ]
    t = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
    build = time.perf_counter() - t

    def search(query: str) -> Any:
        return retriever.retrieve(bm25s.tokenize([query], show_progress=False), k=10, show_progress=False)

    return search, build
