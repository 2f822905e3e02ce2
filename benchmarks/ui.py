"""Console output shared by the suite: one rich console and a progress display."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

console = Console(stderr=False, highlight=False)


def make_progress(*, transient: bool = False) -> Progress:
    """A progress display with spinner, bar, counts and elapsed time."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=30),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
        refresh_per_second=4,
    )


@contextmanager
def progress_or(progress: Progress | None) -> Iterator[Progress]:
    """Use the given progress display, or open (and close) a new one."""
    if progress is not None:
        yield progress
        return
    with make_progress() as own:
        yield own
