"""A scripted OpenAI- and Anthropic-compatible model server on loopback, for `bench/lib/real_client.py`.

Run in its own process (`LoopbackServer` below starts it): it binds 127.0.0.1 on a free port, prints
`PORT <n>` on stdout, and answers

- `POST /v1/chat/completions` (OpenAI Chat Completions) and
- `POST /v1/messages` (Anthropic Messages),

as one JSON reply, or as server-sent events when the request asks to stream,

from a script carried in the conversation itself: the first user message is `SCRIPT:` followed by a JSON list
of `{"tool": name, "args": {...}}` calls. The answer to a request whose history holds k assistant messages is
call k of the script (one tool call), or the text `done` once the script is used up. Only the `messages`
member of a request body is parsed (the tool definitions after it are read and counted, not decoded), so the
server's own work stays small beside the client's.

`GET /stats` returns the body size and the server's own time (from reading the body to the reply written) of each
request since the last `POST /reset` (`{"requests": [{"path", "bytes", "server_ms"}...]}`). The server stops by itself: after `--max-requests` requests, after `--max-seconds`, after
`--idle-seconds` without a request, or when its stdin closes (the parent went away). No network beyond loopback.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = '127.0.0.1'
SCRIPT_PREFIX = 'SCRIPT:'


def script_prompt(calls: list[dict[str, Any]]) -> str:
    """The user prompt that makes the server answer with `calls`, one per request, then `done`."""
    return SCRIPT_PREFIX + json.dumps(calls, separators=(',', ':'))


def _messages(body: bytes) -> list[dict[str, Any]]:
    """The request's `messages` array, decoded without decoding the rest of the body where possible.

    Both SDKs send `messages` before `tools`; the decode grows a prefix of the body until the array parses,
    and falls back to the whole body.
    """
    at = body.find(b'"messages"')
    if 0 <= at < 4096:
        colon = body.index(b':', at) + 1
        size = 1 << 16
        decoder = json.JSONDecoder()
        while True:
            chunk = body[colon : colon + size].decode('utf-8', errors='ignore')
            try:
                value, _ = decoder.raw_decode(chunk.lstrip())
                if isinstance(value, list):
                    return value
                break
            except json.JSONDecodeError:
                if colon + size >= len(body):
                    break
                size *= 4
    return json.loads(body)['messages']


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return ''.join(part.get('text', '') for part in content if isinstance(part, dict))
    return ''


def next_call(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The scripted call for this point of the conversation (None: answer with text)."""
    script: list[dict[str, Any]] = []
    for message in messages:
        if message.get('role') == 'user':
            text = _text(message.get('content'))
            if text.startswith(SCRIPT_PREFIX):
                script = json.loads(text[len(SCRIPT_PREFIX) :])
                break
    done = sum(1 for message in messages if message.get('role') == 'assistant')
    return script[done] if done < len(script) else None


def openai_reply(call: dict[str, Any] | None, n: int) -> dict[str, Any]:
    if call is None:
        message: dict[str, Any] = {'role': 'assistant', 'content': 'done'}
        finish = 'stop'
    else:
        message = {
            'role': 'assistant',
            'content': None,
            'tool_calls': [
                {
                    'id': f'call_{n}',
                    'type': 'function',
                    'function': {'name': call['tool'], 'arguments': json.dumps(call.get('args', {}))},
                }
            ],
        }
        finish = 'tool_calls'
    return {
        'id': f'chatcmpl-{n}',
        'object': 'chat.completion',
        'created': int(time.time()),
        'model': 'loopback',
        'choices': [{'index': 0, 'message': message, 'finish_reason': finish, 'logprobs': None}],
        'usage': {'prompt_tokens': 1, 'completion_tokens': 1, 'total_tokens': 2},
    }


def anthropic_reply(call: dict[str, Any] | None, n: int) -> dict[str, Any]:
    if call is None:
        content: list[dict[str, Any]] = [{'type': 'text', 'text': 'done'}]
        stop = 'end_turn'
    else:
        content = [{'type': 'tool_use', 'id': f'toolu_{n}', 'name': call['tool'], 'input': call.get('args', {})}]
        stop = 'tool_use'
    return {
        'id': f'msg_{n}',
        'type': 'message',
        'role': 'assistant',
        'model': 'loopback',
        'content': content,
        'stop_reason': stop,
        'stop_sequence': None,
        'usage': {'input_tokens': 1, 'output_tokens': 1},
    }


def _events(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f'event: {name}\n' if name else '') + f'data: {payload}\n\n')
    return ''.join(out).encode()


def openai_stream(reply: dict[str, Any]) -> bytes:
    """The same reply as Chat Completions server-sent events (one delta chunk, a finish chunk, `[DONE]`)."""
    choice = reply['choices'][0]
    head = {k: v for k, v in reply.items() if k not in ('choices', 'usage')} | {'object': 'chat.completion.chunk'}
    delta = dict(choice['message'])
    if 'tool_calls' in delta:
        delta['tool_calls'] = [{'index': i, **call} for i, call in enumerate(delta['tool_calls'])]
    return _events(
        [
            (None, head | {'choices': [{'index': 0, 'delta': delta, 'finish_reason': None}]}),
            (
                None,
                head
                | {
                    'choices': [{'index': 0, 'delta': {}, 'finish_reason': choice['finish_reason']}],
                    'usage': reply['usage'],
                },
            ),
            (None, '[DONE]'),
        ]
    )


def anthropic_stream(reply: dict[str, Any]) -> bytes:
    """The same reply as Anthropic Messages server-sent events."""
    start = reply | {'content': [], 'stop_reason': None}
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ('message_start', {'type': 'message_start', 'message': start})
    ]
    for i, block in enumerate(reply['content']):
        if block['type'] == 'tool_use':
            opening = block | {'input': {}}
            delta = {'type': 'input_json_delta', 'partial_json': json.dumps(block['input'])}
        else:
            opening = {'type': 'text', 'text': ''}
            delta = {'type': 'text_delta', 'text': block['text']}
        events += [
            ('content_block_start', {'type': 'content_block_start', 'index': i, 'content_block': opening}),
            ('content_block_delta', {'type': 'content_block_delta', 'index': i, 'delta': delta}),
            ('content_block_stop', {'type': 'content_block_stop', 'index': i}),
        ]
    events += [
        (
            'message_delta',
            {
                'type': 'message_delta',
                'delta': {'stop_reason': reply['stop_reason'], 'stop_sequence': None},
                'usage': {'output_tokens': 1},
            },
        ),
        ('message_stop', {'type': 'message_stop'}),
    ]
    return _events(events)


def _streams(body: bytes) -> bool:
    return b'"stream":true' in body or b'"stream": true' in body


class _State:
    def __init__(self, max_requests: int) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.max_requests = max_requests
        self.last = time.monotonic()
        self.log: list[dict[str, Any]] = []


def serve(max_requests: int, max_seconds: float, idle_seconds: float) -> None:
    state = _State(max_requests)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'  # keep-alive, as a real provider

        def setup(self) -> None:
            super().setup()
            # No Nagle delay: a reply must not wait for the client's delayed ACK (~40 ms a request on loopback).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, payload: Any, stream: bytes | None = None) -> None:
            data = json.dumps(payload).encode() if stream is None else stream
            self.send_response(status)
            self.send_header('Content-Type', 'application/json' if stream is None else 'text/event-stream')
            self.send_header('Content-Length', str(len(data)))
            self._headers_buffer.append(b'\r\n' + data)  # headers and body in one write
            self.flush_headers()

        def do_GET(self) -> None:
            if self.path == '/stats':
                with state.lock:
                    self._send(200, {'requests': list(state.log), 'total': state.count})
            else:
                self._send(404, {'error': 'not found'})

        def do_POST(self) -> None:
            began = time.perf_counter()
            body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
            path = self.path.split('?', 1)[0]
            if path == '/reset':
                with state.lock:
                    state.log.clear()
                self._send(200, {})
                return
            with state.lock:
                state.count += 1
                state.last = time.monotonic()
                n = state.count
                entry = {'path': path, 'bytes': len(body), 'server_ms': 0.0}
                state.log.append(entry)
            try:
                call = next_call(_messages(body))
            except (ValueError, KeyError, TypeError) as error:
                self._send(400, {'error': {'message': f'loopback server: {error}', 'type': 'invalid_request_error'}})
                return
            stream = _streams(body)
            if path.endswith('/chat/completions'):
                reply = openai_reply(call, n)
                self._send(200, reply, openai_stream(reply) if stream else None)
            elif path.endswith('/messages'):
                reply = anthropic_reply(call, n)
                self._send(200, reply, anthropic_stream(reply) if stream else None)
            else:
                self._send(404, {'error': {'message': f'no route {path}', 'type': 'not_found'}})
            entry['server_ms'] = (time.perf_counter() - began) * 1000
            if n >= state.max_requests:
                threading.Thread(target=server.shutdown, daemon=True).start()

    server = ThreadingHTTPServer((HOST, 0), Handler)
    server.daemon_threads = True
    started = time.monotonic()

    def watchdog() -> None:
        while True:
            time.sleep(0.2)
            now = time.monotonic()
            if now - started > max_seconds or now - state.last > idle_seconds:
                server.shutdown()
                return

    def stdin_closed() -> None:
        sys.stdin.read()  # returns at EOF: the parent closed the pipe or exited
        server.shutdown()

    threading.Thread(target=watchdog, daemon=True).start()
    threading.Thread(target=stdin_closed, daemon=True).start()
    print(f'PORT {server.server_address[1]}', flush=True)
    server.serve_forever(poll_interval=0.1)
    server.server_close()


class LoopbackServer:
    """Starts `loopback_llm.py` in another process and talks to it (context manager)."""

    def __init__(self, max_requests: int = 5_000, max_seconds: float = 900, idle_seconds: float = 300) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                '--max-requests',
                str(max_requests),
                '--max-seconds',
                str(max_seconds),
                '--idle-seconds',
                str(idle_seconds),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith('PORT '):
            self.close()
            raise RuntimeError(f'loopback server did not start: {line!r}')
        self.port = int(line.split()[1])
        self.url = f'http://{HOST}:{self.port}'

    def stats(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f'{self.url}/stats', timeout=30) as response:
            return json.load(response)['requests']

    def reset(self) -> None:
        request = urllib.request.Request(f'{self.url}/reset', data=b'{}', method='POST')
        with urllib.request.urlopen(request, timeout=30):
            pass

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # the server stops at stdin EOF (it may have stopped by itself already)
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--max-requests', type=int, default=5_000)
    parser.add_argument('--max-seconds', type=float, default=900)
    parser.add_argument('--idle-seconds', type=float, default=300)
    args = parser.parse_args()
    serve(args.max_requests, args.max_seconds, args.idle_seconds)
