"""The explain view: why a tool ranked where it did, through `ToolProxyCapability.explain` and
`toolproxy search --explain`, after a real search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset
from support import Script, page_of, returns

from pydantic_ai_toolproxy import SearchExplanation, ToolProxyCapability, ToolProxyGroup

ROOT = Path(__file__).resolve().parent.parent
SEARCH = 'search_proxy_tools'


def proxy() -> ToolProxyCapability[Any]:
    web, fs = FunctionToolset(), FunctionToolset()
    web.add_function(lambda url='': url, name='navigate', description='Go to a URL.')
    web.add_function(lambda selector='': selector, name='fill_form', description='Fill in the fields of a form.')
    fs.add_function(lambda path='': path, name='open_file', description='Open a file and return its text.')
    return ToolProxyCapability(
        groups={
            'browser': ToolProxyGroup(source=web, description='Browser automation: open web pages and fill in forms'),
            'files': ToolProxyGroup(source=fs, description='Local file system: read and write files'),
        }
    )


async def test_explain_names_words_fields_and_shares_in_ranked_order() -> None:
    capability = proxy()
    query = 'browser automation open a web page'
    result = await Agent(Script([[(SEARCH, {'query': query})]]).model, capabilities=[capability]).run('go')
    page = page_of(returns(result.all_messages())[0])
    ranked = [(e['group'], e['tool']) for e in page['tools']]
    assert ranked[0][0] == 'browser'  # the group's description decides between `open_file` and the browser tools
    why = capability.explain(query, ranked)
    assert [w.tool for w in why] == [t for _, t in ranked]
    assert all(isinstance(w, SearchExplanation) for w in why)
    assert [w.score for w in why] == sorted((w.score for w in why), reverse=True)
    for w in why:
        assert w.matches and abs(sum(m.share for m in w.matches) - 1) < 1e-3
    fields = {(m.token, m.field) for m in why[0].matches}
    assert ('browser', 'group description') in fields and ('automation', 'group description') in fields
    assert capability.explain(query, [('browser', 'no_such_tool')])[0].matches == ()


async def test_explain_follows_the_searched_group() -> None:
    """A search restricted to a group where the query's words find nothing lets its numbers find; `explain` with
    the same `group` scores the found tool as that search did, and without it as an unrestricted search would."""
    arcade, board = FunctionToolset(), FunctionToolset()
    arcade.add_function(lambda: '', name='tiles', description='Slide tiles up to 2048.')
    board.add_function(lambda: '', name='chess', description='Play chess.')
    capability = ToolProxyCapability(
        groups={
            'arcade': ToolProxyGroup(source=arcade, description='Arcade games'),
            'board': ToolProxyGroup(source=board, description='Board games'),
        }
    )
    query = {'query': 'chess 2048', 'group': 'arcade'}
    result = await Agent(Script([[(SEARCH, query)]]).model, capabilities=[capability]).run('go')
    page = page_of(returns(result.all_messages())[0])
    assert [(e['group'], e['tool']) for e in page['tools']] == [('arcade', 'tiles')]
    [within] = capability.explain('chess 2048', [('arcade', 'tiles')], group='arcade')
    assert within.score > 0 and [m.token for m in within.matches] == ['2048']
    [everywhere] = capability.explain('chess 2048', [('arcade', 'tiles')])
    assert everywhere.score == 0 and everywhere.matches == ()


def test_cli_search_explain() -> None:
    env = {**os.environ, 'PYTHONPATH': str(ROOT / 'tests')}
    base = [
        sys.executable,
        '-m',
        'pydantic_ai_toolproxy',
        '-s',
        'test_explain:proxy',
        'search',
        'fill a form',
        '--limit',
        '2',
    ]
    text = subprocess.run([*base, '--explain'], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert text.returncode == 0, text.stderr
    assert '1. browser/fill_form: score' in text.stdout and 'form in tool name' in text.stdout
    data = subprocess.run(
        [*base, '--explain', '--json'], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    doc = json.loads(data.stdout)
    assert doc['page']['tools'][0]['tool'] == 'fill_form'
    assert doc['explain'][0]['tool'] == 'fill_form' and doc['explain'][0]['matches']


@pytest.mark.parametrize('argument', [['search', '\udcff'], ['search', 'x', '--group', '\udcff']])
def test_cli_refuses_a_query_that_is_not_utf8(argument: list[str]) -> None:
    from pydantic_ai_toolproxy.cli import main

    assert main(['-s', 'test_explain:proxy', *argument]) == 2
