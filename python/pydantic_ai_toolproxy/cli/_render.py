"""Output: rich tables on a terminal, plain aligned text when piped, JSON with `--json`."""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ('Column', 'Output', 'clip', 'error', 'num', 'plural')


def num(value: int) -> str:
    """An integer with thousands separators: `1,234`."""
    return f'{value:,}'


def plural(count: int, word: str) -> str:
    """`1 group`, `2 groups`, `1,853 tools` (English `-s` plurals only)."""
    return f'{count:,} {word}{"" if count == 1 else "s"}'


_LINE_BREAKING = frozenset(('Cc', 'Zl', 'Zp'))
"""Unicode categories that move the cursor or end a line: control characters and line/paragraph separators."""


def one_line(text: str) -> str:
    """`text` with each control character and line or paragraph separator shown as its Python escape (`\\n`,
    `\\x1b`, `\\u2028`), so a cell of data (a tool or group name) can neither break a table row nor move the cursor.
    Other text, emoji joiners included, is kept as it is."""
    if text.isprintable():
        return text
    return ''.join(repr(char)[1:-1] if unicodedata.category(char) in _LINE_BREAKING else char for char in text)


def clip(text: str | None, width: int) -> str:
    """`text` on one line (whitespace collapsed), cut to `width` characters with a trailing `…`."""
    flat = ' '.join((text or '').split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + '…'


@dataclass(frozen=True)
class Column:
    """A table column.

    Attributes:
        header: Column title.
        justify: Cell alignment.
        max_width: Clip cells to this many characters in plain output, and to the space left with `…` on a
            terminal (a description). None keeps cells whole.
        wrap: On a terminal, wrap long cells over several lines instead of keeping them whole (prose).
    """

    header: str
    justify: Literal['left', 'right'] = 'left'
    max_width: int | None = None
    wrap: bool = False


class Output:
    """Where a command writes its result (stdout); errors go to stderr.

    `as_json` prints JSON documents only. Otherwise output is rich on a terminal (as rich decides, so
    `NO_COLOR`, `TTY_COMPATIBLE` and friends apply) and plain text without escape codes when piped.
    `before_write` runs before anything is written, to stdout or (`error`) stderr: the CLI passes
    `Progress.close`, so no live display is drawn over the result.
    """

    def __init__(
        self, as_json: bool, stream: TextIO | None = None, before_write: Callable[[], None] | None = None
    ) -> None:
        self.stream = stream or sys.stdout
        self.as_json = as_json
        self.console = Console(file=self.stream, highlight=False)
        self.rich = not as_json and self.console.is_terminal
        self._before_write = before_write

    def _start(self) -> None:
        if self._before_write is not None:
            self._before_write()

    def json(self, document: Any) -> None:
        """Print `document` as indented JSON (non-ASCII unescaped)."""
        self._start()
        self.stream.write(json.dumps(document, indent=2, ensure_ascii=False) + '\n')

    def raw(self, text: str) -> None:
        """Print `text` exactly as given, plus a newline."""
        self._start()
        self.stream.write(text + '\n')

    def error(self, message: str) -> None:
        """Print `toolproxy: error: message` to stderr."""
        self._start()
        error(message)

    def warning(self, message: str) -> None:
        """Print `toolproxy: warning: message` to stderr (the result still follows on stdout)."""
        self._start()
        sys.stderr.write(f'toolproxy: warning: {message}\n')

    def line(self, text: str = '', style: str | None = None) -> None:
        """Print one line of text (`style` applies on a terminal only; `[` is never markup)."""
        self._start()
        if self.rich:
            self.console.print(text, style=style, markup=False, soft_wrap=True)
        else:
            self.stream.write(text + '\n')

    def table(self, columns: list[Column], rows: list[list[str]], title: str | None = None) -> None:
        """Print a table; plain output pads columns with two spaces and clips cells to `max_width`. Prose cells (a
        column with `max_width` or `wrap`) have their whitespace collapsed; control characters and line separators left
        in any cell are shown escaped (`one_line`)."""
        self._start()
        rows = [
            [
                one_line(' '.join(cell.split()) if col.max_width is not None or col.wrap else cell)
                for col, cell in zip(columns, row)
            ]
            for row in rows
        ]
        if self.rich:
            self._rich_table(columns, rows, title)
            return
        if title:
            self.stream.write(title + '\n')
        cells = [[col.header for col in columns]] + [
            [clip(cell, col.max_width) if col.max_width else cell for col, cell in zip(columns, row)] for row in rows
        ]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        for r in cells:
            padded = [
                cell.rjust(widths[i]) if columns[i].justify == 'right' else cell.ljust(widths[i])
                for i, cell in enumerate(r)
            ]
            self.stream.write('  '.join(padded).rstrip() + '\n')

    def _rich_table(self, columns: list[Column], rows: list[list[str]], title: str | None) -> None:
        widths = [max([len(col.header), *(len(row[i]) for row in rows)]) for i, col in enumerate(columns)]
        fixed = sum(w + 3 for w, col in zip(widths, columns) if col.max_width is None and not col.wrap)
        room = max(self.console.width - fixed - 3, 12)  # what a clipped column may use on this terminal
        table = Table(
            title=Text(title) if title else None,
            title_justify='left',
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
        )
        for i, col in enumerate(columns):
            if col.wrap:
                table.add_column(col.header, justify=col.justify, overflow='fold', ratio=1)
            else:
                width = min(widths[i], room, col.max_width) if col.max_width is not None else widths[i]
                table.add_column(col.header, justify=col.justify, no_wrap=True, min_width=width)
        for row in rows:
            cells = [
                clip(cell, min(room, col.max_width)) if col.max_width is not None else cell
                for col, cell in zip(columns, row)
            ]
            table.add_row(*(Text(cell) for cell in cells))  # cells are data, never markup
        self.console.print(table)


def error(message: str) -> None:
    """Print `toolproxy: error: message` to stderr."""
    sys.stderr.write(f'toolproxy: error: {message}\n')
