"""What `-m` may name, checked on the command line before any input is read: a name that is no
tier, bundled model or folder is bad usage (exit 2), and its message lists what `-m` takes, the
tiers and the task's bundled models beside the encoders; a path that is not there is bad input
(exit 1), like any missing path. A task run with a model that lacks the task's head (classify
without --labels on a bare encoder) is bad usage too: the command asked the model for
something it cannot do.
"""

from __future__ import annotations

import os
from pathlib import Path

from lfcli.pipelines import registry
from lfcli.pipelines.errors import InputError, UsageError


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or text.startswith((".", "~"))


def takes(task: str | None, tiers: bool = True) -> str:
    """What -m takes, in words, for `task`'s command (None: any task's)."""
    from lfcli.models.bundled import BUNDLED, TASK_MODELS, TIERS  # lazy: torch, not for --help

    trained = registry.get(task).models if task is not None else tuple(TASK_MODELS)
    tier = f"a tier ({', '.join(TIERS)}), " if tiers else ""
    models = ", ".join([*BUNDLED, *trained])
    return f"{tier}a bundled model ({models}) or a checkpoint folder"


def check_model(model: str | None, task: str | None = None, *, tiers: bool = True, command: str = "") -> None:
    """Refuse a -m that names nothing here: UsageError for an unknown name (the names -m takes
    said), InputError for a path that is not a folder. `tiers`: whether the command takes a
    tier (the task commands do; finetune and pretrain-continue start from a model)."""
    from lfcli.models.bundled import BUNDLED, TASK_MODELS, TIERS  # lazy: torch, not for --help

    if model is None or model in BUNDLED or model in TASK_MODELS or (tiers and model in TIERS):
        return
    if model in TIERS:
        raise UsageError(f"-m {model}: {command or 'this command'} starts from a model, not a tier (the {model} "
                         f"tier's encoder is {TIERS[model]}); -m takes {takes(task, tiers=False)}")
    path = Path(model).expanduser()
    if path.is_dir():
        return
    if _looks_like_path(model) or path.exists():
        raise InputError(f"-m {model}: no such checkpoint folder; -m takes {takes(task, tiers)}")
    raise UsageError(f"-m {model}: unknown model; -m takes {takes(task, tiers)} (see `lfcli models`)")


def check_head(task: str, name: str, options: dict, given: str | None = None) -> None:
    """Refuse (UsageError) a job whose model `name` lacks the head its task needs with these
    options, saying how to get one (the task's missing_head): read from the weights' names,
    before any document is read. `given`: the -m given (None: `name` is the task's default)."""
    from lfcli.models.bundled import resolve_model  # lazy: torch
    from lfcli.models.checkpoint import available_heads
    from lfcli.models.heads import HEADS
    from lfcli.pipelines.infer.catalog import announce_build
    from lfcli.pipelines.infer.runner import model_class

    needed = model_class(task, options)
    head = HEADS.get(needed)
    if head is None:
        return
    announce_build(name)
    try:
        present = available_heads(resolve_model(name))
    except Exception:  # noqa: BLE001 - an unreadable checkpoint: its load says what is wrong with it
        return
    if needed not in present:
        spec = registry.get(task)
        which = f"-m {given}: this model" if given is not None else f"the default model, {name},"
        raise UsageError(f"{which} has no {head.what}, which {task} needs"
                         + (f". {spec.missing_head}" if spec.missing_head else ""))
