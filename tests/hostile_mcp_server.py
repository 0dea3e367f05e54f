"""A hand-written stdio MCP server that lists hostile tool definitions as raw JSON text.

No SDK on the server side: responses are written as literal JSON-RPC lines, so they can hold what no
well-behaved SDK would emit: duplicate object keys, `NaN`/`Infinity` literals, a 1 MB description, a
`$ref` cycle, a non-object `inputSchema`, and (with `--deep N`) N-deep nesting. Run it as

    python tests/hostile_mcp_server.py [--deep N] [--bad-name] [--empty-name] [--on-list exit|hang]
        [--lists-before-fail N] [--list-changed-on-call] [--on-initialize hang|crash] [--pid-file F]

Every `tools/call` answers `{"content": [{"type": "text", "text": "ran <name>"}]}`. With `--on-list`, the server
answers `initialize` and then exits, or never answers, at a `tools/list` request (after `--lists-before-fail`
listings it answered, 0 by default); `--on-initialize hang` never answers `initialize` (a deadlocked server),
`--on-initialize crash` writes a traceback-like block to stderr and exits 1 before answering; `--empty-name` adds a
tool named `""` (the MCP SDK accepts it); `--pid-file F` appends the server's pid to F at start (tests count the
starts and check that no server outlives its run); `--start-delay S` sleeps S seconds before it reads anything
(a slow `npx`/`uvx` start); `--extra-tools N` adds N plain tools `tool_0`... (the benchmark's servers);
`--version V` lists `plain_tool` under the name `plain_tool_vV` and with a required `text` from version 2 on (an
upgraded server); `--version-file F` reads that version from F at start (`crash` there acts as
`--on-initialize crash`): the server changes behind an unchanged command line; `--list-changed-on-call` sends `notifications/tools/list_changed` before
answering each `tools/call` (so the client lists the tools again); `--methods-file F` appends `<pid> <method>` to F
for each request it reads (tests count the `tools/list` requests of a start).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def tools_list_json(deep: int, bad_name: bool, empty_name: bool = False, extra: int = 0, version: int = 1) -> str:
    """The `tools/list` result as raw JSON text (not produced by `json.dumps`, so it can be malformed on purpose)."""
    tools = [
        # Duplicate keys: JSON parsers keep the last one ("b" wins for "name" inside properties, "integer" for type).
        '{"name": "dup_keys", "description": "Duplicate keys in the schema", "description": "Duplicate keys, second",'
        ' "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}, "a": {"type": "integer"}}}}',
        # NaN and Infinity literals (not standard JSON, accepted by many parsers).
        '{"name": "nan_default", "description": "NaN and Infinity defaults",'
        ' "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "default": NaN},'
        ' "y": {"type": "number", "default": Infinity}, "z": {"type": "number", "default": -Infinity}}}}',
        # A $ref cycle.
        '{"name": "ref_cycle", "description": "A recursive schema through $ref",'
        ' "inputSchema": {"type": "object", "$defs": {"Node": {"type": "object", "properties":'
        ' {"child": {"$ref": "#/$defs/Node"}}}}, "properties": {"root": {"$ref": "#/$defs/Node"}}}}',
        # A 1 MB description.
        '{"name": "huge_description", "description": ' + json.dumps('lorem ipsum ' * 87_382) + ','
        ' "inputSchema": {"type": "object", "properties": {}}}',
        # An object schema whose parts are of the wrong JSON types (the MCP SDK itself accepts this much).
        '{"name": "odd_schema", "description": "Properties of odd kinds",'
        ' "inputSchema": {"type": "object", "properties": {"q": true, "r": {"enum": [1, "a", null, [], {}]}},'
        ' "additionalProperties": {"type": ["string", "null"]}}}',
        '{"name": "plain_tool", "description": "A well-formed tool that always works",'
        ' "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}',
    ]
    if version == 2:  # the same tool with a new required argument
        tools[-1] = tools[-1].replace('}}}}', '}}, "required": ["text"]}}')
    elif version > 2:  # the tool renamed
        tools[-1] = tools[-1].replace('"plain_tool"', f'"plain_tool_v{version}"')
    for i in range(extra):
        tools.append(
            f'{{"name": "tool_{i}", "description": "Generated tool number {i} of this server",'
            ' "inputSchema": {"type": "object", "properties": {"value": {"type": "integer"}}}}'
        )
    if deep:
        schema = '{"type": "string"}'
        for _ in range(deep):
            schema = '{"type": "object", "properties": {"p": ' + schema + '}}'
        tools.append('{"name": "deep_schema", "description": "Deeply nested", "inputSchema": ' + schema + '}')
    if bad_name:  # rejected by the MCP SDK's own validation of the listing
        tools.append('{"name": 12345, "description": "A number as a name", "inputSchema": {"type": "object"}}')
    if empty_name:  # accepted by the MCP SDK, refused as a proxy member
        tools.append('{"name": "", "description": "A tool without a name", "inputSchema": {"type": "object"}}')
    return '{"tools": [' + ', '.join(tools) + ']}'


def main() -> None:
    """Serve JSON-RPC over stdin/stdout, one message per line, until stdin closes."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--deep', type=int, default=0)
    parser.add_argument('--bad-name', action='store_true')
    parser.add_argument('--on-list', choices=('exit', 'hang'))
    parser.add_argument('--lists-before-fail', type=int, default=0)
    parser.add_argument('--list-changed-on-call', action='store_true')
    parser.add_argument('--empty-name', action='store_true')
    parser.add_argument('--on-initialize', choices=('hang', 'crash'))
    parser.add_argument('--pid-file')
    parser.add_argument('--start-delay', type=float, default=0.0)
    parser.add_argument('--extra-tools', type=int, default=0)
    parser.add_argument('--version', type=int, default=1)
    parser.add_argument('--version-file')
    parser.add_argument('--methods-file')
    args = parser.parse_args()
    if args.version_file:
        with open(args.version_file) as f:
            said = f.read().strip()
        if said == 'crash':
            args.on_initialize = 'crash'
        else:
            args.version = int(said)
    if args.pid_file:  # first: a server stopped during its start delay is counted too
        with open(args.pid_file, 'a') as f:
            f.write(f'{os.getpid()} {time.time():.3f}\n')
    if args.start_delay:
        time.sleep(args.start_delay)
    listed = 0
    listing = tools_list_json(args.deep, args.bad_name, args.empty_name, args.extra_tools, args.version)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get('method')
        if 'id' not in message:
            continue  # a notification (e.g. notifications/initialized)
        if args.methods_file:
            with open(args.methods_file, 'a') as f:
                f.write(f'{os.getpid()} {method}\n')
        request_id = json.dumps(message['id'])
        if method == 'initialize' and args.on_initialize == 'hang':
            time.sleep(3600)
        if method == 'initialize' and args.on_initialize == 'crash':
            sys.stderr.write('starting the hostile server\n' + 'Traceback (most recent call last):\n' * 3)
            sys.stderr.write('ssl.SSLCertVerificationError: certificate verify failed (hostile test)\n')
            sys.stderr.flush()
            sys.exit(1)
        if method == 'initialize':
            version = json.dumps(message.get('params', {}).get('protocolVersion', '2025-06-18'))
            result = (
                '{"protocolVersion": ' + version + ', "capabilities": {"tools": {}},'
                ' "serverInfo": {"name": "hostile", "version": "0.0.1"}}'
            )
        elif method == 'tools/list':
            if args.on_list is not None and listed >= args.lists_before_fail:
                if args.on_list == 'exit':
                    os._exit(3)
                time.sleep(3600)
            listed += 1
            result = listing
        elif method == 'tools/call':
            name = message.get('params', {}).get('name')
            if args.list_changed_on_call:
                out.write('{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}\n')
            result = json.dumps({'content': [{'type': 'text', 'text': f'ran {name}'}], 'isError': False})
        elif method == 'ping':
            result = '{}'
        else:
            out.write(
                '{"jsonrpc": "2.0", "id": ' + request_id + ', "error": {"code": -32601, "message": "no such method"}}\n'
            )
            out.flush()
            continue
        out.write('{"jsonrpc": "2.0", "id": ' + request_id + ', "result": ' + result + '}\n')
        out.flush()


if __name__ == '__main__':
    main()
