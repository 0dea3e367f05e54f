"""A stdio MCP server on the official `mcp` SDK (`MCPServer`, formerly FastMCP; the server part of the `fastmcp`
package is not installed with Pydantic AI's `mcp` extra), with what real servers do that clients must live with.

    python tests/banner_mcp_server.py [--name NAME] [--instructions TEXT | --instructions-file F] [--banner N]
        [--noise-on-call]

- `--banner N`: print N non-JSON lines on stdout before serving (a "Starting server..." banner, as many servers
  print by mistake; the MCP client cannot parse them);
- `--noise-on-call`: print one more non-JSON line on stdout at each tool call;
- `--name`, `--instructions`: the server's `serverInfo.name` and its `instructions` (markdown welcome);
  `--instructions-file F` reads them from F at start (a server that changes behind an unchanged command line).

Tools: `echo(text)` (returns the text) and `add(a, b)`.
"""

from __future__ import annotations

import argparse
import sys

from mcp.server.mcpserver import MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--name', default='banner-mcp-server')
    parser.add_argument('--instructions')
    parser.add_argument('--instructions-file')
    parser.add_argument('--banner', type=int, default=0)
    parser.add_argument('--noise-on-call', action='store_true')
    args = parser.parse_args()
    if args.instructions_file:
        with open(args.instructions_file, encoding='utf-8') as f:
            args.instructions = f.read()
    server = MCPServer(name=args.name, instructions=args.instructions, log_level='WARNING')

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        if args.noise_on_call:
            print(f'echo called with {len(text)} characters', flush=True)
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    for number in range(args.banner):
        print(f'Starting the banner server (line {number + 1})... all systems go', flush=True)
    sys.stdout.flush()
    server.run('stdio')


if __name__ == '__main__':
    main()
