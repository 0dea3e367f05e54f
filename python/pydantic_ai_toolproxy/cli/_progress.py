"""Progress on stderr while sources load and probes run: a rich spinner per step on a terminal, silent otherwise.

A counted step (`Progress.step(..., total=N)`, e.g. `toolproxy embed`'s tools) also shows a bar and `done/total`. Warnings the
package logs (`pydantic_ai_toolproxy` logger) are printed above the display (`Progress.warn`).

The display is transient: `close()` erases it, and the CLI calls that before it prints any result or error
(`Output(before_write=progress.close)`), so a terminal ends with exactly what piped output holds.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Progress as RichProgress
from rich.table import Table
from rich.text import Text

__all__ = ('Progress', 'WarningHandler')


class _OnlyCounted(ProgressColumn):
    """A bar and `done/total`, for counted steps only (`Progress.step(..., total=N)`); nothing for a plain step."""

    def __init__(self) -> None:
        super().__init__()
        self._bar = BarColumn(bar_width=30)
        self._count = MofNCompleteColumn()

    def render(self, task: Task) -> RenderableType:
        if not task.fields.get('counted'):
            return Text('')
        row = Table.grid(padding=(0, 1))
        row.add_row(self._bar.render(task), self._count.render(task))
        return row


class Step:
    """A running step; `done(text)` replaces its label with the outcome (e.g. `notes: 6 tools`)."""

    def __init__(self, owner: Progress, task: int | None) -> None:
        self._owner = owner
        self._task = task

    def update(self, done: int, total: int) -> None:
        """Move a counted step's bar to `done` of `total` (nothing for a plain step or a closed display)."""
        progress = self._owner._progress
        if progress is not None and self._task is not None:
            progress.update(TaskID(self._task), completed=done, total=max(total, 1))

    def done(self, text: str) -> None:
        """Show `text` with a check mark in place of the step's label (nothing once the display is closed)."""
        progress = self._owner._progress
        if progress is not None and self._task is not None:
            total = next((t.total for t in progress.tasks if t.id == self._task), 1)
            progress.update(
                TaskID(self._task), description=f'[green]✓[/] {escape(text)}', completed=total, refresh=True
            )


class Progress:
    """Shows each step of loading and probing on stderr, when stderr is a terminal (as rich decides).

    Nothing is written when stderr is piped or redirected, so logs and `--json` consumers see no noise.
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = self.console.is_terminal
        self._progress: RichProgress | None = None

    def __enter__(self) -> Progress:
        if self.enabled:
            self._progress = RichProgress(
                SpinnerColumn(finished_text=' '),
                TextColumn('{task.description}'),
                _OnlyCounted(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
                # Leave sys.stdout and sys.stderr alone: results go to the real stdout, never through the display.
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Erase the display from the terminal and show no further steps; idempotent.

        Called before the first result line or error is printed: rich redraws a live display by moving the
        cursor up over its own lines, so anything written below it while it runs would be erased.
        """
        if self._progress is not None:
            progress, self._progress = self._progress, None
            progress.__exit__(None, None, None)

    def warn(self, message: str) -> None:
        """Print `toolproxy: warning: message` on stderr, above the display while it is shown."""
        if self._progress is not None:
            self._progress.console.print(f'toolproxy: warning: {message}', markup=False, highlight=False)
        else:
            sys.stderr.write(f'toolproxy: warning: {message}\n')

    @contextmanager
    def step(self, label: str, *, total: int | None = None) -> Iterator[Step]:
        """A spinner labelled `label` until the block ends; stays on screen with its outcome until `close()`.

        With `total`, a counted step: a bar and `done/total` follow the label (`Step.update` moves them).
        """
        progress = self._progress
        task = (
            progress.add_task(escape(label), total=max(total or 1, 1), counted=total is not None)
            if progress is not None
            else None
        )
        if progress is not None:
            progress.refresh()  # draw the label now: a step quicker than the refresh period is still shown
        step = Step(self, task)
        try:
            yield step
        finally:
            if self._progress is not None and task is not None and total is None:
                self._progress.update(task, completed=1)


class WarningHandler(logging.Handler):
    """Shows the package's logged warnings (`pydantic_ai_toolproxy` logger: a cache that cannot be used, an
    embedder that failed) as `toolproxy: warning: ...` lines through `Progress.warn`."""

    def __init__(self, progress: Progress) -> None:
        super().__init__(logging.WARNING)
        self.progress = progress
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        self.progress.warn(message)
