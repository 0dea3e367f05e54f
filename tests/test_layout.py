"""The package's shape stays readable: no source file over 600 lines, no class over 400 lines, only the public
modules and a few shared ones at the package root, and no import cycle between its families.

The families are the package's subpackages (`grouping/`, `controls/`, `search/`, `hybrid/`, `mcp_servers/`,
`stores/`, ...) and, each on its own, the modules left at the root; docs/architecture.md says what each holds.

Which imports count: every import statement executed when its module is imported, `if TYPE_CHECKING:` blocks
included; imports inside functions do not. A type-only import is still a dependency a reader follows (an
annotation names the other family's class), so a cycle through one is a cycle of the design even though Python
never runs it. A function-level import is how a module defers an optional or heavy part (the a13n-harness adapter,
the local embedder, an `mcpServers` file's servers) until it is used; tests_harness/test_layout.py checks, module by
module, that those do not close a cycle either.
"""

from __future__ import annotations

import ast
import graphlib
import itertools
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'python' / 'pydantic_ai_toolproxy'
NAME = 'pydantic_ai_toolproxy'
SOURCE_DIRS = ('python', 'src', 'tests', 'tests_harness', 'bench', 'examples', 'scripts', 'fuzz')
SOURCE_SUFFIXES = ('.py', '.pyi', '.rs')
SKIPPED_DIRS = {'.git', 'target', '__pycache__', 'node_modules'}
MAX_FILE_LINES = 600
MAX_CLASS_LINES = 400

PENDING: dict[str, str] = {}
"""Files and classes over their limit, each with who splits it; an entry that is back under its limit fails the
test until it is removed here."""

ROOT_MODULES = {
    # public: the import paths users write
    '__init__.py',
    '__main__.py',
    'capability.py',
    'config.py',
    'group.py',
    'plan.py',
    'explain.py',
    'embedding_store.py',
    'mcp_listing_cache.py',
    '_core.pyi',
    # shared by several families
    '_messages.py',
    '_runtime.py',
    '_interop.py',
    '_private.py',
    '_same.py',
    '_urls.py',
}
"""The only modules at the package root; any other module belongs to a family's folder."""


def source_files() -> list[Path]:
    found: list[Path] = []
    for top in SOURCE_DIRS:
        for folder, dirs, files in os.walk(ROOT / top):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith('.')]
            found += [Path(folder, f) for f in files if f.endswith(SOURCE_SUFFIXES)]
    return sorted(found)


def line_count(path: Path) -> int:
    return len(path.read_text(encoding='utf-8').splitlines())


def long_classes(path: Path) -> dict[str, int]:
    """`path::Class` -> lines, for each class (nested ones too) of a Python file over MAX_CLASS_LINES."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
            lines = node.end_lineno - node.lineno + 1 + len(node.decorator_list)
            if lines > MAX_CLASS_LINES:
                found[f'{path.relative_to(ROOT).as_posix()}::{node.name}'] = lines
    return found


def over_limits() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in source_files():
        if (lines := line_count(path)) > MAX_FILE_LINES:
            found[path.relative_to(ROOT).as_posix()] = lines
        if path.suffix in ('.py', '.pyi'):
            found.update(long_classes(path))
    return found


def test_no_source_file_or_class_is_over_its_limit() -> None:
    found = over_limits()
    new = {name: lines for name, lines in found.items() if name not in PENDING}
    assert not new, (
        f'over {MAX_FILE_LINES} lines a file or {MAX_CLASS_LINES} a class: {new}; split them by topic '
        '(a Rust test module: another file `#[path]`-included by the module it tests)'
    )
    done = sorted(set(PENDING) - set(found))
    assert not done, f'back under the limit: remove {done} from PENDING in tests/test_layout.py'


def test_the_root_holds_only_public_and_shared_modules() -> None:
    here = {p.name for p in PACKAGE.iterdir() if p.suffix in ('.py', '.pyi')}
    assert here == ROOT_MODULES, (
        f'modules to put in a family folder: {sorted(here - ROOT_MODULES)}; '
        f'gone from the root (update ROOT_MODULES and docs/architecture.md): {sorted(ROOT_MODULES - here)}'
    )


def module_name(path: Path) -> tuple[str, bool]:
    parts = [NAME, *path.relative_to(PACKAGE).with_suffix('').parts]
    if parts[-1] == '__init__':
        return '.'.join(parts[:-1]), True
    return '.'.join(parts), False


def is_module(dotted: str) -> bool:
    """Whether `dotted` (`pydantic_ai_toolproxy.x.y`) is a module or package of the tree (the `_core` extension
    included), not a name defined in one."""
    if dotted == NAME:
        return True
    if not dotted.startswith(NAME + '.'):
        return False
    path = PACKAGE.joinpath(*dotted.split('.')[1:])
    return path.is_dir() or any(path.parent.glob(f'{path.name}.*'))


def resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ''
    base = module.split('.') if is_package else module.split('.')[:-1]
    base = base[: len(base) - (node.level - 1)]
    return '.'.join([*base, node.module] if node.module else base)


def module_level_imports(source: str) -> list[ast.Import | ast.ImportFrom]:
    """Import statements run when the module is imported: at module level and in its `if`/`try`/`with` blocks
    (`if TYPE_CHECKING:` included) and class bodies; not in function bodies."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child)

    visit(ast.parse(source))
    return found


def imported_modules(path: Path) -> set[str]:
    """The package's modules `path` imports at module level (`from package import submodule` names the submodule)."""
    module, is_package = module_name(path)
    found: set[str] = set()
    for node in module_level_imports(path.read_text(encoding='utf-8')):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        target = resolve(module, is_package, node)
        for alias in node.names:
            found.add(f'{target}.{alias.name}' if is_module(f'{target}.{alias.name}') else target)
    return {name for name in found if name == NAME or name.startswith(NAME + '.')}


def family(module: str) -> str:
    """`grouping/` for every module of `grouping/`, the module itself for one at the root (`capability`), and
    `__init__` for the package root."""
    parts = module.split('.')
    if len(parts) == 1:
        return '__init__'
    if (PACKAGE / parts[1]).is_dir():
        return parts[1] + '/'
    return parts[1]


def family_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Family -> the families it imports at module level, and one `module -> module` import behind each edge."""
    graph: dict[str, set[str]] = {}
    why: dict[tuple[str, str], str] = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        module, _ = module_name(path)
        source = family(module)
        graph.setdefault(source, set())
        for target in imported_modules(path):
            if target.split('.')[-1] == '_core':  # the Rust extension: a leaf every family may use
                continue
            other = family(target)
            if other != source:
                graph[source].add(other)
                why.setdefault((source, other), f'{module} imports {target}')
    return graph, why


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path `[a, b, ..., a]` along the edges, or None."""
    try:  # graphlib reads `graph` as node -> predecessors: its cycle runs against the import edges
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(reversed(exc.args[1]))
    return None


def test_no_import_cycle_between_families() -> None:
    graph, why = family_graph()
    assert {'grouping/', 'controls/', 'search/', 'hybrid/', 'mcp_servers/', 'stores/'} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, 'import cycle between families: ' + '; '.join(
        why[(a, b)] for a, b in zip(cycle or [], (cycle or [])[1:])
    )


def test_the_readers_see_what_they_should() -> None:
    source = (
        'from typing import TYPE_CHECKING\n'
        'import os\n'
        'if TYPE_CHECKING:\n'
        '    from .a import A\n'
        'try:\n'
        '    from .b import B\n'
        'except ImportError:\n'
        '    pass\n'
        'def f():\n'
        '    from .c import C\n'
        'class K:\n'
        '    from .d import D\n'
        '    def g(self):\n'
        '        import e\n'
    )
    seen = [
        ast.unparse(node).split(' import')[0].replace('from ', '') if isinstance(node, ast.ImportFrom) else 'os'
        for node in module_level_imports(source)
    ]
    assert seen == ['typing', 'os', '.a', '.b', '.d']
    graph3 = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}}
    cycle = find_cycle(graph3)
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {'a', 'b', 'c'}
    assert all(b in graph3[a] for a, b in itertools.pairwise(cycle))  # a path along the import edges
    assert find_cycle({'a': {'b'}, 'b': set()}) is None
    assert family(f'{NAME}.grouping.names') == 'grouping/' and family(f'{NAME}.capability') == 'capability'
    assert is_module(f'{NAME}._core') and is_module(f'{NAME}.grouping') and not is_module(f'{NAME}.grouping.Nope')
    graph, _ = family_graph()
    assert 'grouping/' in graph['controls/']  # the call control resolves against the step's directory
    long_ = over_limits()
    assert all(lines > MAX_FILE_LINES or '::' in name for name, lines in long_.items())
