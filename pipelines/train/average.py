"""`lfcli average`: the mean of LoRA adapters trained on from one start (a "model soup",
Wortsman et al. 2022).

Runs that continue one adapter (`lfcli finetune -m ADAPTER`) stay near one another, and the
mean of their weights often scores better than each of them: the errors of one run are not
those of the other. The adapters must share their base, rank, alpha, layers and head, and the
head's labels or coreference settings; the mean is taken tensor by tensor (the LoRA A and B
matrices each, so the update is close to, not exactly, the mean of the updates) in float32
and written as an adapter again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from lfcli.models.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS

from ..errors import InputError, UsageError
from .finetune import not_an_adapter, refuse_existing

# What must agree between the adapters (adapter_config.json): the same base, rank and layers.
SHARED = ("base_model_name_or_path", "r", "lora_alpha", "target_modules", "modules_to_save")
# What must agree between their models (config.json): the head, its labels, and the
# coreference head's sizes and decoding settings (the "coref" block), which the mean's one
# config.json could not hold two of.
SAME_MODEL = {"architectures": "head differs", "id2label": "labels differ", "coref": "coreference settings differ"}


def average_adapters(folders: list[str], out: str, force: bool = False) -> Path:
    """Write to `out` the mean of the adapter folders' weights, with the first folder's
    config and tokenizer files; its config.json names the averaged folders."""
    if len(folders) < 2:
        raise UsageError("lfcli average needs at least two adapter folders")
    sources, target = [Path(f) for f in folders], Path(out)
    refuse_existing(target, force)
    for folder in sources:  # --force must never remove an input
        if target.resolve() == folder.resolve() or target.resolve() in folder.resolve().parents:
            raise UsageError(f"-o {out} holds the adapter {folder}; write the mean to another folder")
    for folder in sources:
        problem = not_an_adapter(folder, "average")
        if problem:
            raise InputError(problem)
    adapters = [_read_json(f / ADAPTER_CONFIG) for f in sources]
    models = [_read_json(f / "config.json") for f in sources]
    for folder, adapter, model in zip(sources[1:], adapters[1:], models[1:]):
        differ = [k for k in SHARED if adapter.get(k) != adapters[0].get(k)]
        if differ:
            raise InputError(f"{folder}: its adapter differs from {sources[0]}'s in {', '.join(differ)}; "
                             "only adapters of one base, rank and layers average")
        for key, what in SAME_MODEL.items():
            if model.get(key) != models[0].get(key):
                difference = _difference(models[0].get(key), model.get(key))
                raise InputError(f"{folder}: its {what} from {sources[0]}'s ({difference}); "
                                 "only adapters of one head, labels and settings average")
    weights = [_read_weights(f / ADAPTER_WEIGHTS) for f in sources]
    for folder, tensors in zip(sources[1:], weights[1:]):
        if tensors.keys() != weights[0].keys() or any(tensors[k].shape != v.shape for k, v in weights[0].items()):
            raise InputError(f"{folder}: its weights are not those of {sources[0]} (other layers or shapes)")
    mean = {k: (sum(w[k].float() for w in weights) / len(weights)).to(v.dtype).contiguous()
            for k, v in weights[0].items()}

    # Replace only what this writes: the first adapter's config and tokenizer files, the mean.
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(sources[0], target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("train_state", "metrics.jsonl", "training_summary.json"))
    save_file(mean, str(target / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    # The first run's training note would describe that run alone: the mean names its runs
    # instead (each one's note is in its own folder). The base it is over stays, to load it.
    block = {k: v for k, v in (models[0].get("lfcli") or {}).items() if k != "finetune"}
    block["average"] = {"runs": [str(f) for f in folders],
                        "note": f"the mean of these {len(folders)} adapters' weights (lfcli average)"}
    (target / "config.json").write_text(json.dumps({**models[0], "lfcli": block}, indent=2) + "\n", encoding="utf-8")
    return target


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable ({exc})") from None


def _read_weights(path: Path) -> dict:
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise InputError(f"{path}: unreadable ({exc})") from None


def _difference(first, other) -> str:
    """Two config values' difference in brief: the keys where two dicts differ, else both values."""
    if isinstance(first, dict) and isinstance(other, dict):
        keys = sorted(first.keys() | other.keys(), key=str)
        return ", ".join(f"{k}: {first.get(k)} vs {other.get(k)}" for k in keys if first.get(k) != other.get(k))
    return f"{first} vs {other}"
