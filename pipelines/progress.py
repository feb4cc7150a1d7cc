"""Progress and notes on stderr: documents done, docs/s and tokens/s (a live line, only on a
terminal), and one-line notes about what lfcli decided for the user."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

from .wording import plural


def note(message: str) -> None:
    """One line on stderr: something the user should know, that is not an error."""
    print(f"lfcli: note: {message}", file=sys.stderr, flush=True)


@contextmanager
def progress_reporter(quiet: bool = False, stream=None):
    """Yield a callback taking runner.Stats; draws a rich progress line when `stream`
    (default stderr) is a terminal and not quiet, else does nothing."""
    stream = stream if stream is not None else sys.stderr
    if quiet or not stream.isatty():
        yield lambda stats: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.completed} docs"),
        TextColumn("{task.fields[rates]}"),
        TextColumn("{task.fields[errors]}"),
        TimeElapsedColumn(),
        console=Console(file=stream),
        transient=False,
    )
    with progress:
        task = progress.add_task("lfcli", total=None, rates="", errors="")
        last = [0.0]

        def report(stats):
            now = time.perf_counter()
            if now - last[0] < 0.1:  # redraw at most 10 times a second
                progress.update(task, completed=stats.docs)
                return
            last[0] = now
            dt = max(now - stats.started, 1e-9)
            progress.update(
                task,
                completed=stats.docs,
                # failed documents cost next to nothing: the rates count the others only
                rates=f"{(stats.docs - stats.errors) / dt:.2f} docs/s  {stats.tokens / dt:,.0f} tokens/s",
                errors=plural(stats.errors, "error") if stats.errors else "",
            )

        yield report
