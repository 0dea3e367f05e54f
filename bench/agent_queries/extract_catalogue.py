"""One-off: regenerate ``catalogue.json`` from real MCP server packages on PyPI (not run in CI or by the bench).

    python -m bench.agent_queries.extract_catalogue [--work /tmp/toolproxy-mcp-catalogue] [--only GROUP ...]

For every server of `servers.SERVERS` this creates a throwaway venv under ``--work`` with ``uv`` (installed into
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
import sys
import tempfile
from pathlib import Path

from bench.agent_queries.listing import install, list_tools, uv_command
from bench.agent_queries.servers import SERVERS

HERE = Path(__file__).resolve().parent
OUT = HERE / 'catalogue.json'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--work', type=Path, default=Path(tempfile.gettempdir()) / 'toolproxy-mcp-catalogue')
    parser.add_argument('--only', nargs='*', help='groups to (re)extract; the others are kept from catalogue.json')
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    uv = uv_command(args.work)
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
