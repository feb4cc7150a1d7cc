"""Progress and notes on stderr: documents done, and within long documents the windows run,
docs/s and tokens/s (a live line, only on a terminal), and one-line notes about what lfcli
decided for the user."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from .wording import plural


def note(message: str) -> None:
    """One line on stderr: something the user should know, that is not an error."""
    print(f"lfcli: note: {message}", file=sys.stderr, flush=True)


def record_line(record: dict, mlm: bool = False) -> str | None:
    """The stderr line of one of the trainer's records (metrics.jsonl's events), in the words
    of `lfcli finetune`, or of `lfcli pretrain-continue` with `mlm` (whose evaluations carry
    "when" and bits per token, and whose checkpoints carry their path); None for an event
    that has no line. Which events to show is the caller's choice."""
    event = record["event"]
    if event == "message":
        return f"lfcli: {record['message']}"
    if event == "eval" and mlm:
        return f"lfcli: held-out MLM loss {record['when']}: {record['loss']:.4f} ({record['bpt']:.4f} bits/token)"
    if event == "eval":
        shown = {k: v for k, v in record.items() if k not in ("event", "step", "epoch", "best") and isinstance(v, (int, float))}
        figures = "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in shown.items())
        return (f"lfcli: eval at update {record['step']} (epoch {record['epoch']}): {figures}"
                f"{'  * best, saved' if record['best'] else ''}")
    if event == "checkpoint" and mlm:
        return f"lfcli: checkpoint {record['path']}"
    if event == "step" and mlm:
        return (f"lfcli: step {record['step']}/{record['max_steps']} loss {record['loss']:.4f} "
                f"lr {record['lr']:.2e} {record['tokens_per_s']:,.0f} tokens/s")
    if event == "step":
        eta = record["eta_s"]
        return (f"lfcli: update {record['step']}/{record['max_steps']} loss {record['loss']:.4f} lr {record['lr']:.2e} "
                f"{record['tokens_per_s']:,.0f} tokens/s, ETA {eta // 60:.0f} min {eta % 60:.0f} s")
    return None


def live_words(stats, now: float) -> tuple[str, str]:
    """(what is done, the rates) for the live line, from runner.Stats: the documents done and,
    while windows of documents already read are still to run, how many of them have run, so a
    single long document shows its progress before its row is out ("0 docs  120/800 windows
    (15%)"); docs/s and tokens/s, the tokens those of the windows run (each document token
    once), failed documents left out of docs/s (they cost next to nothing)."""
    unit = getattr(stats, "unit", "doc")  # qa with several questions: a row is a question
    done = plural(stats.docs, unit)
    windows, queued = getattr(stats, "windows", 0), getattr(stats, "windows_queued", 0)
    if queued > windows:
        done += f"  {windows:,}/{queued:,} windows ({100 * windows // queued}%)"
    dt = max(now - stats.started, 1e-9)
    tokens = max(stats.tokens, getattr(stats, "tokens_run", 0))
    return done, f"{(stats.docs - stats.errors) / dt:.2f} {unit}s/s  {tokens / dt:,.0f} tokens/s"


@contextmanager
def progress_reporter(quiet: bool = False, stream=None, total: int | None = None):
    """Yield a callback taking runner.Stats (called after each batch of windows and each
    document); draws a rich progress line (live_words) when `stream` (default stderr) is a
    terminal and not quiet, else does nothing. `total`: the rows the job will write, when
    known (io/counts.py): a bar, "done/total" and the time left."""
    stream = stream if stream is not None else sys.stderr
    if quiet or not stream.isatty():
        yield lambda stats: None
        return

    known = [BarColumn(bar_width=24), MofNCompleteColumn(), TextColumn("ETA"), TimeRemainingColumn()] if total else []
    progress = Progress(
        SpinnerColumn(),
        *known,
        TextColumn("{task.fields[done]}"),
        TextColumn("{task.fields[rates]}"),
        TextColumn("{task.fields[errors]}"),
        TimeElapsedColumn(),
        console=Console(file=stream),
        transient=False,
    )
    with progress:
        task = progress.add_task("lfcli", total=total or None, done="0 docs", rates="", errors="")
        last = [0.0]

        def report(stats):
            now = time.perf_counter()
            done, rates = live_words(stats, now)
            if now - last[0] < 0.1:  # new rates at most 10 times a second
                progress.update(task, completed=stats.docs, done=done)
                return
            last[0] = now
            progress.update(task, completed=stats.docs, done=done, rates=rates,
                            errors=plural(stats.errors, "error") if stats.errors else "")

        yield report
