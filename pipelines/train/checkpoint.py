"""The checkpoint --resume continues from: OUTPUT/train_state/trainer_state.pt holds the
trainable weights, the optimizer, the run's counters and stream position, and every process's
RNG state, so that a resumed run ends with the same weights as one that never stopped."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Callable

import torch

from ..errors import InputError, UsageError
from .distributed import Dist

STATE_DIR = "train_state"
STATE_FILE = "trainer_state.pt"
STATE_VERSION = 1
# Settings a resumed run may change: how an update's examples are split into forward passes
# (memory) changes neither which examples an update takes nor its loss, a sum over them
# divided by their count; only the rounding and the draw of the dropout masks differ.
FREE_SETTINGS = ("micro_tokens",)


def rng_state(device: torch.device) -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def save_state(output: Path, fingerprint: dict, run: dict, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
               dist: Dist) -> None:
    """The checkpoint --resume continues from (written aside, then swapped in): the run's
    `fingerprint` and counters (`run`), every process's RNGs, the trainable weights and the
    optimizer."""
    rngs = dist.gather(rng_state(dist.device))
    if dist.main:
        tmp = output / f".tmp-{STATE_DIR}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        torch.save({
            "version": STATE_VERSION, "fingerprint": fingerprint, "run": run, "rng": rngs,
            "trainable": {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad},
            "optimizer": optimizer.state_dict(),
        }, tmp / STATE_FILE)
        shutil.rmtree(output / STATE_DIR, ignore_errors=True)
        os.replace(tmp, output / STATE_DIR)
    dist.barrier()


def load_state(output: Path, fingerprint: dict, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
               dist: Dist, note: Callable[[str], None] = lambda _: None) -> dict:
    """Resume from the output's checkpoint: the trainable weights into `model`, the optimizer's
    state, this process's RNGs. Refused when the checkpoint's run used other settings than
    `fingerprint` (FREE_SETTINGS may differ: `note` says so). Returns the run's counters as
    saved (`run` of save_state)."""
    path = output / STATE_DIR / STATE_FILE
    saved = torch.load(path, map_location="cpu", weights_only=False)
    if saved.get("version") != STATE_VERSION:
        raise InputError(f"{path}: written by another version of lfcli; cannot resume from it")
    # Both ways: an option recorded only when set (--delta, --freeze-embeddings) differs when
    # the resumed run has it and this one not.
    before = saved["fingerprint"]
    differ = sorted(k for k in set(fingerprint) | set(before) if before.get(k) != fingerprint.get(k))
    for key in [k for k in differ if k in FREE_SETTINGS]:
        differ.remove(key)
        note(f"resumed with {key.replace('_', '-')} {fingerprint.get(key)} (the run had {before.get(key)})")
    if differ:
        raise UsageError(f"{output}: the run there used other settings ({', '.join(differ)}); "
                         "resume with the same data and options, or use --force to start over")
    trainable = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in saved["trainable"].items():
            trainable[name].copy_(value)
    optimizer.load_state_dict(saved["optimizer"])
    set_rng_state(saved["rng"][dist.rank], dist.device)
    return saved["run"]
