"""The training progress bar on stderr: a rich bar on a terminal (update, loss, tokens/s,
ETA); off the terminal the caller's log prints plain lines instead."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


class ProgressBar:
    """A rich bar on stderr (terminal only): update, loss, tokens/s, ETA."""

    def __init__(self, enabled: bool, total: int, done: int):
        self.first_step = done
        self.bar = None
        if enabled and sys.stderr.isatty():
            self.bar = Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                TextColumn("{task.fields[info]}"), TimeRemainingColumn(), transient=True,
                                console=Console(file=sys.stderr))  # stdout is for the command's data
            self.bar.start()
            self.task = self.bar.add_task("train", total=total, completed=done, info="")

    def update(self, record: dict) -> None:
        if self.bar is not None:
            info = f"loss {record['loss']:.4f}  {record['tokens_per_s']:,.0f} tokens/s"
            self.bar.update(self.task, completed=record["step"], info=info)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
