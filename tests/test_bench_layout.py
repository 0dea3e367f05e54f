"""bench/ is a package of commands: run as `python -m bench.<command>` from the repository root, with no `sys.path`
edits; shared code in `bench.lib`, which imports no command; one-off studies in `bench.experiments`; the steps of
the one-off extraction script `bench.agent_queries.extract_catalogue` beside it, imported by it alone; no import
cycle; nothing imports a private name of `examples/`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / 'bench'


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every Python file of bench/."""
    found = {}
    for path in sorted(BENCH.rglob('*.py')):
        parts = list(path.relative_to(ROOT).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        found['.'.join(parts)] = path
    return found


def imports(path: Path) -> set[str]:
    """Every module `path` imports (at module level or inside functions), with `from m import n` also as `m.n`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f'{node.module}.{alias.name}' for alias in node.names)
    return found


MODULES = modules()
PACKAGES = {'bench', 'bench.lib', 'bench.experiments'}
GRAPH = {
    name: {target for target in imports(path) if target in MODULES and target not in PACKAGES} - {name}
    for name, path in MODULES.items()
}


STEPS = {'bench.agent_queries.extract_catalogue': ('bench.agent_queries.servers', 'bench.agent_queries.listing')}
"""A one-off script split by step: its steps sit beside it, are no commands, and only it imports them."""


def kind(name: str) -> str:
    if name.startswith(('bench.lib', 'bench.experiments')):
        return name.split('.')[1]
    return 'step' if any(name in steps for steps in STEPS.values()) else 'command'


def test_no_module_of_bench_edits_sys_path() -> None:
    for path in MODULES.values():
        assert 'sys.path' not in path.read_text(), f'{path.relative_to(ROOT)} edits sys.path: run it as a module'


def test_bench_has_no_import_cycle() -> None:
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        assert name not in trail, f'import cycle: {" -> ".join([*trail[trail.index(name) :], name])}'
        if name not in done:
            for target in sorted(GRAPH[name]):
                visit(target, [*trail, name])
            done.add(name)

    for name in MODULES:
        visit(name, [])


def test_bench_modules_are_imported_by_their_package_path() -> None:
    # `import corpus` or `from perf import ...` only worked with bench/ itself put on sys.path
    stems = {path.stem for path in MODULES.values()} - {'__init__'}
    for folder in ('bench', 'tests', 'scripts'):
        for path in sorted((ROOT / folder).rglob('*.py')):
            bare = {target for target in imports(path) if target.split('.')[0] in stems}
            assert not bare, f'{path.relative_to(ROOT)} imports {sorted(bare)}: import bench.<module> instead'


def test_commands_and_experiments_import_only_the_library() -> None:
    assert {kind(name) for name in MODULES} == {'command', 'lib', 'experiments', 'step'}
    for name, targets in GRAPH.items():
        own_steps = set(STEPS.get(name, ())) | (
            {t for t in MODULES if kind(t) == 'step'} if kind(name) == 'step' else set()
        )
        wrong = {t for t in targets if kind(t) != 'lib' and t not in own_steps}
        assert not wrong, f'{name} imports {sorted(wrong)}: shared code belongs in bench.lib'


def test_every_command_runs_as_a_module() -> None:
    commands = [name for name in MODULES if kind(name) == 'command' and name not in PACKAGES]
    assert {'bench.perf', 'bench.quality', 'bench.dump_rankings'} <= set(commands)
    for name in commands:
        text = MODULES[name].read_text()
        assert "if __name__ == '__main__':" in text, f'{name} is a command without a main'
        assert f'python -m {name}' in text, f'{name} does not say how to run it (`python -m {name}`)'


def test_nothing_imports_private_names_of_the_examples() -> None:
    for folder in ('bench', 'tests', 'scripts'):
        for path in sorted((ROOT / folder).rglob('*.py')):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('examples'):
                    private = [alias.name for alias in node.names if alias.name.startswith('_')]
                    assert not private, f'{path.relative_to(ROOT)} imports {private} from {node.module}'
