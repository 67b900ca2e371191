"""Progress bars on the terminal for long runtime jobs: the command line's view of a knowledge index build."""

from __future__ import annotations

import time
from collections.abc import Callable

# The embedding of a knowledge index gets a bar past this many texts, or once it has taken this long.
PROGRESS_MIN_TEXTS = 40
PROGRESS_MIN_SECONDS = 1.0


class IndexProgressBar:
    """A progress callback for `KnowledgeIndex.build` (see retrieval.progress) that shows the embedding
    stage as a rich bar on stderr, once the job is big or slow, and only when stderr is a terminal."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._bar = None
        self._task = None
        self._started = 0.0
        self._wanted = False

    def __call__(self, stage: str, done: int, total: int, label: str) -> None:
        if stage != "embed":
            if stage == "done":  # the build is over, whatever happened to the embedding
                self.close()
            return
        if done == 0:  # a new embedding job
            self.close()
            self._started = self._clock()
            self._wanted = True
        if self._bar is None and self._wanted and done < total and (
            total > PROGRESS_MIN_TEXTS or self._clock() - self._started > PROGRESS_MIN_SECONDS
        ):
            self._wanted = False
            self._bar, self._task = _start_progress_bar(label, total, done)
        if self._bar is not None:
            self._bar.update(self._task, completed=done)
            if done >= total:
                self.close()

    def close(self) -> None:
        """Take the bar off the screen, if one is showing."""
        bar, self._bar, self._task = self._bar, None, None
        self._wanted = False
        if bar is not None:
            bar.stop()


def _start_progress_bar(label: str, total: int, completed: int):
    """A started rich progress bar on stderr and its task, or (None, None) when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        return None, None
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    description = f"Embedding the documents of {label}" if label else "Embedding the documents"
    task = bar.add_task(description, total=total, completed=completed)
    bar.start()
    return bar, task
