"""The agent-query development set (bench/agent_queries/) loads and is well-formed.

Checks the shipped data only (no server is installed or started): the catalogue is valid JSON with one group per
server, group names and descriptions the proxy accepts, unique tool names per group; every query is 5-20 words,
none repeats, and every relevant tool exists in the catalogue.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from bench.lib.agent_corpus import (
    CATALOGUE,
    QUERIES,
    load_agent_queries,
    load_agent_tools,
    load_groups,
    parse_queries,
)
from pydantic_ai_toolproxy import _core


def test_catalogue_is_compact_json_of_real_servers() -> None:
    data = json.loads(CATALOGUE.read_text(encoding='utf-8'))
    groups = data['groups']
    assert len(groups) >= 30 and sum(len(g['tools']) for g in groups) >= 500
    assert [g['name'] for g in groups] == sorted(g['name'] for g in groups)
    assert CATALOGUE.stat().st_size < 1_500_000
    for group in groups:
        _core.validate_group_name(group['name'])
        _core.validate_group_description(group['name'], group['description'])
        assert group['package'] and group['version'] and group['description_source'], group['name']
        names = [tool['name'] for tool in group['tools']]
        assert names and len(names) == len(set(names)), group['name']
        for tool in group['tools']:
            assert _core.validate_tool_name(tool['name']), (group['name'], tool['name'])
            assert isinstance(tool['inputSchema'], dict), (group['name'], tool['name'])
    # No scratch directory of the extraction (`tempfile.mkdtemp` names under --work) leaked into the data.
    assert not re.search(r'/tmp/[\w.-]+/\w+-[a-z0-9_]{8}\b', CATALOGUE.read_text(encoding='utf-8'))


def test_queries_are_agent_sized_unique_and_point_at_catalogue_tools() -> None:
    known = {(tool.group, tool.name) for tool in load_agent_tools()}
    rows = parse_queries(QUERIES.read_text(encoding='utf-8'))
    assert len(rows) >= 300
    for number, category, query, pairs in rows:
        assert 5 <= len(query.split()) <= 20, f'line {number}: {len(query.split())} words: {query!r}'
        assert category, f'line {number}: no category heading before it'
        assert pairs, f'line {number}: no relevant tool'
        assert len(pairs) == len(set(pairs)), f'line {number}: a relevant tool listed twice'
        missing = [f'{g}/{t}' for g, t in pairs if (g, t) not in known]
        assert not missing, f'line {number}: not in the catalogue: {missing}'
    repeated = [q for q, n in Counter(' '.join(q.lower().split()) for _, _, q, _ in rows).items() if n > 1]
    assert not repeated, repeated
    questions = load_agent_queries()
    assert len(questions) == len(rows) and all(q.expected for q in questions)
    # Queries of every category, and relevant tools in most servers.
    assert len({q.category for q in questions}) >= 10
    used = {key.split('__', 1)[0] for q in questions for key in q.expected}
    assert len(used) >= 0.9 * len(load_groups())


def test_parse_queries_rejects_malformed_lines() -> None:
    with pytest.raises(ValueError, match='line 2'):
        parse_queries('## x\nno separator here at all\n')
    with pytest.raises(ValueError, match='not group/tool'):
        parse_queries('## x\nfive words in this query | justatool\n')
    assert parse_queries('# comment\n## cat\nsome query  with   spaces here | g/t h/u\n') == [
        (3, 'cat', 'some query with spaces here', [('g', 't'), ('h', 'u')])
    ]
