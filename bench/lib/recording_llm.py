"""An OpenAI-compatible (Chat Completions) server on loopback that records every request, for prompt-cache checks.

It runs in a thread of the calling process (`with RecordingServer() as server:`), binds 127.0.0.1 on a free port,
and answers `POST /v1/chat/completions` with the next turn of `server.script`: the answer to a request whose
messages hold k assistant messages is `script[k]` (a `(tool name, arguments)` call, or a text), or the text
`done` once the script is used up, in the reply format of `bench/lib/loopback_llm.py`. Each request is kept in
`server.requests` as its decoded JSON body (`tools`, `messages`, ...), in order; `clear()` forgets them.

What a provider's prefix cache keys on is read from those bodies by `tools_of`, `instructions_of` and
`conversation_of`. Used by `bench/cache_stability.py` and `tests/test_prompt_cache.py`. No network beyond loopback.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.lib.loopback_llm import HOST, openai_reply

__all__ = ('RecordingServer', 'Turn', 'conversation_of', 'instructions_of', 'tools_of')

Turn = tuple[str, dict[str, Any]] | str
"""One scripted answer: a tool call `(name, arguments)` or a final text."""

INSTRUCTION_ROLES = ('system', 'developer')


def tools_of(body: dict[str, Any]) -> str:
    """The request's `tools` array as compact JSON (key order kept: equal strings are byte-identical arrays)."""
    return json.dumps(body.get('tools'), separators=(',', ':'), ensure_ascii=False)


def instructions_of(body: dict[str, Any]) -> str:
    """The leading system/developer messages (where `OpenAIChatModel` puts the instructions) as compact JSON."""
    messages = body.get('messages') or []
    lead = []
    for message in messages:
        if message.get('role') not in INSTRUCTION_ROLES:
            break
        lead.append(message)
    return json.dumps(lead, separators=(',', ':'), ensure_ascii=False)


def conversation_of(body: dict[str, Any]) -> list[str]:
    """The request's messages after the instructions, each as compact JSON."""
    messages = body.get('messages') or []
    start = 0
    while start < len(messages) and messages[start].get('role') in INSTRUCTION_ROLES:
        start += 1
    return [json.dumps(m, separators=(',', ':'), ensure_ascii=False) for m in messages[start:]]


class RecordingServer:
    """The server (see the module docstring); `base_url` is what `OpenAIProvider(base_url=...)` takes."""

    def __init__(self, script: Sequence[Turn] = ()) -> None:
        self.script: list[Turn] = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, 'enter the server first'
        return f'http://{HOST}:{self._server.server_address[1]}/v1'

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            n = len(self.requests)
            script = list(self.script)
        done = sum(1 for m in body.get('messages') or [] if m.get('role') == 'assistant')
        turn = script[done] if done < len(script) else 'done'
        if isinstance(turn, str):
            reply = openai_reply(None, n)
            reply['choices'][0]['message']['content'] = turn
            return reply
        name, args = turn
        return openai_reply({'tool': name, 'args': args}, n)

    def __enter__(self) -> RecordingServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)))
                if self.path.split('?', 1)[0].endswith('/chat/completions'):
                    status, payload = 200, owner._answer(body)
                else:
                    status, payload = 404, {'error': {'message': f'no route {self.path}', 'type': 'not_found'}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
