"""One-off: regenerate ``catalogue.json`` from real MCP server packages on PyPI (not run in CI or by the bench).

    python -m bench.agent_queries.extract_catalogue [--work /tmp/toolproxy-mcp-catalogue] [--only GROUP ...]

For every server of `SERVERS` this creates a throwaway venv under ``--work`` with ``uv`` (installed into
``--work`` with pip when it is not on PATH), installs the pinned package (plus the pins it needs to start:
most of these servers were written against ``mcp`` 1.x and fail to import under 2.x), starts it over stdio
with the ``mcp`` client of the interpreter running this script, and lists its tools (``tools/list``, all
pages). Nothing is called: no server needs a network, an account or a running service to list its tools;
the credentials in `Server.env` are dummies some servers insist on at start-up, and the addresses point at
a closed port on 127.0.0.1.

Each server becomes one group: ``name`` (our short name for the server), ``description`` (the package's
own PyPI summary where it describes the server, else the first line of its README, or our translation;
``description_source`` says which), ``package``/``version``, ``server_name`` (from ``initialize``) and
its ``tools`` exactly as listed (``name``, ``description``, ``inputSchema``). The file is written compact
(one group per line) and sorted by group name, tools in the server's own order.

Needs: CPython 3.11+ with ``mcp`` (``.venv-bench`` has it), network access to PyPI, about 3 GB in
``--work``, a few minutes. Servers that fail to start are reported and left out (the run exits 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / 'catalogue.json'
WORKSPACE = '/home/user/workspace'
"""Stands for the scratch directory wherever a server names it in a tool description or schema."""
NO_PORT = '127.0.0.1:9'  # discard port, nothing listens: servers that connect lazily never do here


@dataclass(frozen=True)
class Server:
    group: str
    """Group name (``^[A-Za-z][A-Za-z0-9_-]{0,31}$``, no ``__``), derived from the package name."""
    package: str
    version: str
    command: tuple[str, ...]
    """Console script in the venv's bin/ and its arguments; ``{root}`` is a scratch directory."""
    description: str
    description_source: str
    pins: tuple[str, ...] = ()
    """Further requirements the server needs to start (mostly ``mcp`` at the version it was written for)."""
    env: dict[str, str] = field(default_factory=dict)


PYPI = 'PyPI summary'
README = 'first line of the README (the PyPI summary is empty)'

SERVERS: tuple[Server, ...] = (
    # --- web search and fetch
    Server(
        'fetch',
        'mcp-server-fetch',
        '2026.10.24',
        ('mcp-server-fetch',),
        'A Model Context Protocol server providing tools to fetch and convert web content for usage by LLMs',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'duckduckgo',
        'duckduckgo-mcp-server',
        '0.7.0',
        ('duckduckgo-mcp-server',),
        'MCP Server for searching via DuckDuckGo',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'web_forager',
        'web-forager',
        '4.0.0',
        ('web-forager', 'serve'),
        'A search-and-fetch toolkit for AI agents — MCP server and standalone Agent Skills powered by DuckDuckGo, '
        'trafilatura, and Jina Reader',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'searxng',
        'mcp-searxng',
        '0.1.0',
        ('mcp-searxng',),
        'MCP server for connecting agentic systems to search systems via searXNG',
        PYPI,
        ('mcp==1.30.0',),
        {'SEARXNG_URL': f'http://{NO_PORT}'},
    ),
    # --- files
    Server(
        'better_filesystem',
        'better-mcps-filesystem',
        '0.3.0',
        ('better-mcps-filesystem', '{root}'),
        'A safe, root-scoped filesystem MCP server (FastMCP / MCP 2.0).',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'bridgemcp_filesystem',
        'bridgemcp-server-filesystem',
        '0.1.1',
        ('bridgemcp-filesystem', '--root', '{root}'),
        'Official BridgeMCP reference server — safe filesystem access',
        PYPI,
        ('mcp==1.30.0', 'bridgemcp-py[mcp]'),
    ),
    Server(
        'aiomcp_filesystem',
        'aiomcp-server-filesystem',
        '0.0.1',
        ('aiomcp-server-filesystem', '{root}'),
        'Filesystem MCP server powered by aiomcp',
        PYPI,
    ),
    Server(
        'text_editor',
        'mcp-text-editor',
        '1.2.2',
        ('mcp-text-editor',),
        'MCP Text Editor Server - Edit text files via MCP protocol',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'ai_vault',
        'ai-vault-mcp',
        '0.1.9',
        ('ai-vault-mcp',),
        'MCP server that gives AI clients direct access to your local filesystem — save, find, and organize files '
        'using natural language',
        PYPI,
        ('mcp==1.30.0',),
    ),
    # --- code, shell, notebooks
    Server(
        'git',
        'mcp-server-git',
        '2026.10.19',
        ('mcp-server-git', '--repository', '{root}'),
        'A Model Context Protocol server providing tools to read, search, and manipulate Git repositories '
        'programmatically via LLMs',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'cli',
        'cli-mcp-server',
        '0.2.5',
        ('cli-mcp-server',),
        'Command line interface for MCP clients with secure execution and customizable security policies',
        PYPI,
        ('mcp==1.30.0',),
        {'ALLOWED_DIR': '{root}'},
    ),
    Server(
        'shell',
        'mcp-shell-server',
        '1.1.14',
        ('mcp-shell-server',),
        'MCP Shell Server - Execute shell commands via MCP protocol',
        PYPI,
        ('mcp==1.30.0',),
        {'ALLOW_COMMANDS': 'ls,cat'},
    ),
    Server(
        'tree_sitter',
        'mcp-server-tree-sitter',
        '0.7.0',
        ('mcp-server-tree-sitter',),
        'MCP Server for Tree-sitter code analysis',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'jupyter',
        'mcp-server-jupyter',
        '0.1.9',
        ('mcp-server-jupyter',),
        'MCP server for Jupyter notebooks',
        PYPI,
        ('mcp==1.30.0',),
    ),
    # --- databases and search engines
    Server(
        'sqlite',
        'mcp-server-sqlite',
        '2025.4.25',
        ('mcp-server-sqlite', '--db-path', '{root}/test.db'),
        'A simple SQLite MCP server',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'duckdb',
        'mcp-server-duckdb',
        '1.1.0',
        ('mcp-server-duckdb', '--db-path', '{root}/test.duckdb'),
        'A DuckDB MCP server',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'motherduck',
        'mcp-server-motherduck',
        '1.1.0',
        ('mcp-server-motherduck', '--db-path', ':memory:', '--read-write'),
        'A MCP server for MotherDuck and local DuckDB',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'mysql',
        'mysql-mcp-server',
        '0.4.4',
        ('mysql_mcp_server',),
        'A Model Context Protocol (MCP) server that enables secure interaction with MySQL databases. This server '
        'allows AI assistants to list tables, read data, and execute SQL queries through a controlled interface, '
        'making database exploration and analysis safer and more structured.',
        PYPI,
        ('mcp==1.30.0',),
        {'MYSQL_HOST': '127.0.0.1', 'MYSQL_PORT': '9', 'MYSQL_USER': 'u', 'MYSQL_PASSWORD': 'p', 'MYSQL_DATABASE': 'd'},
    ),
    Server(
        'clickhouse',
        'mcp-clickhouse',
        '0.7.0',
        ('mcp-clickhouse',),
        'An MCP server for ClickHouse.',
        PYPI,
        ('mcp==2.3.0',),
        {'CLICKHOUSE_HOST': '127.0.0.1', 'CLICKHOUSE_PORT': '9', 'CLICKHOUSE_USER': 'u', 'CLICKHOUSE_PASSWORD': 'p'},
    ),
    Server(
        'redis',
        'redis-mcp-server',
        '0.5.1',
        ('redis-mcp-server',),
        'Redis MCP Server - Model Context Protocol server for Redis',
        PYPI,
        ('mcp==1.30.0',),
        {'REDIS_HOST': '127.0.0.1', 'REDIS_PORT': '9'},
    ),
    Server(
        'elasticsearch',
        'elasticsearch-mcp-server',
        '2.1.6',
        ('elasticsearch-mcp-server',),
        'MCP Server for interacting with Elasticsearch and OpenSearch',
        PYPI,
        ('mcp==1.30.0',),
        {'ELASTICSEARCH_HOSTS': f'http://{NO_PORT}'},
    ),
    Server(
        'chroma',
        'chroma-mcp',
        '0.2.6',
        ('chroma-mcp', '--client-type', 'ephemeral'),
        'Chroma MCP Server - Vector Database Integration for LLM Applications',
        PYPI,
        ('mcp==1.6.0', 'pydantic<2.12'),
    ),
    # --- office documents and conversion
    Server(
        'word',
        'office-word-mcp-server',
        '1.1.11',
        ('word_mcp_server',),
        'MCP server for manipulating Microsoft Word documents',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'excel',
        'excel-mcp-server',
        '2.2.2',
        ('excel-mcp-server', 'stdio'),
        'MCP server for creating, reading and editing Excel workbooks without Microsoft Excel',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'powerpoint',
        'office-powerpoint-mcp-server',
        '2.0.7',
        ('ppt_mcp_server',),
        'MCP Server for PowerPoint manipulation using python-pptx - Consolidated Edition',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'pdf_tools',
        'pdf-tools-mcp',
        '0.1.4',
        ('pdf-tools-mcp',),
        'A FastMCP-based PDF reading and manipulation tool server',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'markitdown',
        'markitdown-mcp',
        '0.0.1a8',
        ('markitdown-mcp',),
        'An MCP server for the "markitdown" library.',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'pandoc',
        'mcp-pandoc',
        '0.11.1',
        ('mcp-pandoc',),
        'MCP to interface with pandoc to convert files to different formats with enhanced features like Mermaid '
        'diagram conversion and defaults file support.',
        PYPI,
        ('mcp==2.3.0',),
    ),
    # --- research
    Server(
        'arxiv',
        'arxiv-mcp-server',
        '0.8.2',
        ('arxiv-mcp-server', '--storage-path', '{root}/papers'),
        'A flexible arXiv search and analysis service with MCP protocol support',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'paper_search',
        'paper-search-mcp',
        '0.1.4',
        ('paper-search-mcp',),
        'A MCP server for searching and downloading academic papers from multiple sources.',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'scholarly',
        'mcp-scholarly',
        '0.1.0',
        ('mcp-scholarly',),
        'A MCP server to search for accurate academic articles.',
        PYPI,
        ('mcp==1.30.0', 'bibtexparser<2'),
    ),
    Server(
        'wikipedia', 'wikipedia-mcp', '2.0.1', ('wikipedia-mcp',), 'MCP server for Wikipedia API', PYPI, ('mcp==2.3.0',)
    ),
    Server(
        'words',
        'casual-mcp-server-words',
        '1.0.1',
        ('casual-mcp-server-words',),
        'Dictionary and thesaurus utilities as an MCP server',
        PYPI,
        ('mcp==2.3.0',),
    ),
    # --- finance
    Server(
        'yahoo_finance',
        'mcp-yahoo-finance',
        '0.2.0',
        ('mcp-yahoo-finance',),
        'A Model Context Protocol (MCP) server providing tools to interact with Yahoo Finance for LLMs',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server('yfmcp', 'yfmcp', '0.14.0', ('yfmcp',), 'Yahoo Finance MCP Server', README, ('mcp==1.30.0',)),
    Server(
        'yfinance',
        'yfinance-mcp',
        '0.1.2',
        ('yfinance-mcp',),
        'MCP Server for Yahoo Finance API - AI-friendly financial data tools',
        PYPI,
        ('mcp==1.30.0',),
    ),
    # --- work tools and operations
    Server(
        'atlassian',
        'mcp-atlassian',
        '0.23.1',
        ('mcp-atlassian',),
        'The Model Context Protocol (MCP) Atlassian integration is an open-source implementation that bridges '
        "Atlassian products (Jira and Confluence) with AI language models following Anthropic's MCP specification.",
        PYPI,
        ('mcp==1.30.0',),
        {
            'JIRA_URL': 'https://example.atlassian.net',
            'JIRA_USERNAME': 'a@example.com',
            'JIRA_API_TOKEN': 'x',
            'CONFLUENCE_URL': 'https://example.atlassian.net/wiki',
            'CONFLUENCE_USERNAME': 'a@example.com',
            'CONFLUENCE_API_TOKEN': 'x',
        },
    ),
    Server(
        'pagerduty',
        'pagerduty-mcp',
        '1.1.0',
        ('pagerduty-mcp', '--enable-write-tools'),
        "PagerDuty's official local MCP (Model Context Protocol) server which provides tools to interact with your "
        'PagerDuty account directly from your MCP-enabled client.',
        PYPI,
        ('mcp==1.30.0',),
        {'PAGERDUTY_USER_API_KEY': 'x'},
    ),
    Server(
        'notion',
        'notion-mcp-server',
        '0.1.1',
        ('notion-mcp',),
        'Powerful MCP server for Notion - read, create, search, and manage pages and databases through Claude',
        PYPI,
        ('mcp==2.3.0',),
        {'NOTION_API_KEY': 'x', 'NOTION_TOKEN': 'x'},
    ),
    Server(
        'obsidian',
        'mcp-obsidian',
        '0.2.3',
        ('mcp-obsidian',),
        'MCP server to work with Obsidian via the remote REST plugin',
        PYPI,
        ('mcp==1.30.0',),
        {'OBSIDIAN_API_KEY': 'x', 'OBSIDIAN_HOST': '127.0.0.1', 'OBSIDIAN_PORT': '9'},
    ),
    Server(
        'basic_memory',
        'basic-memory',
        '0.24.1',
        ('basic-memory', 'mcp'),
        'Local-first knowledge management combining Zettelkasten with knowledge graphs',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'email',
        'mcp-email-server',
        '1.13.3',
        ('mcp-email-server', 'stdio'),
        'Full-featured, multi-account MCP email server for Windows, macOS, and Linux—read, search, organize, and send '
        'email via IMAP and SMTP.',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'calendar',
        'calendar-mcp-server',
        '1.1.1',
        ('calendar-mcp-server',),
        'A single-process MCP server that gives LLM clients read and write access to Google Calendar.',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'kubernetes',
        'mcp-server-kubernetes',
        '0.1.6',
        ('mcp-server-kubernetes',),
        'A Python MCP server for Kubernetes environments',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'aws_documentation',
        'awslabs-aws-documentation-mcp-server',
        '1.2.3',
        ('awslabs.aws-documentation-mcp-server',),
        'An AWS Labs Model Context Protocol (MCP) server for AWS Documentation',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'aws_pricing',
        'awslabs-aws-pricing-mcp-server',
        '1.1.1',
        ('awslabs.aws-pricing-mcp-server',),
        'An AWS Labs Model Context Protocol (MCP) server for official pricing of AWS services',
        PYPI,
        ('mcp==2.3.0',),
        {'AWS_REGION': 'us-east-1'},
    ),
    # --- browsers
    Server(
        'playwright',
        'mcp-playwright',
        '0.1.1',
        ('mcp-playwright',),
        'Playwright-based Model Context Protocol (MCP) server that gives AI assistants powerful browser automation',
        'PyPI summary, translated from Chinese by us',
        ('mcp==1.30.0',),
    ),
    Server(
        'browser',
        'browser-mcp-automation',
        '1.0.0',
        ('browsermcp',),
        'Browser automation MCP server with triple engine (static + selenium + playwright)',
        PYPI,
        ('mcp==1.30.0',),
    ),
    # --- media
    Server(
        'youtube_transcript',
        'youtube-transcript-mcp',
        '0.2.1',
        ('youtube-transcript-mcp',),
        'MCP server for fetching YouTube transcripts',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'youtube',
        'mcp-youtube',
        '0.2.0',
        ('mcp-youtube',),
        'MCP server wrapping yt-dlp for video/audio/subtitle download via FastMCP',
        PYPI,
        ('mcp==1.30.0',),
    ),
    # --- charts
    Server(
        'chart',
        'chuk-mcp-chart',
        '1.0.17',
        ('chuk-mcp-chart', 'stdio'),
        'MCP server for interactive data visualisation — bar, pie, line, doughnut, radar, polar, and area charts',
        PYPI,
    ),
    Server(
        'vegalite',
        'iflow-mcp-isaacwasserman-mcp-server-vegalite',
        '0.0.1',
        ('mcp_server_vegalite', '--output-type', 'png'),
        'A simple Data Visualization MCP server using Vega-Lite',
        PYPI,
        ('mcp==1.30.0',),
    ),
    # --- time, weather, places, math
    Server(
        'time',
        'mcp-server-time',
        '2026.10.19',
        ('mcp-server-time',),
        'A Model Context Protocol server providing tools for time queries and timezone conversions for LLMs',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'aiomcp_time',
        'aiomcp-server-time',
        '0.0.1',
        ('aiomcp-server-time',),
        'Time and timezone conversion MCP server powered by aiomcp',
        PYPI,
    ),
    Server(
        'weather',
        'mcp-weather-server',
        '0.6.1',
        ('mcp_weather_server',),
        'An MCP server for weather information',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'geocoder',
        'chuk-mcp-geocoder',
        '0.1.0',
        ('chuk-mcp-geocoder', 'stdio'),
        'Geocoding & Place Discovery MCP Server via Nominatim/OpenStreetMap',
        PYPI,
        ('mcp==2.3.0',),
    ),
    Server(
        'geocode',
        'geocode-mcp',
        '0.2.0',
        ('geocode-mcp',),
        'MCP server for producing latitude/longitude coordinates for cities and areas using OpenStreetMap Nominatim API',
        PYPI,
        ('mcp==1.30.0',),
    ),
    Server(
        'calculator',
        'mcp-server-calculator',
        '0.2.1',
        ('mcp-server-calculator',),
        'A Model Context Protocol server for calculating',
        PYPI,
        ('mcp==1.30.0',),
    ),
)


def _uv(work: Path) -> str:
    found = shutil.which('uv')
    if found:
        return found
    tools = work / '_uv'
    if not (tools / 'bin' / 'uv').exists():
        subprocess.run([sys.executable, '-m', 'venv', str(tools)], check=True)
        subprocess.run([str(tools / 'bin' / 'pip'), 'install', '--quiet', 'uv'], check=True)
    return str(tools / 'bin' / 'uv')


def install(server: Server, work: Path, uv: str) -> Path:
    """Create `work/<group>` and install the pinned server into it; return its bin/ directory."""
    venv = work / server.group
    if not (venv / 'bin' / 'python').exists():
        subprocess.run(
            [uv, 'venv', '--quiet', '--python', sys.executable, '--no-python-downloads', str(venv)], check=True
        )
    requirements = [f'{server.package}=={server.version}', *server.pins]
    subprocess.run(
        [uv, 'pip', 'install', '--quiet', '--python', str(venv / 'bin' / 'python'), *requirements], check=True
    )
    return venv / 'bin'


async def list_tools(server: Server, bin_dir: Path, scratch: Path) -> tuple[str, list[dict]]:
    """Start the server over stdio in `scratch` and return its server name and listed tools."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    root = scratch / 'root'
    root.mkdir(parents=True, exist_ok=True)
    (scratch / 'logs').mkdir(exist_ok=True)  # mcp_server_vegalite logs to ./logs
    subprocess.run(['git', 'init', '--quiet', str(root)], check=True)  # mcp-server-git wants a repository
    command = [arg.replace('{root}', str(root)) for arg in server.command]
    env = {**os.environ, 'HOME': str(scratch), **{k: v.replace('{root}', str(root)) for k, v in server.env.items()}}
    params = StdioServerParameters(command=str(bin_dir / command[0]), args=command[1:], env=env, cwd=str(scratch))
    with open(scratch / 'stderr.log', 'w') as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            info = getattr(init, 'server_info', None) or init.serverInfo
            tools, cursor = [], None
            while True:
                page = await session.list_tools(cursor) if cursor else await session.list_tools()
                tools += [tool.model_dump(mode='json', by_alias=True, exclude_none=True) for tool in page.tools]
                cursor = getattr(page, 'next_cursor', None) or getattr(page, 'nextCursor', None)
                if not cursor:
                    break
    listed = [
        {
            'name': t['name'],
            'description': (t.get('description') or '').strip(),
            'inputSchema': t.get('inputSchema') or t.get('input_schema') or {},
        }
        for t in tools
    ]
    # Scratch paths some servers print into their descriptions (cli-mcp-server names its allowed directory).
    text = json.dumps(listed).replace(str(root), WORKSPACE).replace(str(scratch), WORKSPACE)
    return info.name, json.loads(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--work', type=Path, default=Path(tempfile.gettempdir()) / 'toolproxy-mcp-catalogue')
    parser.add_argument('--only', nargs='*', help='groups to (re)extract; the others are kept from catalogue.json')
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    uv = _uv(args.work)
    kept = {}
    if args.only and OUT.exists():
        kept = {g['name']: g for g in json.loads(OUT.read_text(encoding='utf-8'))['groups']}
    groups, failed = dict(kept), []
    for server in SERVERS:
        if args.only and server.group not in args.only:
            continue
        try:
            bin_dir = install(server, args.work, uv)
            scratch = Path(tempfile.mkdtemp(prefix=f'{server.group}-', dir=args.work))
            name, tools = asyncio.run(asyncio.wait_for(list_tools(server, bin_dir, scratch), 120))
        except BaseException as e:
            while isinstance(e, BaseExceptionGroup):
                e = e.exceptions[0]
            failed.append(server.group)
            print(f'FAILED {server.group} ({server.package}): {type(e).__name__}: {e}', file=sys.stderr)
            continue
        groups[server.group] = {
            'name': server.group,
            'description': server.description,
            'description_source': server.description_source,
            'package': server.package,
            'version': server.version,
            'server_name': name,
            'tools': tools,
        }
        print(f'{server.group}: {len(tools)} tools ({server.package} {server.version})', file=sys.stderr)
    ordered = [groups[name] for name in sorted(groups)]
    lines = ',\n'.join(json.dumps(g, ensure_ascii=False, separators=(',', ':')) for g in ordered)
    header = json.dumps(
        {
            'about': 'Tool lists of real MCP servers from PyPI, one group per server; written by '
            'bench/agent_queries/extract_catalogue.py (see its docstring and README.md).'
        },
        separators=(',', ':'),
    )[:-1]
    OUT.write_text(f'{header},"groups":[\n{lines}\n]}}\n', encoding='utf-8')
    total = sum(len(g['tools']) for g in ordered)
    print(f'wrote {OUT.name}: {len(ordered)} groups, {total} tools, {OUT.stat().st_size:,} bytes', file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
