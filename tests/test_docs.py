"""The documentation cannot go stale: its Python blocks run, its command outputs are what the commands print now.

- Every ```python block in README.md and docs/*.md runs as a script from the repository root (in a fresh
  interpreter), unless the line before it is `<!-- not runnable: REASON -->` with a reason.
- Every ```console block's output equals what `scripts/docs_outputs.py` regenerates (one script writes them).
- `examples/quickstart.py` is shown in the README verbatim, prints what the README shows, and is quick.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r'^```(\w*)\n(.*?)^```$', re.S | re.M)
NOT_RUNNABLE = re.compile(r'<!-- not runnable: (.+?) -->\s*$')

_spec = importlib.util.spec_from_file_location('docs_outputs', ROOT / 'scripts' / 'docs_outputs.py')
assert _spec is not None and _spec.loader is not None
docs_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_outputs)


def python_blocks() -> list[tuple[str, int, str, str | None]]:
    """`(file, line, code, reason)` for every python block; `reason` is set when it is marked not runnable."""
    found = []
    for path in docs_outputs.doc_files():
        text = path.read_text()
        for match in FENCE.finditer(text):
            if match.group(1) != 'python':
                continue
            before = text[: match.start()].rstrip('\n').rsplit('\n', 1)[-1]
            marker = NOT_RUNNABLE.search(before)
            line = text.count('\n', 0, match.start()) + 1
            found.append((str(path.relative_to(ROOT)), line, match.group(2), marker.group(1) if marker else None))
    return found


BLOCKS = python_blocks()


def test_the_docs_have_blocks_of_both_kinds() -> None:
    assert sum(reason is None for *_, reason in BLOCKS) >= 3
    assert all(reason is None or len(reason) > 10 for *_, reason in BLOCKS)


@pytest.mark.parametrize('where,code', [(f'{f}:{line}', code) for f, line, code, reason in BLOCKS if reason is None])
def test_python_block_runs(where: str, code: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(('OPENAI_', 'ANTHROPIC_'))}
    env['OPENAI_API_KEY'] = 'sk-docs-test-not-a-key'  # constructing a provider's model needs one; nothing is sent
    proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f'{where}:\n{proc.stderr[-3000:]}'


def test_no_doc_points_outside_the_repository() -> None:
    for path in docs_outputs.doc_files():
        text = path.read_text()
        assert '../' not in text, f'{path.name} points outside the repository'
        for target in re.findall(r'\]\(([^)#]+)(?:#[^)]*)?\)', text):  # relative links resolve
            if not target.startswith(('http://', 'https://')):
                assert (path.parent / target).exists(), f'{path.name}: broken link {target}'


def test_readme_shows_the_quickstart_verbatim() -> None:
    readme = (ROOT / 'README.md').read_text()
    code = (ROOT / 'examples' / 'quickstart.py').read_text()
    assert f'```python\n{code}```' in readme
    assert 20 <= len(code.splitlines()) <= 40


def test_quickstart_prints_its_results_in_under_two_seconds_of_cpu() -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, 'examples/quickstart.py'], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "the model is offered: ['search_proxy_tools', 'call_proxy_tool']",
        "search found: [('crm', 'customer_name')] total 1",
        'call returned: Ada',
        'Customer 42 is Ada.',
    ]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 2.0, f'the quickstart used {cpu:.2f} s of CPU'


@pytest.mark.slow
@pytest.mark.parametrize('path', docs_outputs.doc_files(), ids=lambda p: p.name)
def test_command_outputs_shown_are_current(path: Path) -> None:
    text = path.read_text()
    now = docs_outputs.render(text)
    diff = ''.join(list(difflib.unified_diff(text.splitlines(True), now.splitlines(True), 'shown', 'printed now'))[:80])
    assert now == text, (
        f'{path.relative_to(ROOT)} shows command outputs that differ from what the commands print now '
        f'(run `bash scripts/docs-outputs`):\n{diff}'
    )


def test_the_output_script_fills_a_console_block() -> None:
    doc = '```console\n$ echo one\nstale\n$ printf "two\\n"; echo "exit $?"\n```\n'
    assert (
        docs_outputs.render(doc)
        == '```console\n$ echo one\none\n\n$ printf "two\\n"; echo "exit $?"\ntwo\nexit 0\n```\n'
    )


def test_readme_bytes_per_request_are_what_inspect_measures_now() -> None:
    proc = subprocess.run(
        [sys.executable, '-m', 'pydantic_ai_toolproxy', '--config', 'examples/toolproxy.toml', 'inspect', '--json'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    proxy, direct = doc['per_request']['proxy']['total_bytes'], doc['per_request']['direct']['total_bytes']
    row = f"| the demo's {doc['grouped_tools']:,} grouped tools (17 BFCL domains + an MCP server) | {proxy:,} vs {direct:,} ({100 * proxy / direct:.2f}%) |"
    assert row in (ROOT / 'README.md').read_text(), f'README should show: {row}'
