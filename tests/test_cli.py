"""The `toolproxy` command line, run as a subprocess against the example MCP server and BFCL toolsets.

Figures the CLI prints are cross-checked against real agent runs made here, so what it shows must be
what the model gets.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import tool_return_ta
from support import Script, json_of, last_return, toolproxy

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy.cli import main

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / 'examples' / 'mcp_server.py'
FIXTURES = ROOT / 'tests' / 'cli_sources.py'
BFCL = ['-s', f'{ROOT}/examples/bfcl_tools.py:bfcl_toolsets']
NOTES = 'Notes and weather'
MCP = [
    '--mcp-stdio',
    f'{shlex.quote(sys.executable)} {shlex.quote(str(SERVER))} --no-test-tools',
    '--group',
    'notes',
    '--description',
    NOTES,
]
SEARCH = 'search_proxy_tools'

sys.path.insert(0, str(ROOT / 'examples'))
from bfcl_tools import bfcl_toolsets  # noqa: E402


def declaration_bytes(tool_def: Any) -> int:
    d = {
        'name': tool_def.name,
        'description': tool_def.description or '',
        'parameters': tool_def.parameters_json_schema,
    }
    return len(json.dumps(d, separators=(',', ':'), ensure_ascii=False).encode())


def mcp_toolset() -> MCPToolset[Any]:
    transport = StdioTransport(command=sys.executable, args=[str(SERVER), '--no-test-tools'], cwd=str(ROOT))
    return MCPToolset(transport, id='notes', include_instructions=True)


def bfcl_proxy(**config: Any) -> ToolProxyCapability[Any]:
    groups = {name: ToolProxyGroup(source=ts, description=desc) for name, (ts, desc) in bfcl_toolsets().items()}
    return ToolProxyCapability(groups=groups, config=ToolProxyConfig(**config))


async def model_search(proxy: ToolProxyCapability[Any], args: dict[str, Any]) -> str:
    """The search page a model gets for `args`, from an agent run made here."""
    script = Script([[(SEARCH, args)], 'done'])
    result = await Agent(script.model, capabilities=[proxy]).run('x')
    return last_return(result.all_messages(), SEARCH).model_response_str()


# --- inspect ---------------------------------------------------------------------------------------


async def test_inspect_mcp_server_reports_the_bytes_the_model_gets() -> None:
    proc = toolproxy(*MCP, 'inspect', '--json')
    assert proc.returncode == 0, proc.stderr
    doc = json_of(proc)
    assert [(g['name'], g['tools'], g['description']) for g in doc['groups']] == [('notes', 6, NOTES)]
    assert doc['grouped_tools'] == 6 and doc['direct_tools'] == []

    # The same server, grouped and offered directly, in agent runs made here.
    proxied = Script(['done'])
    await Agent(
        proxied.model,
        capabilities=[ToolProxyCapability(groups={'notes': ToolProxyGroup(source=mcp_toolset(), description=NOTES)})],
    ).run('x')
    direct = Script(['done'])
    await Agent(direct.model, toolsets=[mcp_toolset()]).run('x')
    proxy, everything = doc['per_request']['proxy'], doc['per_request']['direct']
    assert [c['name'] for c in proxy['controls']] == proxied.offered(0) == [SEARCH, 'call_proxy_tool']
    assert proxy['tool_bytes'] == sum(declaration_bytes(t) for t in proxied.infos[0].function_tools)
    assert proxy['instructions_bytes'] == len(proxied.infos[0].instructions.encode())
    assert everything['tools'] == 6
    assert everything['tool_bytes'] == sum(declaration_bytes(t) for t in direct.infos[0].function_tools)
    assert (
        everything['instructions_bytes'] == len(direct.infos[0].instructions.encode()) > 0
    )  # the server's instructions
    assert doc['instructions'] == proxied.infos[0].instructions
    assert doc['controls'][0]['description'] == proxied.tool_def(SEARCH).description

    plain = toolproxy(*MCP, 'inspect', '--full')  # the same figures as a table, without escape codes when piped
    assert plain.returncode == 0 and '\x1b' not in plain.stdout and plain.stderr == ''
    lines = plain.stdout.splitlines()
    assert lines[0] == '1 group, 6 grouped tools, 0 direct tools'
    assert any(line.split() == ['notes', '6', *NOTES.split()] for line in lines)
    assert any(
        line.split() == ['total', f'{proxy["total_bytes"]:,}', f'{everything["total_bytes"]:,}'] for line in lines
    )
    assert '--- search_proxy_tools' in lines and plain.stdout.rstrip('\n').endswith(doc['instructions'])  # --full


def test_inspect_bfcl_groups_and_counts() -> None:
    expected = {name: len(ts.tools) for name, (ts, _) in bfcl_toolsets().items()}
    doc = json_of(toolproxy(*BFCL, 'inspect', '--json'))
    assert {g['name']: g['tools'] for g in doc['groups']} == expected
    assert doc['grouped_tools'] == sum(expected.values()) == 1853
    proxy, direct = doc['per_request']['proxy'], doc['per_request']['direct']
    assert direct['tools'] == 1853 and proxy['tools'] == 2
    assert proxy['total_bytes'] < direct['total_bytes'] / 100


# --- search ----------------------------------------------------------------------------------------


async def test_search_prints_exactly_the_page_the_model_gets() -> None:
    first = toolproxy(*BFCL, 'search', 'area', '--group', 'math', '--limit', '3', '--json')
    assert first.returncode == 0, first.stderr
    proxy = bfcl_proxy()
    assert first.stdout.rstrip('\n') == await model_search(proxy, {'query': 'area', 'group': 'math', 'limit': 3})
    page = json.loads(first.stdout)
    assert len(page['tools']) == 3 and page['next_offset'] == 3 and page['total'] > 6
    assert all(t['group'] == 'math' and 'area' in (t['tool'] + t['description']).lower() for t in page['tools'])

    second = toolproxy(*BFCL, 'search', 'area', '--group', 'math', '--limit', '3', '--offset', '3', '--json')
    expected = await model_search(proxy, {'query': 'area', 'group': 'math', 'limit': 3, 'offset': 3})
    assert second.stdout.rstrip('\n') == expected
    assert json.loads(expected)['total'] == page['total']
    assert not {t['tool'] for t in json.loads(expected)['tools']} & {t['tool'] for t in page['tools']}


def test_search_table_plain_when_piped_and_rich_on_a_terminal() -> None:
    plain = toolproxy(*MCP, 'search', 'convert temperature')
    assert plain.returncode == 0 and '\x1b' not in plain.stdout
    lines = plain.stdout.splitlines()
    assert lines[0] == f'{SEARCH} {{"query": "convert temperature"}}'
    assert lines[1].split() == ['#', 'group', 'tool', 'bytes', 'description']
    assert lines[2].split()[:3] == ['1', 'notes', 'convert_temperature']
    assert lines[-1].startswith('total ') and 'next_offset' in lines[-1] and 'of 32,768 bytes' in lines[-1]

    rich = toolproxy(*MCP, 'search', 'convert temperature', env={'FORCE_COLOR': '1', 'COLUMNS': '120'})
    assert rich.returncode == 0 and '\x1b[' in rich.stdout and 'convert_temperature' in rich.stdout
    assert 'starting MCP server' in rich.stderr  # progress while the server starts
    assert plain.stderr == ''  # and none when stderr is piped


def test_progress_names_the_step_first_on_a_narrow_terminal() -> None:
    # A stdio MCP source is named by its whole command line; on a narrow terminal the label is cut at the end,
    # so the status must come first (a checkout at a longer path once cut it away).
    narrow = toolproxy(*MCP, 'search', 'note', env={'FORCE_COLOR': '1', 'COLUMNS': '60'})
    assert narrow.returncode == 0 and 'starting MCP server' in narrow.stderr


@pytest.fixture
def http_server() -> Iterator[str]:
    """The example MCP server over streamable HTTP on a free loopback port; yields its URL."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(ROOT / 'tests' / 'cli_http_server.py'), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ''
            try:
                socket.create_connection(('127.0.0.1', port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, 'the HTTP MCP server did not listen within 30 s'
                time.sleep(0.05)
        yield f'http://127.0.0.1:{port}/mcp'
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def test_search_over_an_http_mcp_server(http_server: str) -> None:
    proc = toolproxy('--mcp-http', http_server, '--group', 'notes', 'search', 'forecast city', '--limit', '1', '--json')
    assert proc.returncode == 0, proc.stderr
    page = json.loads(proc.stdout)
    assert page['tools'][0]['tool'] == 'get_forecast' and page['tools'][0]['group'] == 'notes'
    assert page['tools'][0]['instructions']  # the server's instructions come back with the tool, not in the prompt


def test_refused_search_exits_1_with_the_models_message() -> None:
    clean = ['-s', f'{FIXTURES}:clean_groups']
    unknown = toolproxy(*clean, 'search', 'x', '--group', 'nope')
    assert unknown.returncode == 1 and "Unknown group 'nope'" in unknown.stderr and unknown.stdout == ''
    too_many = toolproxy(*clean, '--max-results', '4', 'search', 'x', '--limit', '5', '--json')
    assert too_many.returncode == 1
    assert json_of(too_many)['outcome'] == 'retried' and 'between 1 and 4' in json_of(too_many)['message']


# --- check -----------------------------------------------------------------------------------------


def test_check_reports_every_problem_with_tool_and_fix() -> None:
    proc = toolproxy('-s', f'{FIXTURES}:problem_groups', '-s', f'{FIXTURES}:direct', 'check', '--json')
    assert proc.returncode == 1, proc.stderr
    doc = json_of(proc)
    found = {(p['severity'], p['kind'], p['group'], p['tool']) for p in doc['problems']}
    assert found == {
        ('error', 'duplicate-name', 'crm', 'customer_name'),
        ('error', 'unsupported', 'client', 'client_op'),
        ('error', 'unsupported', 'client', 'deferred_refund'),
        ('error', 'oversized', 'records', 'huge'),
        ('error', 'name-collision', 'billing', 'refund'),
        ('error', 'control-collision', None, 'call_proxy_tool'),
        ('warning', 'blank-description', 'records', 'undocumented'),
        ('warning', 'not-first', 'records', 'lookup'),
    }
    assert (doc['errors'], doc['warnings'], doc['direct_tools']) == (6, 2, 2)
    assert all(p['fix'] and p['message'] for p in doc['problems'])
    by_kind = {p['kind']: p for p in doc['problems']}
    assert 'external' in by_kind['unsupported']['message'] or 'defer_loading' in by_kind['unsupported']['message']
    assert "'Lookup'" in by_kind['not-first']['message']
    assert 'expose it directly' in by_kind['oversized']['fix']

    assert by_kind['oversized']['size'] > 32_768 and 'cannot fit even the largest budget' in by_kind['oversized']['fix']

    plain = toolproxy('-s', f'{FIXTURES}:problem_groups', '-s', f'{FIXTURES}:direct', 'check')
    assert plain.returncode == 1 and '\x1b' not in plain.stdout
    assert '6 errors, 2 warnings' in plain.stdout
    for where in ('records/huge', 'crm/customer_name', 'client/client_op', 'billing/refund', 'call_proxy_tool'):
        assert where in plain.stdout


async def test_check_bfcl_with_a_small_budget_reports_real_entry_sizes() -> None:
    proc = toolproxy(*BFCL, '--max-search-bytes', '1024', 'check', '--json')
    assert proc.returncode == 1, proc.stderr
    doc = json_of(proc)
    assert doc['tools'] == 1853 and doc['max_search_bytes'] == 1024
    oversized = [p for p in doc['problems'] if p['kind'] == 'oversized']
    # An entry is oversized when it and the page frame `{"tools":[...],"total":T,"next_offset":K}` exceed 1,024 bytes.
    assert oversized and all(p['severity'] == 'error' and p['size'] > 1024 - 64 for p in oversized)
    assert all(int(p['fix'].rsplit(' ', 1)[1].replace(',', '')) > 1024 for p in oversized)  # "raise ... to at least N"
    not_first = {(p['group'], p['tool']) for p in doc['problems'] if p['kind'] == 'not-first'}
    assert ('finance', 'calculate_roi') in not_first  # BFCL also has calculate_ROI: an exact-name tie
    proxy = bfcl_proxy()  # the default budget: every entry fits, so its real size can be measured
    for problem in oversized[:5]:
        page = json.loads(await model_search(proxy, {'query': problem['tool'], 'group': problem['group'], 'limit': 10}))
        entry = next(e for e in page['tools'] if e['tool'] == problem['tool'])
        assert problem['size'] == len(tool_return_ta.dump_json(entry, by_alias=True))


def test_check_exit_status_clean_warnings_and_strict() -> None:
    mcp = toolproxy(*MCP, 'check', '--json')
    assert mcp.returncode == 0 and json_of(mcp)['problems'] == [] and json_of(mcp)['tools'] == 6
    clean = toolproxy('-s', f'{FIXTURES}:clean_groups', '-s', f'{FIXTURES}:status', 'check')
    assert clean.returncode == 0 and clean.stdout.splitlines()[-1] == 'No problems found.'
    assert 'and 1 direct tool ' in clean.stdout
    warned = toolproxy('-s', f'{FIXTURES}:warning_groups', 'check')
    assert warned.returncode == 0 and 'records/lookup' in warned.stdout and 'nothing would fail' in warned.stdout
    strict = toolproxy('-s', f'{FIXTURES}:warning_groups', 'check', '--strict')
    assert strict.returncode == 1


# --- sources and config files ----------------------------------------------------------------------

TOML = f"""
[sources.notes]
mcp_stdio = "{sys.executable} {SERVER} --no-test-tools"

[sources.records]
module = "{FIXTURES.name}:clean_groups"

[sources.status]
module = "{FIXTURES.name}:status"

[[tool_sources]]
source_id = "notes"
presentation = "proxy"
group = "notes"
description = "{NOTES}"

[[tool_sources]]
source_id = "records"
presentation = "proxy"

[discovery]
max_results = 7
"""


def _as_json_config(toml_text: str) -> str:
    import tomllib

    return json.dumps(tomllib.loads(toml_text))


@pytest.mark.parametrize('suffix', ['toml', 'json'])
def test_config_file_in_the_host_schema(tmp_path: Path, suffix: str) -> None:
    (tmp_path / FIXTURES.name).write_text(FIXTURES.read_text())
    path = tmp_path / f'toolproxy.{suffix}'
    path.write_text(TOML if suffix == 'toml' else _as_json_config(TOML))
    doc = json_of(toolproxy('--config', str(path), 'inspect', '--json'))
    assert [(g['name'], g['tools']) for g in doc['groups']] == [('notes', 6), ('crm', 1), ('billing', 1)]
    assert doc['groups'][0]['description'] == NOTES
    assert doc['direct_tools'] == ['server_status']  # `status` is not listed in tool_sources: it stays direct
    assert doc['config']['max_results'] == 7
    if suffix == 'toml':  # command-line settings win over the file's [discovery]
        assert (
            json_of(toolproxy('--config', str(path), '--max-results', '3', 'inspect', '--json'))['config'][
                'max_results'
            ]
            == 3
        )


@pytest.mark.parametrize(
    ('text', 'needle'),
    [
        ('[sources.a]\nmodule = "x:y"\ncolour = "red"\n', 'sources.a.colour'),
        ('[sources.a]\nmodule = "x:y"\nmcp_http = "http://h/mcp"\n', 'exactly one of'),
        (
            '[sources.a]\nmodule = "x:y"\n[[tool_sources]]\nsource_id = "b"\npresentation = "proxy"\n',
            "unknown source_id 'b'",
        ),
        (
            '[sources.a]\nmodule = "x:y"\n[[tool_sources]]\nsource_id = "a"\npresentation = "direct"\ngroup = "g"\n',
            'no group',
        ),
        ('[sources.a]\nmodule = "x:y"\n[discovery]\nmax_results = "10"\n', 'discovery.max_results'),
        ('[sources\n', 'not valid TOML'),
    ],
)
def test_bad_config_files_exit_2_naming_the_problem(tmp_path: Path, text: str, needle: str, capsys: Any) -> None:
    path = tmp_path / 'bad.toml'
    path.write_text(text)
    assert main(['--config', str(path), 'inspect']) == 2
    captured = capsys.readouterr()
    assert needle in captured.err and captured.out == ''


@pytest.mark.parametrize(
    ('args', 'needle'),
    [
        (['-s', 'no_such_module_xyz:tools', 'inspect'], "cannot import module 'no_such_module_xyz'"),
        (['-s', f'{FIXTURES}:nothing', 'inspect'], "has no attribute 'nothing'"),
        (['-s', f'{FIXTURES}:HUGE_DESCRIPTION', 'inspect'], 'is a str; expected'),
        (['-s', f'{FIXTURES}:status', '--group', '9bad', 'inspect'], "'9bad'"),
        (['-s', f'{FIXTURES}:clean_groups', '--group', 'x', 'inspect'], 'already names its groups'),
        (['inspect'], 'no sources'),
        (['--mcp-stdio', f'{sys.executable} {SERVER} --fail-startup', '--group', 'notes', 'inspect'], 'did not start'),
        (['--max-search-bytes', '10', '-s', f'{FIXTURES}:clean_groups', 'inspect'], 'max_search_bytes'),
    ],
)
def test_bad_sources_exit_2_naming_the_problem(args: list[str], needle: str, capsys: Any) -> None:
    assert main(args) == 2
    assert needle in capsys.readouterr().err


def test_group_without_a_source_is_a_usage_error(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        main(['--group', 'notes', 'inspect'])
    assert exc.value.code == 2 and '--group must follow a source' in capsys.readouterr().err


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name('toolproxy')
    proc = subprocess.run(
        [str(script), '-s', f'{FIXTURES}:clean_groups', 'search', 'refund', '--json'],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)['tools'][0]['tool'] == 'refund'


def test_a_source_whose_get_tools_raises_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / 'failing_source.py').write_text(
        'from pydantic_ai.toolsets import FunctionToolset\n\n\n'
        'class Boom(FunctionToolset):\n'
        '    async def get_tools(self, ctx):\n'
        "        raise RuntimeError('source down')\n\n\n"
        'def f(x: int) -> str:\n'
        "    return 'x'\n\n\n"
        'boom = Boom([f])\n'
    )
    for command in ('check', 'inspect'):
        run = toolproxy('-s', 'failing_source.py:boom', '--group', 'g', command, cwd=tmp_path)
        assert run.returncode == 2, run.stderr
        assert 'Traceback' not in run.stderr and 'RuntimeError: source down' in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_control_characters_in_names_never_break_the_search_table(tmp_path: Path) -> None:
    """Found by a hostile pass: a tool named with a newline split its row in two, and an escape sequence reached the
    terminal. Both are shown escaped; a multi-line description still reads as one line of prose."""
    (tmp_path / 'odd_source.py').write_text(
        'from pydantic_ai.tools import Tool\n'
        'from pydantic_ai.toolsets import FunctionToolset\n\n\n'
        'def f(x: int) -> str:\n'
        "    return 'x'\n\n\n"
        'odd = FunctionToolset([\n'
        "    Tool(f, name='zeppelin\\nhangar', description='Park the zeppelin.\\nIn the hangar.'),\n"
        "    Tool(f, name='zeppelin\\x1b[31mred', description='Paint the zeppelin.'),\n"
        '])\n'
    )
    run = toolproxy('-s', 'odd_source.py:odd', '--group', 'g', 'search', 'zeppelin', cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    rows = [line for line in lines if line.split()[:1] in (['1'], ['2'])]
    assert len(rows) == 2, lines
    assert any('zeppelin\\nhangar' in row and 'Park the zeppelin. In the hangar.' in row for row in rows), rows
    assert any('zeppelin\\x1b[31mred' in row for row in rows) and '\x1b' not in run.stdout
