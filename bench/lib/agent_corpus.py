"""The agent-query development set: real MCP servers' tools and queries written the way agents search.

* **Tools**: ``bench/agent_queries/catalogue.json``, the tool lists of real MCP server packages from PyPI, one
  group per server, each group with the package's own summary as its description (extracted once by
  ``bench/agent_queries/extract_catalogue.py``; this module never installs or starts a server).
* **Queries**: ``bench/agent_queries/queries.txt``, one per line, ``query | group/tool group/tool ...``: the
  query as an agent would type it into ``search_proxy_tools`` (a kind of server plus an action, 5-20 words)
  and the tools that do what it asks, in any server that fits its description. ``#`` starts a comment line;
  the last ``## heading`` before a query is its category.

See ``bench/agent_queries/README.md`` for how both were made and what they are biased towards.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.lib.corpus import Question, Tool
from pydantic_ai_toolproxy.grouping.names import canonical_name

__all__ = ['CATALOGUE', 'QUERIES', 'Group', 'load_agent_queries', 'load_agent_tools', 'load_groups', 'parse_queries']

DATA = Path(__file__).resolve().parents[1] / 'agent_queries'
CATALOGUE = DATA / 'catalogue.json'
QUERIES = DATA / 'queries.txt'


@dataclass(frozen=True)
class Group:
    """One MCP server as a group."""

    name: str
    description: str
    description_source: str
    package: str
    version: str
    tools: tuple[Tool, ...]


@functools.cache
def _groups() -> tuple[Group, ...]:
    data = json.loads(CATALOGUE.read_text(encoding='utf-8'))
    groups = []
    for g in data['groups']:
        tools = tuple(
            Tool(
                name=t['name'],
                original_name=t['name'],
                group=g['name'],
                description=t['description'] or t['name'],
                parameters=t['inputSchema'] or {'type': 'object', 'properties': {}},
            )
            for t in g['tools']
        )
        groups.append(Group(g['name'], g['description'], g['description_source'], g['package'], g['version'], tools))
    return tuple(groups)


def load_groups() -> list[Group]:
    """The servers of the catalogue, sorted by group name."""
    return list(_groups())


def load_agent_tools() -> list[Tool]:
    """Every tool of the catalogue, by group, in each server's own order."""
    return [tool for group in _groups() for tool in group.tools]


def parse_queries(text: str) -> list[tuple[int, str, str, list[tuple[str, str]]]]:
    """Parse the queries file: `(line number, category, query, [(group, tool), ...])` per query line.

    Raises ``ValueError`` naming the line for a line without ``|`` or a relevant tool not written ``group/tool``.
    """
    rows = []
    category = ''
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith('##'):
            category = line.lstrip('#').strip()
            continue
        if not line or line.startswith('#'):
            continue
        if '|' not in line:
            raise ValueError(f'queries.txt line {number}: no "|" between the query and its tools: {line!r}')
        query, _, tools = line.partition('|')
        pairs = []
        for item in tools.split():
            group, slash, tool = item.partition('/')
            if not slash or not group or not tool:
                raise ValueError(f'queries.txt line {number}: {item!r} is not group/tool')
            pairs.append((group, tool))
        rows.append((number, category, re.sub(r'\s+', ' ', query).strip(), pairs))
    return rows


def load_agent_queries() -> list[Question]:
    """The queries in file order; `expected` holds canonical names ``group__tool``.

    Raises ``KeyError`` naming the line when a relevant tool is not in the catalogue.
    """
    known = {(t.group, t.name) for t in load_agent_tools()}
    questions = []
    for number, category, query, pairs in parse_queries(QUERIES.read_text(encoding='utf-8')):
        missing = [f'{g}/{t}' for g, t in pairs if (g, t) not in known]
        if missing:
            raise KeyError(f'queries.txt line {number}: not in the catalogue: {", ".join(missing)}')
        questions.append(Question(f'line {number}', category, query, frozenset(canonical_name(g, t) for g, t in pairs)))
    return questions


def group_descriptions() -> dict[str, str]:
    """Group name -> description."""
    return {g.name: g.description for g in _groups()}


def _summary() -> dict[str, Any]:
    groups, queries = load_groups(), load_agent_queries()
    return {
        'groups': len(groups),
        'tools': sum(len(g.tools) for g in groups),
        'queries': len(queries),
        'bytes': CATALOGUE.stat().st_size,
    }


if __name__ == '__main__':
    print(_summary())
