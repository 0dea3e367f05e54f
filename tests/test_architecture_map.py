"""docs/architecture.md stays a true map: its Layout names every source file under `python/` and `src/`, and every
path the document names exists.

The Layout block is a tree: an entry line starts with its names (comma-separated, a directory's ending in `/`),
indented two spaces under its directory, then its description after two or more spaces; a line indented to the
description column continues the description above.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / 'docs' / 'architecture.md'
SOURCE_SUFFIXES = ('.py', '.pyi', '.rs')
NAMED_SUFFIXES = (*SOURCE_SUFFIXES, '.md', '.toml', '.txt', '.json', '.so')
DESCRIPTION_COLUMN = 27
"""Lines indented this far or more continue a description; entries start left of it."""
SKIPPED_DIRS = {'.git', 'target', '__pycache__', 'node_modules'}


def layout_block(text: str) -> list[str]:
    """The lines of the fenced block under `## Layout`."""
    after = text.split('\n## Layout\n', 1)[1]
    return after.split('```\n', 2)[1].splitlines()


def layout_entries(lines: list[str]) -> dict[str, int]:
    """Path (from the repository root; a directory's ends in `/`) -> line number, of every entry of the tree."""
    entries: dict[str, int] = {}
    stack: list[tuple[int, str]] = []  # (indent, directory path) of the directories the next line may sit in
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(' '))
        if indent >= DESCRIPTION_COLUMN:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ''
        names = re.split(r' {2,}', line.strip(), maxsplit=1)[0]
        for name in names.split(', '):
            path = parent + name.strip()
            entries[path] = number
            if path.endswith('/'):
                stack.append((indent, path))
    return entries


def source_files() -> list[str]:
    """Every source file (`.py`, `.pyi`, `.rs`) under `python/` and `src/`, from the repository root."""
    found: list[str] = []
    for top in ('python', 'src'):
        for folder, dirs, files in os.walk(ROOT / top):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith('.')]
            found += [Path(folder, f).relative_to(ROOT).as_posix() for f in files if f.endswith(SOURCE_SUFFIXES)]
    return sorted(found)


def repository_paths() -> set[str]:
    """Every file and directory of the checkout (a directory's path ends in `/`), hidden and build folders aside."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith('.')]
        base = Path(folder).relative_to(ROOT).as_posix()
        prefix = '' if base == '.' else base + '/'
        found.update(prefix + d + '/' for d in dirs)
        found.update(prefix + f for f in files)
    return found


def named_paths(text: str, top: set[str]) -> set[str]:
    """The paths the document names: words ending in a file suffix or in `/`, or starting with a folder of the
    repository's root (`top`: `scripts/test`), markdown anchors cut off; not absolute paths, hidden folders
    (`.venv/...`), build output (`target/...`, `fuzz/target`), patterns (`cmd_<command>.py`) or prose
    (`retry/failure`)."""
    found: set[str] = set()
    for word in re.findall(r'[\w./#<>*-]+', text):
        word = word.split('#', 1)[0].rstrip('.,')
        if not word or word.startswith(('/', '.')) or any(c in word for c in '<>*'):
            continue
        if SKIPPED_DIRS.intersection(word.split('/')):
            continue
        if word.endswith((*NAMED_SUFFIXES, '/')) or ('/' in word and word.split('/', 1)[0] in top):
            found.add(word)
    return found


def exists(name: str, paths: set[str]) -> bool:
    """Whether `name` is a path of the checkout, from the root or as the tail of one (`stores/listings.py`,
    `usage.md`, `mod.rs`)."""
    if name in paths or name.rstrip('/') in paths or name.rstrip('/') + '/' in paths:
        return True
    tail = '/' + name
    return any(p.endswith((tail, tail.rstrip('/') + '/')) for p in paths)


def test_the_layout_names_every_source_file() -> None:
    entries = layout_entries(layout_block(DOC.read_text(encoding='utf-8')))
    missing = [path for path in source_files() if path not in entries]
    assert not missing, f'docs/architecture.md, ## Layout: add a line for each of {missing}'


def test_every_layout_entry_exists() -> None:
    entries = layout_entries(layout_block(DOC.read_text(encoding='utf-8')))
    gone = [f'{path} (line {n} of the block)' for path, n in entries.items() if not (ROOT / path).exists()]
    assert not gone, f'docs/architecture.md, ## Layout names paths that do not exist: {gone}'


def test_every_path_the_document_names_exists() -> None:
    paths = repository_paths()
    top = {p.rstrip('/') for p in paths if '/' not in p.rstrip('/')}
    gone = sorted(name for name in named_paths(DOC.read_text(encoding='utf-8'), top) if not exists(name, paths))
    assert not gone, f'docs/architecture.md names paths that do not exist: {gone}'


def test_the_readers_catch_what_they_should() -> None:
    lines = [
        'src/                       the core',
        '  lib.rs                   crate root',
        '  index/                   the index',
        '    mod.rs, record.rs      two files',
        '                           a continued description naming nothing',
        '  page.rs                  planning',
        'bench/                     benchmarks',
    ]
    assert layout_entries(lines) == {
        'src/': 1,
        'src/lib.rs': 2,
        'src/index/': 3,
        'src/index/mod.rs': 4,
        'src/index/record.rs': 4,
        'src/page.rs': 6,
        'bench/': 7,
    }
    text = (
        'see `stores/listings.py`, [usage](usage.md#top), `/tmp/x.txt`, `.venv/bin/python`, `cmd_<c>.py`, e.g. '
        'retry/failure texts, `bash scripts/test`, `fuzz/target`, `target/release-check/`, `fuzz/fuzz_targets/`'
    )
    assert named_paths(text, {'scripts', 'fuzz'}) == {
        'stores/listings.py',
        'usage.md',
        'scripts/test',
        'fuzz/fuzz_targets/',
    }
    paths = {'python/', 'python/pkg/', 'python/pkg/stores/', 'python/pkg/stores/listings.py', 'docs/usage.md'}
    assert exists('stores/listings.py', paths) and exists('stores/', paths) and exists('usage.md', paths)
    assert not exists('stores/gone.py', paths) and not exists('tings.py', paths)
