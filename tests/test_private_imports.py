"""Private Pydantic AI names: every one the package imports is listed (with why) in `_private.py`, and each resolves."""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic_ai_toolproxy import _private

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'python' / 'pydantic_ai_toolproxy'
OUTSIDE = [ROOT / 'tests', ROOT / 'tests_harness', ROOT / 'bench', ROOT / 'examples', ROOT / 'scripts']
"""Code beside the package that imports Pydantic AI too: it goes through `_private` for private names."""


def _is_private(module: str) -> bool:
    parts = module.split('.')
    return parts[0] == 'pydantic_ai' and any(p.startswith('_') for p in parts[1:])


def private_imports(source: str) -> set[tuple[str, str]]:
    """`(module, name)` for each `from pydantic_ai... import name` whose module path has a `_`-prefixed part."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and _is_private(node.module):
            found.update((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update((alias.name, '*') for alias in node.names if _is_private(alias.name))
    return found


def test_every_private_import_of_the_package_is_listed() -> None:
    listed = private_imports((PACKAGE / '_private.py').read_text())
    assert listed, 'the list itself imports the names'
    for path in sorted(PACKAGE.rglob('*.py')):
        unlisted = private_imports(path.read_text()) - listed
        assert not unlisted, (
            f'{path.relative_to(PACKAGE)} imports private Pydantic AI names not listed in _private.py: {unlisted}'
        )


def test_only_the_list_imports_private_names() -> None:
    for path in sorted(PACKAGE.rglob('*.py')):
        if path.name != '_private.py':
            found = private_imports(path.read_text())
            assert not found, (
                f'{path.relative_to(PACKAGE)} imports {found} from Pydantic AI directly: import them from ._private'
            )


def fallback_imports(source: str) -> set[tuple[str, str]]:
    """The private imports made only in an `else:` branch (a name only an older Pydantic AI has)."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and node.orelse:
            found |= private_imports(ast.unparse(ast.Module(body=node.orelse, type_ignores=[])))
    return found


def test_each_listed_name_is_documented_and_resolves() -> None:
    doc = _private.__doc__ or ''
    source = (PACKAGE / '_private.py').read_text()
    fallbacks = fallback_imports(source)
    for item in private_imports(source):
        _module, name = item
        assert f'`{name}`' in doc, f'{name} has no reason in the _private docstring'
        if item not in fallbacks:
            assert getattr(_private, name) is not None
    assert callable(_private.keywords_search)  # the public name or its fallback


def test_tests_benchmarks_and_examples_import_private_names_through_the_list() -> None:
    for folder in OUTSIDE:
        for path in sorted(folder.rglob('*.py')):
            if path.name == 'test_private_imports.py':  # its own checker's sample strings
                continue
            found = private_imports(path.read_text())
            assert not found, (
                f'{path.relative_to(ROOT)} imports {found} from Pydantic AI directly: use pydantic_ai_toolproxy._private'
            )


def test_the_checker_sees_private_imports() -> None:
    assert private_imports(
        'from pydantic_ai._utils import gather\nimport pydantic_ai.toolsets._dynamic\nfrom pydantic_ai.tools import Tool'
    ) == {
        ('pydantic_ai._utils', 'gather'),
        ('pydantic_ai.toolsets._dynamic', '*'),
    }
