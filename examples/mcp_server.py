"""A small, deterministic MCP server ("notes & weather") for demos and tests.

Run it over stdio::

    python examples/mcp_server.py

It is built on the official ``mcp`` SDK (2.x, ``mcp.server.mcpserver.MCPServer``,
formerly ``FastMCP``) and exposes:

* notes, kept in memory per server process: ``add_note``, ``list_notes``,
  ``get_note``, ``delete_note``;
* weather helpers: ``convert_temperature`` and ``get_forecast`` (fake but
  deterministic data derived from the city name);
* test helpers: ``slow_echo`` (sleeps before answering) and ``fail`` (always
  raises a tool error);
* failure-mode helpers: ``crash_server`` (the server process exits in the middle
  of the call, after recording a note), ``never_answer`` (the call never
  completes; a client timeout is the only way out) and ``server_pid`` (the
  process id, to tell server processes apart).

Failure modes useful for tests (flag or environment variable):

* ``--no-test-tools`` / ``EXAMPLE_MCP_NO_TEST_TOOLS=1``: do not register
  ``slow_echo``, ``fail`` and the failure-mode helpers;
* ``--startup-delay SECONDS`` / ``EXAMPLE_MCP_STARTUP_DELAY``: sleep before
  serving (simulates a slow server start);
* ``--fail-startup`` / ``EXAMPLE_MCP_FAIL_STARTUP=1``: exit with status 1
  before serving (simulates a server that cannot start).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
import time
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from typing_extensions import TypedDict

INSTRUCTIONS = (
    'Notes & weather demo server. Use add_note/list_notes/get_note/delete_note to manage '
    'short text notes (stored in memory, lost on restart). Use convert_temperature for unit '
    'conversions and get_forecast for a (fake, deterministic) daily weather forecast.'
)

TempUnit = Literal['celsius', 'fahrenheit', 'kelvin']
_CONDITIONS = ('sunny', 'partly cloudy', 'cloudy', 'fog', 'light rain', 'rain', 'thunderstorm', 'snow')
_WET_FROM = 4  # conditions from this index on have precipitation


class Note(TypedDict):
    """A stored note."""

    id: int
    title: str
    body: str


class ForecastDay(TypedDict):
    """One day of a forecast."""

    day: int
    condition: str
    high_c: float
    low_c: float
    precipitation_mm: float


def _env_flag(name: str) -> bool:
    return os.environ.get(name, '').strip().lower() in {'1', 'true', 'yes', 'on'}


def build_server(*, test_tools: bool = True) -> MCPServer:
    """Build the server; ``test_tools`` controls whether the test and failure-mode tools exist."""
    server = MCPServer(name='notes-weather', version='0.1.0', instructions=INSTRUCTIONS, log_level='WARNING')
    notes: dict[int, Note] = {}
    next_id = [1]

    @server.tool()
    def add_note(
        title: Annotated[str, Field(description='Short title of the note.')],
        body: Annotated[str, Field(description='Text content of the note.')],
    ) -> Note:
        """Create a new note and return it, including its assigned numeric id."""
        note = Note(id=next_id[0], title=title, body=body)
        notes[note['id']] = note
        next_id[0] += 1
        return note

    @server.tool()
    def list_notes() -> list[Note]:
        """List all stored notes, oldest first."""
        return [notes[k] for k in sorted(notes)]

    @server.tool()
    def get_note(note_id: Annotated[int, Field(description='Id returned by add_note.')]) -> Note:
        """Return a single note by its id."""
        if note_id not in notes:
            raise ToolError(f'No note with id {note_id}')
        return notes[note_id]

    @server.tool()
    def delete_note(note_id: Annotated[int, Field(description='Id returned by add_note.')]) -> str:
        """Delete a note by its id."""
        if notes.pop(note_id, None) is None:
            raise ToolError(f'No note with id {note_id}')
        return f'Deleted note {note_id}'

    @server.tool()
    def convert_temperature(
        value: Annotated[float, Field(description='Temperature value to convert.')],
        from_unit: Annotated[TempUnit, Field(description='Unit of `value`.')],
        to_unit: Annotated[TempUnit, Field(description='Unit to convert to.')],
    ) -> float:
        """Convert a temperature between celsius, fahrenheit and kelvin (rounded to 2 decimals)."""
        celsius = {'celsius': value, 'fahrenheit': (value - 32) * 5 / 9, 'kelvin': value - 273.15}[from_unit]
        result = {'celsius': celsius, 'fahrenheit': celsius * 9 / 5 + 32, 'kelvin': celsius + 273.15}[to_unit]
        return round(result, 2)

    @server.tool()
    def get_forecast(
        city: Annotated[str, Field(description="City name, e.g. 'Paris'.")],
        days: Annotated[int, Field(ge=1, le=14, description='Number of days (1-14).')] = 3,
    ) -> list[ForecastDay]:
        """Get a daily weather forecast for a city (fake data, deterministic per city and day)."""
        forecast: list[ForecastDay] = []
        for day in range(1, days + 1):
            digest = hashlib.sha256(f'{city.strip().lower()}:{day}'.encode()).digest()
            high = round(-5 + digest[0] / 255 * 40, 1)
            index = digest[1] % len(_CONDITIONS)
            condition = 'rain' if _CONDITIONS[index] == 'snow' and high > 2 else _CONDITIONS[index]
            forecast.append(
                ForecastDay(
                    day=day,
                    condition=condition,
                    high_c=high,
                    low_c=round(high - 3 - digest[2] / 255 * 10, 1),
                    precipitation_mm=round(digest[3] / 255 * 20, 1) if index >= _WET_FROM else 0.0,
                )
            )
        return forecast

    if test_tools:

        @server.tool()
        async def slow_echo(
            text: Annotated[str, Field(description='Text to echo back.')],
            seconds: Annotated[float, Field(ge=0, description='How long to sleep first.')] = 1.0,
        ) -> str:
            """Sleep for `seconds`, then return `text` unchanged (for timeout/cancellation tests)."""
            await asyncio.sleep(seconds)
            return text

        @server.tool()
        def fail(message: Annotated[str, Field(description='Error message to raise.')] = 'boom') -> str:
            """Always fail with a tool error carrying `message` (for error-handling tests)."""
            raise ToolError(message)

        @server.tool()
        async def crash_server(
            title: Annotated[str, Field(description='Title of the note stored before the crash.')] = 'half-done',
            exit_code: Annotated[int, Field(description='Exit status of the server process.')] = 3,
        ) -> str:
            """Store a note, then terminate the whole server process without answering (a crash mid-call)."""
            note = Note(id=next_id[0], title=title, body='written before the crash')
            notes[note['id']] = note
            next_id[0] += 1
            print(f'mcp_server: crashing mid-call with status {exit_code}', file=sys.stderr, flush=True)
            os._exit(exit_code)

        @server.tool()
        def server_pid() -> int:
            """The operating-system process id of this server (to tell server processes apart in tests)."""
            return os.getpid()

        @server.tool()
        async def never_answer() -> str:
            """Never complete (for client-side timeout tests)."""
            await asyncio.Event().wait()
            return 'unreachable'

    return server


def main(argv: list[str] | None = None) -> None:
    """Parse flags/env vars and serve over stdio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--no-test-tools', action='store_true', default=_env_flag('EXAMPLE_MCP_NO_TEST_TOOLS'))
    parser.add_argument('--startup-delay', type=float, default=float(os.environ.get('EXAMPLE_MCP_STARTUP_DELAY') or 0))
    parser.add_argument('--fail-startup', action='store_true', default=_env_flag('EXAMPLE_MCP_FAIL_STARTUP'))
    args = parser.parse_args(argv)
    if args.startup_delay > 0:
        time.sleep(args.startup_delay)
    if args.fail_startup:
        print('mcp_server: failing on startup as requested', file=sys.stderr)
        sys.exit(1)
    build_server(test_tools=not args.no_test_tools).run('stdio')


if __name__ == '__main__':
    main()
