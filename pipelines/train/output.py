"""A training run's output folder, the same for every training command: which folders a run
may write into (check_output), what --force removes (clear_output), and how the best model is
written so that a stop midway never leaves half a model (keep_best)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Sequence

from ..errors import UsageError
from ..view.curves import CURVE_FILE, METRICS_FILE
from .checkpoint import STATE_DIR

SUMMARY_FILE = "training_summary.json"


def check_output(output: Path, model_folder: Path, resume: bool, force: bool, command: str) -> None:
    """Refuse an output folder a run must not write into: a file, the base model's own
    folder, or an earlier run's folder without --resume or --force."""
    if resume and force:
        raise UsageError("--resume and --force contradict each other; pick one")
    if output.exists() and not output.is_dir():
        raise UsageError(f"{output}: exists and is not a folder; the output of {command} is a model folder")
    try:
        same = output.exists() and output.resolve() == Path(model_folder).resolve()
    except OSError:
        same = False
    if same:
        raise UsageError(f"{output}: is the model folder itself; write the trained model to another folder")
    if output.is_dir() and any(output.iterdir()) and not (resume or force):
        raise UsageError(f"{output}: exists and is not empty; pass --resume to continue the run there or --force to start over")


def clear_output(output: Path, files: Sequence[str]) -> None:
    """--force: remove what an earlier run wrote there (its `files`, the trainer's own files
    and folders), and nothing else."""
    if not output.is_dir():
        return
    for child in output.iterdir():
        if child.is_file() and child.name in (*files, METRICS_FILE, SUMMARY_FILE, CURVE_FILE):
            child.unlink()
        elif child.is_dir() and child.name in (STATE_DIR, f".tmp-{STATE_DIR}", ".tmp-best"):
            shutil.rmtree(child, ignore_errors=True)


def keep_best(output: Path, save: Callable[[Path], None]) -> None:
    """Write the model into the output folder (`save(folder)` writes it): into a temporary
    folder first, then each file moved over the last best's, so a stop midway never leaves
    half a model."""
    tmp = output / ".tmp-best"
    shutil.rmtree(tmp, ignore_errors=True)
    save(tmp)
    for child in tmp.iterdir():
        target = output / child.name
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(child, target)
    tmp.rmdir()
