"""`toolproxy --mcp-config FILE` and `mcp_config = "FILE"` in a config file: an `mcpServers` file, one group per
server, with real stdio servers (examples/mcp_server.py, tests/hostile_mcp_server.py) started by the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from support import toolproxy

ROOT = Path(__file__).resolve().parent.parent
NOTES = str(ROOT / 'examples' / 'mcp_server.py')
HOSTILE = str(ROOT / 'tests' / 'hostile_mcp_server.py')


def servers(broken: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {
        'notes server': {'command': sys.executable, 'args': [NOTES, '--no-test-tools']},
        'hostile': {'command': sys.executable, 'args': [HOSTILE]},
    }
    if broken:
        found['broken'] = {'command': sys.executable, 'args': [NOTES, '--fail-startup']}
    return found


def write(tmp_path: Path, broken: bool = False) -> Path:
    path = tmp_path / 'mcp.json'
    path.write_text(json.dumps({'mcpServers': servers(broken)}))
    return path


def test_inspect_and_search_an_mcp_servers_file(tmp_path: Path) -> None:
    path = write(tmp_path)
    proc = toolproxy('--mcp-config', str(path), 'inspect', '--json')
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [(g['name'], g['tools'], g['description'][:28]) for g in doc['groups']] == [
        ('notes_server', 6, 'Notes & weather demo server.'),  # the server's instructions, as a run shows them
        ('hostile', 6, 'Tools of the MCP server "hos'),  # its serverInfo name only repeats the file's
    ]
    found = toolproxy('--mcp-config', str(path), 'search', 'convert temperature', '--json')
    assert found.returncode == 0, found.stderr
    first = json.loads(found.stdout)['tools'][0]
    assert (first['group'], first['tool']) == ('notes_server', 'convert_temperature')


def test_inspect_shows_which_server_became_which_group(tmp_path: Path) -> None:
    from pydantic_ai_toolproxy.grouping.names import group_id

    long = 'awslabs.aws-documentation-mcp-server'
    path = tmp_path / 'mcp.json'
    found = servers()
    path.write_text(
        json.dumps({'mcpServers': {long: found['hostile'], 'a b': found['hostile'], 'a_b': found['hostile']}})
    )
    proc = toolproxy('--mcp-config', str(path), '--listing-cache', 'off', 'inspect', '--json')
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    pairs = [(g['server'], g['name']) for g in doc['groups']]
    assert pairs[0] == (long, group_id(long)) and pairs[2] == ('a_b', 'a_b')
    assert pairs[1][0] == 'a b' and pairs[1][1].startswith('a_b_') and len(pairs[1][1]) == 10
    text = toolproxy('--mcp-config', str(path), '--listing-cache', 'off', 'inspect')
    assert text.returncode == 0, text.stderr
    row = next(line for line in text.stdout.splitlines() if line.startswith(group_id(long)))
    assert long in row  # the MCP server column names the server as written in the file


def test_a_server_that_does_not_start_is_left_out_with_a_warning_and_check_fails(tmp_path: Path) -> None:
    path = write(tmp_path, broken=True)
    proc = toolproxy('--mcp-config', str(path), 'inspect', '--json')
    assert proc.returncode == 0, proc.stderr
    assert [g['name'] for g in json.loads(proc.stdout)['groups']] == ['notes_server', 'hostile']
    assert f"toolproxy: warning: MCP server 'broken' (--mcp-config '{path}' [broken]) did not start (" in proc.stderr
    check = toolproxy('--mcp-config', str(path), 'check', '--json')
    assert check.returncode == 1
    problems = json.loads(check.stdout)['problems']
    start = [p for p in problems if p['kind'] == 'server-start']
    assert len(start) == 1 and start[0]['group'] == 'broken' and start[0]['severity'] == 'error'
    assert "MCP server 'broken'" in start[0]['message']
    # The other servers are still checked: the hostile server's 1 MB description is found.
    assert any(p['kind'] == 'oversized' and p['group'] == 'hostile' for p in problems)


def test_file_errors_exit_2_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / 'mcp.json'
    path.write_text('{"mcpServers": {')
    proc = toolproxy('--mcp-config', str(path), 'inspect')
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"toolproxy: error: --mcp-config '{path}': ")
    missing = toolproxy('--mcp-config', str(tmp_path / 'nothing.json'), 'inspect')
    assert missing.returncode == 2 and 'nothing.json' in missing.stderr
    grouped = toolproxy('--mcp-config', str(write(tmp_path)), '--group', 'x', 'inspect')
    assert grouped.returncode == 2 and 'already names its groups' in grouped.stderr


def test_config_file_mcp_config_with_descriptions_relative_to_the_file(tmp_path: Path) -> None:
    write(tmp_path)
    config = tmp_path / 'toolproxy.toml'
    config.write_text(
        '[sources.desktop]\n'
        'mcp_config = "mcp.json"\n'
        'descriptions = { "notes server" = "Notes and weather" }\n'
        '[[tool_sources]]\n'
        'source_id = "desktop"\n'
        'presentation = "proxy"\n'
    )
    proc = toolproxy('--config', str(config), 'inspect', '--json', cwd=ROOT / 'docs')
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(proc.stdout)['groups']
    assert [(g['name'], g['description']) for g in groups] == [
        ('notes_server', 'Notes and weather'),
        ('hostile', 'Tools of the MCP server "hostile"'),
    ]
    config.write_text('[sources.x]\nmodule = "m:x"\ndescriptions = { a = "b" }\n')
    wrong = toolproxy('--config', str(config), 'inspect')
    assert wrong.returncode == 2 and 'descriptions apply to an mcp_config source only' in wrong.stderr
    config.write_text('[sources.desktop]\nmcp_config = "mcp.json"\ndescriptions = { nobody = "b" }\n')
    typo = toolproxy('--config', str(config), 'inspect')
    assert typo.returncode == 2 and "descriptions name 'nobody'" in typo.stderr


def test_a_server_silent_at_listing_is_left_out_within_seconds(tmp_path: Path) -> None:
    import time

    found = servers()
    found['silent'] = {'command': sys.executable, 'args': [HOSTILE, '--on-list', 'hang'], 'startup_timeout_sec': 5}
    path = tmp_path / 'mcp.json'
    path.write_text(json.dumps({'mcpServers': found}))
    started = time.monotonic()
    proc = toolproxy('--mcp-config', str(path), 'inspect', '--json')
    assert time.monotonic() - started < 60  # not Pydantic AI's 300 s read_timeout
    assert proc.returncode == 0, proc.stderr
    assert [g['name'] for g in json.loads(proc.stdout)['groups']] == ['notes_server', 'hostile']
    assert (
        "MCP server 'silent'" in proc.stderr
        and 'no answer to tools/list within the start timeout of 5 s' in proc.stderr
    )


def test_refresh_prints_one_line_per_server_and_fails_when_nothing_is_stored(tmp_path: Path) -> None:
    from pydantic_ai_toolproxy.cli._render import plural

    assert (plural(1, 'tool'), plural(2, 'tool')) == ('1 tool', '2 tools')
    path = write(tmp_path, broken=True)
    cache = tmp_path / 'listings.sqlite3'
    proc = toolproxy('--mcp-config', str(path), '--listing-cache', str(cache), 'refresh')
    assert proc.returncode == 1  # a server did not start
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, proc.stdout  # one per server, the failed one included
    assert lines[0].startswith("MCP server 'notes server'") and lines[0].endswith('6 tools, listed now, stored')
    assert lines[1].startswith("MCP server 'hostile'") and lines[1].endswith('6 tools, listed now, stored')
    assert lines[2].startswith("MCP server 'broken'") and 'did not start' in lines[2] and 'not stored' in lines[2]
    assert "MCP server 'broken'" in proc.stderr  # the warning with its stderr
    good = write(tmp_path)
    again = toolproxy('--mcp-config', str(good), '--listing-cache', str(cache), 'refresh', '--json')
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc['stored'] == 2 and doc['failed'] == [] and len(doc['servers']) == 2
    nowhere = toolproxy('--mcp-config', str(good), '--listing-cache', 'off', 'refresh')
    assert nowhere.returncode == 1  # nothing could be stored
    assert nowhere.stdout.count('not stored (no listing cache: --listing-cache off)') == 2
    assert 'no listing was stored' in nowhere.stderr


def test_help_and_version_import_neither_pydantic_ai_nor_the_core() -> None:
    import subprocess

    code = (
        'import sys\n'
        'from pydantic_ai_toolproxy.cli import main\n'
        'for argv in (["--help"], ["--version"]):\n'
        '    try:\n'
        '        main(argv)\n'
        '    except SystemExit as exit:\n'
        '        assert exit.code == 0, exit.code\n'
        'heavy = [m for m in ("pydantic_ai", "pydantic_ai_toolproxy._core", "rich") if m in sys.modules]\n'
        'print("loaded:", heavy)\n'
    )
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == 'loaded: []'
    assert 'toolproxy' in proc.stdout and 'usage:' in proc.stdout


def test_paths_in_a_config_file_may_start_with_the_home_folder(tmp_path: Path) -> None:
    home = tmp_path / 'home'
    home.mkdir()
    (home / 'mcp.json').write_text(json.dumps({'mcpServers': {'notes server': servers()['notes server']}}))
    (home / 'home_tools.py').write_text(
        'from pydantic_ai import FunctionToolset\n\n'
        'def home_ping() -> str:\n    """Answer pong."""\n    return "pong"\n\n'
        'toolset = FunctionToolset([home_ping])\n'
    )
    config = tmp_path / 'elsewhere' / 'toolproxy.toml'
    config.parent.mkdir()
    config.write_text(
        '[sources.desktop]\nmcp_config = "~/mcp.json"\n'
        '[sources.mine]\nmodule = "~/home_tools.py:toolset"\n'
        '[[tool_sources]]\nsource_id = "desktop"\npresentation = "proxy"\n'
        '[[tool_sources]]\nsource_id = "mine"\npresentation = "proxy"\ngroup = "mine"\n'
        'description = "Home tools"\n'
    )
    proc = toolproxy('--config', str(config), 'inspect', '--json', env={'HOME': str(home)})
    assert proc.returncode == 0, proc.stderr
    assert [g['name'] for g in json.loads(proc.stdout)['groups']] == ['notes_server', 'mine']
