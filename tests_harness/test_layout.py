"""The package's module layout: no import cycle, every module importable first, and plain runs never load the harness.

Runs on CPython 3.13 (`.venv313`), where every module of the package, `harness/` included, can be imported.
"""

from __future__ import annotations

import ast
import graphlib
import itertools
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / 'python' / 'pydantic_ai_toolproxy'
ROOT = 'pydantic_ai_toolproxy'


def module_name(path: Path) -> str:
    parts = [ROOT, *path.relative_to(PACKAGE).with_suffix('').parts]
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob('*.py'))}


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ''
    base = module.split('.') if is_package else module.split('.')[:-1]
    base = base[: len(base) - (level - 1)]
    return '.'.join([*base, target] if target else base)


def _is_submodule(package: str, name: str) -> bool:
    """Whether `package.name` is a module (a `.py` file, a subpackage, or the `_core` extension), not a name."""
    if not package.startswith(ROOT):
        return False
    folder = PACKAGE.joinpath(*package.split('.')[1:])
    return (folder / name).is_dir() or any(folder.glob(f'{name}.*'))


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, from every import statement anywhere in its source: module
    level, function bodies (lazy imports) and `if TYPE_CHECKING:` blocks alike. A module importing a name from a
    package names that package; `from package import submodule` names the submodule. The implicit import of a
    module's parent packages is not an edge (every module would depend on the root `__init__`)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        is_package = path.name == '__init__.py'
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, is_package, node.level, node.module)
                submodules = [alias.name for alias in node.names if _is_submodule(target, alias.name)]
                names = [f'{target}.{name}' for name in submodules]
                if len(submodules) < len(node.names):  # names defined in `target` itself
                    names.append(target)
            else:
                continue
            edges.update(n for n in names if n in MODULES and n != module)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path `[a, b, ..., a]` along the edges, or None."""
    try:  # graphlib reads `graph` as node -> predecessors: its cycle runs against the import edges
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(reversed(exc.args[1]))
    return None


def test_the_graph_reader_sees_lazy_and_type_checking_imports() -> None:
    graph = import_graph()
    assert f'{ROOT}.harness.plan_apply' in graph[f'{ROOT}.plan']  # inside ToolProxyPlan.apply
    assert f'{ROOT}.harness.codeact' in graph[f'{ROOT}._interop']  # inside interop_for
    assert f'{ROOT}.harness.plugin' in graph[f'{ROOT}.harness']  # TYPE_CHECKING and __getattr__
    graph3 = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}}
    cycle = find_cycle(graph3)
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {'a', 'b', 'c'}
    assert all(b in graph3[a] for a, b in itertools.pairwise(cycle))  # a path along the import edges


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) >= 30
    cycle = find_cycle(graph)
    assert cycle is None, 'import cycle: ' + ' -> '.join(cycle or [])


def test_the_core_never_imports_the_harness_package_but_through_the_run_adapter() -> None:
    graph = import_graph()
    for module, edges in graph.items():
        if module.startswith((f'{ROOT}.harness', f'{ROOT}.cli')):
            continue
        into_harness = {e for e in edges if e.startswith(f'{ROOT}.harness')}
        allowed = {
            f'{ROOT}._interop': {f'{ROOT}.harness.codeact'},
            f'{ROOT}.plan': {f'{ROOT}.harness.plan_apply'},
        }.get(module, set())
        assert into_harness <= allowed, f'{module} imports {into_harness - allowed}'
    # The harness run adapter imports nothing of the package: loading it in a run loads no core module again.
    assert graph[f'{ROOT}.harness.codeact'] == set()


def _import_all(modules: list[str]) -> tuple[int, str]:
    code = f'import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)\n'
    run = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    return run.returncode, run.stderr[-2000:]


def test_every_module_imports_in_a_fresh_interpreter_in_either_order() -> None:
    """All modules, leaves first (sorted: `_interop` before `capability`) and roots first (reversed), each order in a
    fresh interpreter; the graph test above is the complete check, this one catches what only running can."""
    order = sorted(MODULES, key=lambda m: m.split('.'))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_import_all, [order, order[::-1]]))
    assert all(code == 0 for code, _ in results), results


PLAIN_RUN = textwrap.dedent(
    """
    import sys
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import FunctionToolset
    import pydantic_ai_toolproxy
    from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup, ToolProxyPlan, ToolProxySelection


    def customer_name(customer_id: int) -> str:
        '''Look up the display name for a customer ID.'''
        return 'Ada'


    def model(messages, info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': 'customer name'})])
        if len(messages) == 3:
            args = {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}
            return ModelResponse(parts=[ToolCallPart('call_proxy_tool', args)])
        return ModelResponse(parts=[TextPart(str(messages[-1].parts[-1].content))])


    proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=FunctionToolset([customer_name]), description='Customers')})
    assert Agent(FunctionModel(model), capabilities=[proxy]).run_sync('who?').output == 'Ada'
    loaded = sorted(m for m in sys.modules if m.startswith(('a13n_harness', 'pydantic_ai_toolproxy.harness')))
    assert not loaded, loaded
    print('ok')
    """
)


def test_a_plain_agent_run_never_imports_a13n_harness() -> None:
    run = subprocess.run([sys.executable, '-c', PLAIN_RUN], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == 'ok', run.stderr[-3000:]
