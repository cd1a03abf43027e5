"""Progress on stderr for long CLI work (import, export, extraction, log-tail backfill,
consolidation, benchmarks).

A rich bar when stderr is a terminal and the command is not printing JSON; nothing at all
otherwise, so a script, a pipe or `--json` gets only the result. rich is imported only when a bar
is shown (every `tap` command imports the CLI modules that import this one).
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def shown(*, quiet: bool = False) -> bool:
    """Whether progress should be drawn: not asked to be quiet, and stderr is a terminal."""
    return not quiet and sys.stderr.isatty()


class Bar:
    """One progress line: `with Bar("importing", total=n, quiet=as_json) as bar: bar.advance(k)`.

    `total=None` draws a pulsing bar with the count; `in_bytes` counts bytes (shown as kB / MB);
    `counted=False` draws a spinner and the time elapsed only, for work that reports no steps (a
    request the server answers when it is done). Outside a terminal every method does nothing.
    """

    def __init__(
        self,
        description: str,
        total: float | None = None,
        *,
        quiet: bool = False,
        in_bytes: bool = False,
        counted: bool = True,
    ) -> None:
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if not shown(quiet=quiet):
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns: list[ProgressColumn] = [SpinnerColumn(), TimeElapsedColumn()]
        if counted:
            count = DownloadColumn() if in_bytes else MofNCompleteColumn()
            columns = [BarColumn(), count, TimeElapsedColumn(), TimeRemainingColumn()]
        self._progress = Progress(TextColumn("{task.description}"), *columns, console=Console(stderr=True))
        self._task = self._progress.add_task(description, total=total)

    @property
    def active(self) -> bool:
        """True when the bar is drawn."""
        return self._progress is not None

    def advance(self, steps: float = 1) -> None:
        """Move the bar forward."""
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, steps)

    def update(self, *, completed: float | None = None, total: float | None = None) -> None:
        """Set where the bar is, or its total."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=completed, total=total)

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
