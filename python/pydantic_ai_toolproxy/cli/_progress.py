"""Progress on stderr while sources load and probes run: a rich spinner per step on a terminal, silent otherwise.

The display is transient: `close()` erases it, and the CLI calls that before it prints any result or error
(`Output(before_write=progress.close)`), so a terminal ends with exactly what piped output holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress as RichProgress
from rich.progress import SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

__all__ = ('Progress',)


class Step:
    """A running step; `done(text)` replaces its label with the outcome (e.g. `notes: 6 tools`)."""

    def __init__(self, owner: Progress, task: int | None) -> None:
        self._owner = owner
        self._task = task

    def done(self, text: str) -> None:
        """Show `text` with a check mark in place of the step's label (nothing once the display is closed)."""
        progress = self._owner._progress
        if progress is not None and self._task is not None:
            progress.update(TaskID(self._task), description=f'[green]✓[/] {escape(text)}', completed=1, refresh=True)


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

    @contextmanager
    def step(self, label: str) -> Iterator[Step]:
        """A spinner labelled `label` until the block ends; stays on screen with its outcome until `close()`."""
        progress = self._progress
        task = progress.add_task(escape(label), total=1) if progress is not None else None
        if progress is not None:
            progress.refresh()  # draw the label now: a step quicker than the refresh period is still shown
        step = Step(self, task)
        try:
            yield step
        finally:
            if self._progress is not None and task is not None:
                self._progress.update(task, completed=1)
