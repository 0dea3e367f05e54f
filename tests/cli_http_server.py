"""The example notes & weather MCP server (examples/mcp_server.py) over streamable HTTP, for `toolproxy --mcp-http`.

python tests/cli_http_server.py PORT      # serves http://127.0.0.1:PORT/mcp until terminated
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'examples'))

from mcp_server import build_server

if __name__ == '__main__':
    build_server(test_tools=False).run('streamable-http', host='127.0.0.1', port=int(sys.argv[1]))
