"""What every task's training set-up uses (finetune.py's, and each home's train.py setup_TASK):
the Setup it returns, the tokenizer for training windows, the report of skipped records, and
the fingerprint of the training data that `--resume` compares."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from lfcli.models import LongformerConfig
from lfcli.models.model_folders import tokenizer_folder

from ..errors import InputError
from ..infer.tokenize import DocumentTokenizer
from ..wording import plural

MIN_TRAIN_LENGTH = 16  # shortest training window, in tokens


@dataclass
class Setup:
    """What a task's set-up gives finetune(): the trainer task (pipelines/train/loop.py's
    TrainTask), the config changes of a new head (the head itself is the task's
    TaskSpec.architecture), the training windows' length, the fingerprint of the training data
    (--resume compares it) and what the model's config.json notes of the run."""

    task: object
    config_changes: dict | None
    max_length: int
    fingerprint: str
    note: dict


def training_tokenizer(folder: Path, max_length: int | None, default: int):
    """(the model's tokenizer for training windows, their length): `max_length`, else
    `default`, at most the model's positions."""
    limit = LongformerConfig.from_json_file(folder / "config.json").max_tokens
    length = min(max_length or default, limit)
    if length < MIN_TRAIN_LENGTH:  # a --max-length that short is refused before; this is the model's own
        raise InputError(f"{folder}: the model takes {limit} positions; training needs windows of at least "
                         f"{MIN_TRAIN_LENGTH} tokens")
    return DocumentTokenizer.from_folder(tokenizer_folder(folder), length), length


def report_skipped(problems: list[str], what: str, say) -> None:
    """The first five records the reader skipped, and how many more."""
    for p in problems[:5]:
        say(f"skipped {what} {p}")
    if len(problems) > 5:
        say(f"... and {plural(len(problems) - 5, 'more ' + what)} skipped")


def fingerprint_of(parts: list) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode("utf-8")).hexdigest()[:16]
