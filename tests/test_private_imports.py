"""Private Pydantic AI names: every one the package imports is listed (with why) in `_private.py`, and each resolves."""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic_ai_toolproxy import _private

PACKAGE = Path(__file__).resolve().parent.parent / 'python' / 'pydantic_ai_toolproxy'


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


def test_each_listed_name_is_documented_and_resolves() -> None:
    doc = _private.__doc__ or ''
    for _module, name in private_imports((PACKAGE / '_private.py').read_text()):
        assert f'`{name}`' in doc, f'{name} has no reason in the _private docstring'
        assert getattr(_private, name) is not None


def test_the_checker_sees_private_imports() -> None:
    assert private_imports(
        'from pydantic_ai._utils import gather\nimport pydantic_ai.toolsets._dynamic\nfrom pydantic_ai.tools import Tool'
    ) == {
        ('pydantic_ai._utils', 'gather'),
        ('pydantic_ai.toolsets._dynamic', '*'),
    }
