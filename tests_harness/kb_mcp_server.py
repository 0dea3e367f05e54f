"""A small knowledge-base MCP server over streamable HTTP on loopback that records the headers it receives.

Run by the tests as a subprocess::

    python tests_harness/kb_mcp_server.py --port PORT --log HEADERS.jsonl

Every HTTP request's `x-run-id`, `x-tenant-id` and `mcp-session-id` headers are appended to the log as one
JSON object per line. Tools: `search_docs(query)`, `read_doc(doc_id)` and `whoami(delay=0)`, which reports the
run and tenant headers of the request that called it (after sleeping `delay` seconds, so concurrent runs
overlap). The server binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

INSTRUCTIONS = 'Knowledge base of project documents. Read a document by the id that search_docs returns.'
DOCS = {
    'setup': 'Install with pip, then run scripts/bootstrap.',
    'release': 'Releases are cut from main every Monday.',
}
RECORDED = ('x-run-id', 'x-tenant-id', 'mcp-session-id')


def build_server() -> MCPServer:
    """The MCP server with its three tools."""
    server = MCPServer('knowledge', instructions=INSTRUCTIONS, log_level='WARNING')

    @server.tool()
    def search_docs(query: str) -> list[str]:
        """Search the project's documentation and return matching document ids."""
        words = query.lower().split()
        return [doc_id for doc_id, text in DOCS.items() if any(w in text.lower() or w in doc_id for w in words)]

    @server.tool()
    def read_doc(doc_id: str) -> str:
        """Read one documentation page by its document id."""
        return DOCS[doc_id]

    @server.tool()
    async def whoami(ctx: Context, delay: float = 0.0) -> dict[str, Any]:
        """Report the run and tenant headers this request carried."""
        await asyncio.sleep(delay)
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
        return {'run': headers.get('x-run-id'), 'tenant': headers.get('x-tenant-id')}

    return server


class HeaderLog:
    """ASGI middleware appending the recorded headers of every HTTP request to a JSON-lines file."""

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.path = path
        self.lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope['type'] == 'http':
            headers = {k.decode('latin-1').lower(): v.decode('latin-1') for k, v in scope['headers']}
            line = json.dumps({'method': scope['method'], **{k: headers.get(k) for k in RECORDED}})
            with self.lock, open(self.path, 'a', encoding='utf-8') as f:
                f.write(line + '\n')
        await self.app(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--log', required=True, help='JSON-lines file receiving the recorded headers')
    args = parser.parse_args()
    app = HeaderLog(build_server().streamable_http_app(), args.log)
    uvicorn.run(app, host='127.0.0.1', port=args.port, log_level='warning')


if __name__ == '__main__':
    main()
