"""The steps of `bench.agent_queries.extract_catalogue` for one server: install it into a throwaway venv with
``uv`` (`install`), then start it over stdio and list its tools (`list_tools`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.agent_queries.servers import WORKSPACE, Server


def uv_command(work: Path) -> str:
    """The `uv` on PATH, else one pip-installed into `work/_uv` (made once)."""
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
